package leasetable_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/contested/contested/contested"
	"github.com/contested/contested/contested/history"
	"github.com/contested/contested/internal/faultlayer/lease"
)

// release is how the contract releases a lease. It is the table's Release; the test-only
// build tag contested_defect_unfencedrelease swaps in the planted defect (see
// defect_unfencedrelease_test.go) to prove the contract catches it.
var release = (*lease.Table).Release

// client is one lease client: a sequential process of the history.
type client struct {
	table   *lease.Table
	rec     *history.Recorder
	proc    string
	observe func(error) bool
	// leg, when set, arms and heals its fault on the client's steps (one per operation) and
	// paces its retries.
	leg  *contested.Leg
	errs []error // recording errors: recorder bugs, never the table's
}

// step marks the client's next operation on its leg's schedule.
func (c *client) step() {
	if c.leg != nil {
		c.leg.Step(context.Background())
	}
}

// definite reports whether err guarantees the statement did not take effect: no connection,
// nothing sent, or the server refused it.
func definite(err error) bool {
	var connect *pgconn.ConnectError
	var server *pgconn.PgError
	return errors.As(err, &connect) || errors.As(err, &server) || pgconn.SafeToRetry(err)
}

func (c *client) keep(err error) {
	if err != nil {
		c.errs = append(c.errs, err)
	}
}

// acquire records one Acquire. Acquire runs an unrecorded reclaim of leases whose owner
// process is gone after eight attempts that found no free port; that never frees anything
// here, because the contract's ports outnumber the leases ever held at once (and in the reset
// leg every owner is this process). ErrExhausted is recorded as ambiguous: Acquire also
// returns it when its context ends while its UPDATE is in flight, and that UPDATE may have
// committed.
func (c *client) acquire(holder string) (lease.Lease, bool) {
	c.step()
	id, err := c.rec.Invoke(c.proc, history.TypeAcquire, "", history.LeaseRef{Holder: holder})
	c.keep(err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	l, err := c.table.Acquire(ctx, holder)
	cancel()
	switch {
	case err == nil:
		c.keep(c.rec.Complete(id, history.Acquired{Port: l.Port, Epoch: l.Epoch, Reclaimed: l.Reclaimed != ""}, nil))
		return l, true
	case definite(err) && !errors.Is(err, lease.ErrExhausted):
		c.keep(c.rec.Complete(id, nil, err))
	default:
		c.keep(c.rec.Ambiguous(id, err))
	}
	if c.observe != nil {
		c.observe(err)
	}
	return lease.Lease{}, false
}

// fenced records one renew or release of l and reports whether it got an answer (ok or
// fenced) and which.
func (c *client) fenced(typ string, l lease.Lease, do func(context.Context, lease.Lease) error) (answered, ok bool) {
	c.step()
	id, err := c.rec.Invoke(c.proc, typ, strconv.Itoa(l.Port), history.LeaseRef{Port: l.Port, Epoch: l.Epoch, Holder: l.Holder})
	c.keep(err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	err = do(ctx, l)
	cancel()
	switch {
	case err == nil:
		c.keep(c.rec.Complete(id, history.OutcomeOK, nil))
		return true, true
	case errors.Is(err, lease.ErrFenced):
		c.keep(c.rec.Complete(id, history.OutcomeFenced, nil))
		return true, false
	case definite(err):
		c.keep(c.rec.Complete(id, nil, err))
	default:
		c.keep(c.rec.Ambiguous(id, err))
	}
	if c.observe != nil {
		c.observe(err)
	}
	return false, false
}

func (c *client) renew(l lease.Lease) (answered, ok bool) {
	return c.fenced(history.TypeRenew, l, func(ctx context.Context, l lease.Lease) error {
		_, err := c.table.Renew(ctx, l)
		return err
	})
}

func (c *client) release(l lease.Lease) (answered, ok bool) {
	return c.fenced(history.TypeRelease, l, func(ctx context.Context, l lease.Lease) error {
		_, err := release(c.table, ctx, l)
		return err
	})
}

// cycle is one lease's life: acquire, renew, release (retried until answered), then a stale
// release and a stale renew of the same lease, which the fence must refuse.
func (c *client) cycle(k int) {
	l, ok := c.acquire(fmt.Sprintf("%s.%d", c.proc, k))
	if !ok {
		time.Sleep(10 * time.Millisecond)
		return
	}
	c.renew(l)
	for try := 0; try < 50; try++ {
		if answered, _ := c.release(l); answered {
			// The lease is gone now (released, or fenced because an earlier attempt whose
			// answer was lost released it): both stale ops must be fenced.
			c.release(l)
			c.renew(l)
			return
		}
		time.Sleep(c.backoff(try))
	}
}

// scheduleDone reports whether leg's schedule is done.
func scheduleDone(leg *contested.Leg) bool {
	select {
	case <-leg.Done():
		return true
	default:
		return false
	}
}

// backoff is the pause before retry attempt: the leg's schedule's, or 20ms.
func (c *client) backoff(attempt int) time.Duration {
	if c.leg != nil {
		return c.leg.Backoff(attempt)
	}
	return 20 * time.Millisecond
}

// run cycles until ctx ends.
func (c *client) run(ctx context.Context) {
	for k := 0; ctx.Err() == nil; k++ {
		c.cycle(k)
		time.Sleep(time.Millisecond)
	}
}
