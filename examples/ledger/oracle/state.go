package oracle

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/contested/contested/examples/ledger"
)

// Posting is one row of the ledger's journal.
type Posting struct {
	TransferID, From, To string
	Amount               int64
}

// Decision is one row of applied_transfers: how a transfer id was decided, and when in the
// ledger's serial order (Turn, drawn while the decision held both accounts' locks).
type Decision struct {
	From, To string
	Amount   int64
	Outcome  ledger.Outcome
	Turn     int64
}

// QueueRow is one row of the transfer queue. Batch is the transaction that acknowledged it
// (0 while pending).
type QueueRow struct {
	Seq        int64
	TransferID string
	Acked      bool
	Outcome    string
	Worker     string
	Batch      int64
}

// State is the ledger's tables as read at quiescence, directly (never through a fault).
type State struct {
	Balances map[string]int64
	Postings []Posting
	Decided  map[string]Decision
	Queue    []QueueRow
}

// Load reads the whole ledger in one repeatable-read transaction, so every table is seen at
// the same instant.
func Load(ctx context.Context, conn *pgx.Conn) (State, error) {
	s := State{Balances: map[string]int64{}, Decided: map[string]Decision{}}
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return s, fmt.Errorf("load ledger state: %w", err)
	}
	defer tx.Rollback(ctx)
	var id string
	var n int64
	if err := each(ctx, tx, `SELECT id, balance FROM accounts`, []any{&id, &n}, func() { s.Balances[id] = n }); err != nil {
		return s, err
	}
	var p Posting
	if err := each(ctx, tx, `SELECT transfer_id, from_account, to_account, amount FROM postings ORDER BY id`,
		[]any{&p.TransferID, &p.From, &p.To, &p.Amount}, func() { s.Postings = append(s.Postings, p) }); err != nil {
		return s, err
	}
	var d Decision
	if err := each(ctx, tx, `SELECT transfer_id, from_account, to_account, amount, outcome, turn FROM applied_transfers`,
		[]any{&id, &d.From, &d.To, &d.Amount, &d.Outcome, &d.Turn}, func() { s.Decided[id] = d }); err != nil {
		return s, err
	}
	var q QueueRow
	if err := each(ctx, tx, `SELECT seq, transfer_id, acked_at IS NOT NULL, coalesce(outcome, ''), coalesce(worker, ''), coalesce(batch, 0)
		FROM transfer_queue ORDER BY seq`,
		[]any{&q.Seq, &q.TransferID, &q.Acked, &q.Outcome, &q.Worker, &q.Batch}, func() { s.Queue = append(s.Queue, q) }); err != nil {
		return s, err
	}
	return s, nil
}

func each(ctx context.Context, tx pgx.Tx, sql string, scans []any, f func()) error {
	rows, err := tx.Query(ctx, sql)
	if err != nil {
		return fmt.Errorf("load ledger state: %w", err)
	}
	if _, err := pgx.ForEachRow(rows, scans, func() error { f(); return nil }); err != nil {
		return fmt.Errorf("load ledger state: %w", err)
	}
	return nil
}

// Total is the sum of the balances.
func (s State) Total() int64 {
	var t int64
	for _, b := range s.Balances {
		t += b
	}
	return t
}
