package cookbook_test

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/contested/contested/contested"
	"github.com/contested/contested/contested/history"
)

// TestKVContract contests a key-value table: reads see the latest write, a compare-and-set
// decides on the current value, while the connections carrying them are reset.
func TestKVContract(t *testing.T) {
	ctx := context.Background()
	leg := contested.Start(t, "cookbook.kv", contested.Reset, contested.Clients(3))
	if _, err := leg.Client(0).Pool(ctx).Exec(ctx, `CREATE TABLE kv (k text PRIMARY KEY, v bigint NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 3 {
		c, rng := leg.Client(i), rand.New(rand.NewPCG(uint64(leg.Seed()), uint64(i)))
		pool := c.Pool(ctx)
		wg.Go(func() {
			for {
				select {
				case <-leg.Done():
					return
				default:
				}
				leg.Step(ctx)
				key, v := []string{"x", "y"}[rng.IntN(2)], rng.Int64N(4)
				switch rng.IntN(3) {
				case 0:
					id := c.Invoke(history.TypeRead, key, nil)
					var got *int64 // nil: absent, read as null
					err := pool.QueryRow(ctx, `SELECT v FROM kv WHERE k = $1`, key).Scan(&got)
					if errors.Is(err, pgx.ErrNoRows) {
						err = nil
					}
					c.Record(id, got, err)
				case 1:
					id := c.Invoke(history.TypeWrite, key, v)
					_, err := pool.Exec(ctx, `INSERT INTO kv VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = excluded.v`, key, v)
					c.Record(id, history.OutcomeOK, err)
				default:
					from := rng.Int64N(4)
					id := c.Invoke(history.TypeCAS, key, history.CAS{From: number(from), To: number(v)})
					tag, err := pool.Exec(ctx, `UPDATE kv SET v = $3 WHERE k = $1 AND v = $2`, key, from, v)
					c.Record(id, map[bool]string{true: history.OutcomeOK, false: history.OutcomeMismatch}[tag.RowsAffected() == 1], err)
				}
			}
		})
	}
	wg.Wait()
	model, err := history.NewKV(nil) // every key absent at the start
	if err != nil {
		t.Fatal(err)
	}
	leg.Check(ctx, model)
}

func number(n int64) json.RawMessage { b, _ := json.Marshal(n); return b }
