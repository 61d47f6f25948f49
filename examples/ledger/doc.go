// Package ledger gives a small Postgres-backed money-transfer service: a queue of transfers
// that producers fill and several consumer workers drain exactly once.
//
// It is contested's reference service: the repository's own battery contests it the way an
// adopter would contest theirs (see contract_test.go), so read it as an example as much as a
// component.
//
// # Shape
//
// Four tables, created by [Migrate]:
//
//	accounts           id, balance (never negative)
//	transfer_queue     seq, transfer_id, from, to, amount, acked_at, outcome, worker, batch
//	applied_transfers  transfer_id (primary key), from, to, amount, outcome, turn
//	postings           the journal: one row per transfer that moved money
//
// turn is the decision's place in the ledger's serial order, drawn while the decision holds
// the locks of both accounts; batch is the transaction that acknowledged a queue row. Neither
// is needed to run the ledger: they make its history auditable (replay every decision in turn
// order; check a batch applied its rows in enqueue order).
//
// A producer enqueues a [Transfer] with [Queue.Enqueue]: one INSERT, acknowledged when it
// returns nil. The queue is at-least-once on purpose: a producer that did not hear the answer
// enqueues the same transfer id again, and a broker upstream may deliver a message twice, so
// the queue may hold several rows for one transfer id.
//
// A [Worker] runs several consumers at once. Each claims a batch of rows with
// FOR UPDATE SKIP LOCKED inside a transaction, applies every transfer in enqueue order and
// marks the rows acknowledged (each with what applying it did) in that same transaction, then
// commits. A consumer that dies mid-batch (a
// killed process, a reset connection) leaves nothing behind: its transaction rolls back and
// the rows are claimed again.
//
// Applying a transfer is one SQL statement ([Store.Transfer]): it locks both accounts in id
// order, decides (applied when the source holds at least the amount, else rejected), records
// the transfer id in applied_transfers (the idempotency key, in the same transaction as the
// balance update), moves the money and writes the posting. A transfer id
// already recorded is answered [Duplicate] and moves nothing, so redelivery and retries are
// safe. One statement also means one round trip: a request either reaches the server whole
// or not at all, and an answer lost on the way back leaves a transfer that either committed
// whole or not at all.
//
// # What callers may conclude from an error
//
// [Definite] tells a caller whether an error means "this did not happen" (the connection was
// never made, the server refused the statement) or "unknown" (the request may have committed
// and the answer was lost). On unknown, retry with the same transfer id: the idempotency key
// makes the retry safe and its answer ([Duplicate] or not) settles the question.
//
// # The command
//
// cmd/ledger runs the same code as separate processes (migrate, produce, work); see [Main].
// `ledger web` serves [Web], a server-rendered front whose submissions use the same retry
// protocol: the form's idempotency key is the transfer id.
// It needs no files at run time and builds with CGO_ENABLED=0.
package ledger
