// Package stock is a small service that adopts contested: it applies stock
// deliveries to Postgres, each delivery at most once, so a redelivered
// message never counts twice.
package stock

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Delivery adds Qty of Item; ID is the business key a redelivery repeats.
type Delivery struct {
	ID   string
	Item string
	Qty  int
}

// Migrate creates the store's tables.
func Migrate(ctx context.Context, db *pgxpool.Pool) error {
	_, err := db.Exec(ctx, `
		CREATE TABLE IF NOT EXISTS stock (item text PRIMARY KEY, qty integer NOT NULL);
		CREATE TABLE IF NOT EXISTS applied (delivery_id text PRIMARY KEY)`)
	return err
}

// skipDedup is flipped only by the planted defect (defect.go, build tag
// adopter_defect), never in a normal build.
var skipDedup bool

// Apply applies d once: the delivery id and the quantity change commit
// together, and a delivery already applied changes nothing.
func Apply(ctx context.Context, db *pgxpool.Pool, d Delivery) error {
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO applied (delivery_id) VALUES ($1) ON CONFLICT DO NOTHING`, d.ID)
		if err != nil {
			return fmt.Errorf("record delivery %s: %w", d.ID, err)
		}
		if tag.RowsAffected() == 0 && !skipDedup {
			return nil
		}
		_, err = tx.Exec(ctx, `INSERT INTO stock (item, qty) VALUES ($1, $2)
			ON CONFLICT (item) DO UPDATE SET qty = stock.qty + EXCLUDED.qty`, d.Item, d.Qty)
		if err != nil {
			return fmt.Errorf("apply delivery %s: %w", d.ID, err)
		}
		return nil
	})
}

// Quantity returns the stock of item.
func Quantity(ctx context.Context, db *pgxpool.Pool, item string) (int, error) {
	var q int
	err := db.QueryRow(ctx, `SELECT coalesce((SELECT qty FROM stock WHERE item = $1), 0)`, item).Scan(&q)
	return q, err
}
