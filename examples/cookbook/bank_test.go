package cookbook_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/contested"
	"github.com/contested/contested/contested/history"
)

// TestBankContract contests an accounts table: a transfer moves money in one statement only
// when the source holds it, and every balance read at once sums to what the bank holds, while
// the connections are reset.
func TestBankContract(t *testing.T) {
	ctx := context.Background()
	opening := map[string]int64{"a": 100, "b": 100, "c": 100}
	leg := contested.Start(t, "cookbook.bank", contested.Reset, contested.Clients(3))
	if _, err := leg.Client(0).Pool(ctx).Exec(ctx, `CREATE TABLE accounts (id text PRIMARY KEY, balance bigint NOT NULL);
		INSERT INTO accounts VALUES ('a', 100), ('b', 100), ('c', 100)`); err != nil {
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
				if rng.IntN(4) == 0 { // every balance at once
					id := c.Invoke(history.TypeBalances, "", nil)
					bals, err := balances(ctx, pool)
					c.Record(id, bals, err)
					continue
				}
				from, to := []string{"a", "b", "c"}[rng.IntN(3)], []string{"a", "b", "c"}[rng.IntN(3)]
				if from == to {
					continue
				}
				amount := 1 + rng.Int64N(80)
				id := c.Invoke(history.TypeTransfer, from, history.Transfer{From: from, To: to, Amount: amount})
				tag, err := pool.Exec(ctx, `WITH debit AS (
					UPDATE accounts SET balance = balance - $3 WHERE id = $1 AND balance >= $3 RETURNING id)
					UPDATE accounts SET balance = balance + $3 WHERE id = $2 AND EXISTS (SELECT 1 FROM debit)`, from, to, amount)
				c.Record(id, map[bool]string{true: history.OutcomeOK, false: history.OutcomeRejected}[tag.RowsAffected() == 1], err)
			}
		})
	}
	wg.Wait()
	leg.Check(ctx, history.NewBank(opening))
}

// balances reads every balance in one statement: one snapshot.
func balances(ctx context.Context, pool *pgxpool.Pool) (map[string]int64, error) {
	rows, _ := pool.Query(ctx, `SELECT id, balance FROM accounts`)
	var id string
	var bal int64
	out := map[string]int64{}
	_, err := pgx.ForEachRow(rows, []any{&id, &bal}, func() error { out[id] = bal; return nil })
	return out, err
}
