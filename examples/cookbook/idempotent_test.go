package cookbook_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/contested"
	"github.com/contested/contested/contested/history"
)

// TestIdempotentContract contests a payments table keyed by the request's idempotency key:
// a request is applied once, its replay answers what the first answered, and a replay with
// another amount is refused, while the connections are reset. Clients retry under the same
// key, as a client that lost an answer does.
func TestIdempotentContract(t *testing.T) {
	ctx := context.Background()
	leg := contested.Start(t, "cookbook.idempotent", contested.Reset, contested.Clients(3))
	setup := leg.Client(0).Pool(ctx)
	if _, err := setup.Exec(ctx, `CREATE TABLE payments (key text PRIMARY KEY, amount bigint NOT NULL, id bigserial)`); err != nil {
		t.Fatal(err)
	}
	const keys = 12
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
				k := rng.IntN(keys)
				key, amount := fmt.Sprintf("key-%d", k), int64(10+k)
				if rng.IntN(8) == 0 {
					amount++ // another request under a used key
				}
				id := c.Invoke(history.TypeRequest, key, map[string]int64{"amount": amount})
				answer, err := pay(ctx, pool, key, amount)
				c.Record(id, answer, err)
			}
		})
	}
	wg.Wait()
	for k := range keys { // how often the service applied each key, read at rest
		key := fmt.Sprintf("key-%d", k)
		id, _ := leg.History().Invoke("audit", history.TypeApplied, key, nil)
		var n int64
		err := setup.QueryRow(ctx, `SELECT count(*) FROM payments WHERE key = $1`, key).Scan(&n)
		leg.Client(0).Record(id, n, err)
	}
	leg.Check(ctx, history.NewIdempotent())
}

// pay sends a payment request, and tries it again under the same key when the network failed
// it, as an idempotent client does (three tries at most). A try the network failed may have
// been applied, whatever a later try says: a request that ends in an error after such a try
// has an unknown outcome, which only pay knows, so it says so (contested.Ambiguous). Without
// the mark, a last try refused before it was sent would read as a definite failure of a
// request an earlier try applied.
func pay(ctx context.Context, pool *pgxpool.Pool, key string, amount int64) (any, error) {
	var err error
	mayHaveApplied := false
	for try := range 3 {
		var answer any
		if answer, err = payOnce(ctx, pool, key, amount); err == nil {
			return answer, nil
		}
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			break // Postgres answered: another try would be answered the same
		}
		mayHaveApplied = mayHaveApplied || !contested.Definite(err)
		time.Sleep(time.Duration(try+1) * 10 * time.Millisecond)
	}
	if mayHaveApplied {
		return nil, contested.Ambiguous(err)
	}
	return nil, err
}

// payOnce applies a payment once per key: the first request inserts it, a replay reads it
// back, and a replay with another amount is a conflict.
func payOnce(ctx context.Context, pool *pgxpool.Pool, key string, amount int64) (any, error) {
	var id, stored int64
	err := pool.QueryRow(ctx, `INSERT INTO payments (key, amount) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING RETURNING id`, key, amount).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		err = pool.QueryRow(ctx, `SELECT id, amount FROM payments WHERE key = $1`, key).Scan(&id, &stored)
		if err == nil && stored != amount {
			return history.OutcomeConflict, nil
		}
	}
	return map[string]int64{"payment": id}, err
}
