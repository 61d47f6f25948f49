package stock

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/contested"
)

func TestMain(m *testing.M) { contested.Main(m) }

func directPool(t *testing.T, leg *contested.Leg) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	db, err := pgxpool.New(ctx, leg.DirectDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if err := Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	return db
}

// exactlyOnce is the oracle: the stock equals the number of distinct
// deliveries, whatever was redelivered or retried.
func exactlyOnce(ctx context.Context, db *pgxpool.Pool, distinct int) error {
	q, err := Quantity(ctx, db, "widget")
	if err != nil {
		return err
	}
	if q != distinct {
		return fmt.Errorf("exactly-once violated: stock is %d after %d distinct deliveries", q, distinct)
	}
	return nil
}

func TestStockContract(t *testing.T) {
	t.Run("burst", func(t *testing.T) {
		ctx := context.Background()
		leg := contested.Start(t, "adopter.stock", contested.Burst)
		db := directPool(t, leg)
		const n = 30
		for _, d := range leg.Deliveries(ctx, n, contested.BurstPlan{}) {
			if err := Apply(ctx, db, Delivery{ID: fmt.Sprintf("d%d", d.Index), Item: "widget", Qty: 1}); err != nil {
				t.Fatal(err)
			}
			leg.Consumed(d)
		}
		err := exactlyOnce(ctx, db, n)
		leg.Oracle("exactly-once", n, n, err)
		if err != nil {
			t.Error(err)
		}
	})
	t.Run("reset", func(t *testing.T) {
		ctx := context.Background()
		leg := contested.Start(t, "adopter.stock", contested.Reset)
		directPool(t, leg)
		pool := leg.Pool(ctx)
		const n = 20
		var failed []int
		for i := range n {
			if i == n/2 {
				leg.Arm(ctx)
			}
			qctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			err := Apply(qctx, pool, Delivery{ID: fmt.Sprintf("d%d", i), Item: "widget", Qty: 1})
			cancel()
			if err != nil {
				if !leg.Observe(err) {
					t.Fatalf("delivery %d: %v", i, err)
				}
				failed = append(failed, i)
			}
			if i == n/2+2 {
				leg.Heal(ctx)
			}
		}
		// Redeliver what failed: an at-least-once producer retries.
		for _, i := range failed {
			if err := Apply(ctx, pool, Delivery{ID: fmt.Sprintf("d%d", i), Item: "widget", Qty: 1}); err != nil {
				t.Fatalf("redelivery %d: %v", i, err)
			}
		}
		db := directPool(t, leg)
		err := exactlyOnce(ctx, db, n)
		leg.Oracle("exactly-once", n, n, err)
		if err != nil {
			t.Error(err)
		}
		if errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
	})
}
