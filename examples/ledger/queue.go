package ledger

import (
	"context"
	"fmt"
)

// Queue is the Postgres-backed transfer queue.
type Queue struct {
	db DB
}

// NewQueue returns the queue over db.
func NewQueue(db DB) *Queue { return &Queue{db: db} }

// Enqueue adds t to the queue and returns its row's sequence number. A nil error is the
// producer's acknowledgement: the row is committed and some worker will apply it. On an error
// for which Definite is false the row may or may not be in the queue; enqueue t again (same
// id): the consumers apply a transfer id once however often it is queued.
func (q *Queue) Enqueue(ctx context.Context, t Transfer) (int64, error) {
	if err := t.Validate(); err != nil {
		return 0, err
	}
	var seq int64
	err := q.db.QueryRow(ctx, `INSERT INTO transfer_queue (transfer_id, from_account, to_account, amount)
		VALUES ($1::text, $2::text, $3::text, $4::bigint) RETURNING seq`, t.ID, t.From, t.To, t.Amount).Scan(&seq)
	if err != nil {
		return 0, fmt.Errorf("enqueue transfer %s: %w", t.ID, err)
	}
	return seq, nil
}

// Pending returns how many rows wait to be applied (claimed or not).
func (q *Queue) Pending(ctx context.Context) (int, error) {
	var n int
	if err := q.db.QueryRow(ctx, `SELECT count(*) FROM transfer_queue WHERE acked_at IS NULL`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count pending transfers: %w", err)
	}
	return n, nil
}
