package pglock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/contested"
	"github.com/contested/contested/contested/history"
	"github.com/contested/contested/examples/pglock"
)

func TestMain(m *testing.M) { contested.Main(m) }

// A lease's time to live, below isolate's shortest cut (1.5 s); the statement timeout.
const ttl, statementTimeout = 1200 * time.Millisecond, time.Second

// TestLockContract contests pglock.lease: three clients each own a lock and take over their
// neighbour's once its lease runs out; while one is cut off and the others go on, the lock
// model must hold.
func TestLockContract(t *testing.T) {
	t.Run("isolate", func(t *testing.T) {
		ctx := context.Background()
		leg := contested.Start(t, "pglock.lease", contested.Isolate, contested.Clients(3), contested.Span(1200))
		db := leg.Client(0).Pool(ctx) // before the first cut: the tables
		if err := pglock.Migrate(ctx, db); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(ctx, `CREATE TABLE pglock_work (lock text, token bigint, holder text)`); err != nil {
			t.Fatal(err)
		}
		run, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for i := range 3 {
			wg.Go(func() { client(t, run, leg, i, 3) })
		}
		<-leg.Done()
		time.Sleep(2 * ttl) // what a client does once it can reach the database again
		stop()
		wg.Wait()
		leg.Check(ctx, history.NewLock(history.LockSpec{
			TTL: ttl, Fencing: true, RecordsRenewals: true, Reacquire: time.Second, EffectWithin: 2 * statementTimeout,
		}))
	})
}

// client holds its own lock and acts on it (through Do, and outside the database while Held),
// tries its neighbour's now and then, and records every op, the heartbeat's too.
func client(t *testing.T, ctx context.Context, leg *contested.Leg, i, n int) {
	c := leg.Client(i)
	cfg := c.PoolConfig()
	cfg.ConnConfig.ConnectTimeout, cfg.MaxConns = time.Second, 8
	cfg.ConnConfig.RuntimeParams["statement_timeout"] = fmt.Sprint(statementTimeout.Milliseconds())
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Error(err)
		return
	}
	defer pool.Close()
	locker := pglock.New(ctx, pool, c.Name(), pglock.Options{TTL: ttl, OnRenew: func(lock string, token int64) func(bool, error) {
		id, _ := leg.History().Invoke(c.Name()+" heartbeat "+lock, history.TypeRenew, lock, history.LockRef{Holder: c.Name(), Token: token})
		return func(renewed bool, err error) {
			c.Record(id, map[bool]string{true: history.OutcomeOK, false: history.OutcomeFenced}[renewed], err)
		}
	}})
	defer locker.Wait()
	own, next := fmt.Sprintf("L%d", i), fmt.Sprintf("L%d", (i+1)%n)
	var lease *pglock.Lease
	for k := 0; ctx.Err() == nil; k++ {
		leg.Step(ctx)
		switch {
		case lease == nil:
			lease = acquire(ctx, c, locker, own)
		case k%2 == 0:
			if errors.Is(act(ctx, c, lease), pglock.ErrLost) {
				release(ctx, c, lease)
				lease = nil
			}
		default: // work no fence protects: done only while the lease is held
			id := c.Invoke(history.TypeAct, own, history.LockRef{Holder: c.Name(), Token: lease.Token()})
			finish(c, id, history.OutcomeOK, map[bool]error{true: nil, false: pglock.ErrLost}[lease.Held()])
		}
		if k%8 == 4 { // the neighbour's lock: free only once its lease ran out
			if theirs := acquire(ctx, c, locker, next); theirs != nil {
				act(ctx, c, theirs)
				release(ctx, c, theirs)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	if lease != nil {
		release(context.WithoutCancel(ctx), c, lease)
	}
}

func acquire(ctx context.Context, c *contested.Client, locker *pglock.Locker, lock string) *pglock.Lease {
	defer c.Begin(ctx, "acquire")() // where level 3 cuts another client off
	id := c.Invoke(history.TypeAcquire, lock, history.LockRef{Holder: c.Name()})
	lease, err := locker.Acquire(ctx, lock)
	if err != nil {
		finish(c, id, nil, err)
		return nil
	}
	c.Record(id, history.Granted{Token: lease.Token()}, nil)
	return lease
}

// act does fenced work on the lock through Do.
func act(ctx context.Context, c *contested.Client, lease *pglock.Lease) error {
	id := c.Invoke(history.TypeAct, lease.Name(), history.LockRef{Holder: c.Name(), Token: lease.Token()})
	err := lease.Do(ctx, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO pglock_work VALUES ($1, $2, $3)`, lease.Name(), lease.Token(), c.Name())
		return err
	})
	finish(c, id, history.OutcomeOK, err)
	return err
}

func release(ctx context.Context, c *contested.Client, lease *pglock.Lease) {
	id := c.Invoke(history.TypeRelease, lease.Name(), history.LockRef{Holder: c.Name(), Token: lease.Token()})
	finish(c, id, history.OutcomeOK, lease.Release(ctx))
}

// finish records op id: "busy" is an answer, a lease known lost a refusal that did nothing.
func finish(c *contested.Client, id int64, out any, err error) {
	switch {
	case errors.Is(err, pglock.ErrBusy):
		c.Record(id, history.OutcomeBusy, nil)
	case errors.Is(err, pglock.ErrLost):
		c.Fail(id, err)
	default:
		c.Record(id, out, err)
	}
}
