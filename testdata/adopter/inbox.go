package stock

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The inbox is the queue the stockd replicas drain: a delivery enqueued
// once is applied by one replica, at most once however often a killed
// replica leaves it to be delivered again.

// MigrateInbox creates the store's tables and the inbox.
func MigrateInbox(ctx context.Context, db *pgxpool.Pool) error {
	if err := Migrate(ctx, db); err != nil {
		return err
	}
	_, err := db.Exec(ctx, `CREATE TABLE IF NOT EXISTS inbox (
		id text PRIMARY KEY, item text NOT NULL, qty integer NOT NULL, done_by text, done_at timestamptz)`)
	return err
}

// Enqueue puts d in the inbox; enqueueing the same id again changes
// nothing.
func Enqueue(ctx context.Context, db *pgxpool.Pool, d Delivery) error {
	_, err := db.Exec(ctx, `INSERT INTO inbox (id, item, qty) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, d.ID, d.Item, d.Qty)
	return err
}

// Drain claims up to limit pending deliveries, applies each with Apply
// (its own transaction, deduplicated by id) and marks them done by worker.
// A worker killed between the two leaves the deliveries pending: the next
// claim delivers them again, and Apply's dedup absorbs it.
func Drain(ctx context.Context, db *pgxpool.Pool, worker string, limit int) (int, error) {
	n := 0
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT id, item, qty FROM inbox WHERE done_at IS NULL ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`, limit)
		if err != nil {
			return err
		}
		ds, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Delivery, error) {
			var d Delivery
			return d, r.Scan(&d.ID, &d.Item, &d.Qty)
		})
		if err != nil {
			return err
		}
		for _, d := range ds {
			if err := Apply(ctx, db, d); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE inbox SET done_by = $1, done_at = clock_timestamp() WHERE id = $2`, worker, d.ID); err != nil {
				return fmt.Errorf("mark delivery %s done: %w", d.ID, err)
			}
		}
		n = len(ds)
		return nil
	})
	return n, err
}
