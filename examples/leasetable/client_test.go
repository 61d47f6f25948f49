package leasetable_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/contested/contested/contested/history"
	"github.com/contested/contested/faultlayer/lease"
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
	errs    []error // recording errors: recorder bugs, never the table's
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

// acquire records one Acquire. Its context is short (400ms) so that Acquire never reaches
// the reclaim it runs after eight failed attempts: that reclaim is not recorded, and an
// unrecorded client of the table would make the history lie. ErrExhausted is recorded as
// ambiguous: Acquire also returns it when its context ends while its UPDATE is in flight,
// and that UPDATE may have committed.
func (c *client) acquire(holder string) (lease.Lease, bool) {
	id, err := c.rec.Invoke(c.proc, history.TypeAcquire, "", history.LeaseRef{Holder: holder})
	c.keep(err)
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
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
		time.Sleep(20 * time.Millisecond)
	}
}

// run cycles until ctx ends.
func (c *client) run(ctx context.Context) {
	for k := 0; ctx.Err() == nil; k++ {
		c.cycle(k)
		time.Sleep(time.Millisecond)
	}
}
