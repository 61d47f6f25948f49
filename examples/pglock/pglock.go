// Package pglock is a lease-based lock over Postgres with fencing tokens: the kind of lock a
// team writes to run one leader, one shard owner or one cron runner at a time.
//
// It is contested's reference component for the isolate lever and the lock model: its
// contract (contract_test.go) cuts one client off while the others go on and holds what every
// client saw against history.Lock, so read it as an example as much as a component.
//
// # Shape
//
// One table, created by [Migrate]: pglock_leases (name, holder, token, expires_at). A grant
// sets expires_at to the database's now() plus the TTL and bumps the token; a holder renews
// its lease on a heartbeat, every Renew; a lease not renewed expires, and the next acquire
// takes it over with a greater token.
//
// A holder acts as the holder in two ways. Database work goes through [Lease.Do], which runs
// it in a transaction fenced by the token: the transaction takes the lease row FOR SHARE and
// checks it is still this holder's token and unexpired, so the work commits only while the
// lease holds (an acquire that takes the lease over waits for it). Work outside the database,
// which no fence protects (a message sent, a call made because this client leads), is guarded
// by [Lease.Held]: the lease is not known lost and its local deadline, the send time of the
// last renewal answered ok plus the TTL, less a margin, has not passed. The database stamps
// expiry after the renewal was sent, so a holder that stops acting at its local deadline has
// stopped before any other client can be granted the lease.
package pglock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Errors callers branch on.
var (
	// ErrBusy: another holder has the lock.
	ErrBusy = errors.New("pglock: lock held by another holder")
	// ErrLost: the lease is lost (it expired, was taken over or released); stop acting as
	// the holder.
	ErrLost = errors.New("pglock: lease lost")
)

// DB is what Migrate needs: *pgxpool.Pool and *pgx.Conn provide it.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Migrate creates the lease table; it is idempotent.
func Migrate(ctx context.Context, db DB) error {
	_, err := db.Exec(ctx, `CREATE TABLE IF NOT EXISTS pglock_leases (
		name       text PRIMARY KEY,
		holder     text,
		token      bigint NOT NULL,
		expires_at timestamptz NOT NULL
	)`)
	if err != nil {
		return fmt.Errorf("create pglock_leases: %w", err)
	}
	return nil
}

// Options tune a Locker.
type Options struct {
	// TTL is how long a grant or renewal keeps the lease (default 10 s).
	TTL time.Duration
	// Renew is the heartbeat's period (default TTL/4).
	Renew time.Duration
	// Margin is how long before the lease's local deadline the holder stops acting
	// (default TTL/10): room for a pause between a check and the act.
	Margin time.Duration
	// OnRenew, when set, is called as each renewal starts, and the function it returns
	// with the renewal's outcome: renewed, or the lease found lost, or err. It is how
	// metrics (and a contract's history) see the heartbeat.
	OnRenew func(name string, token int64) (done func(renewed bool, err error))
}

// Locker acquires leases for one holder.
type Locker struct {
	ctx    context.Context // the heartbeats run until it ends
	pool   *pgxpool.Pool
	holder string
	opts   Options
	wg     sync.WaitGroup
}

// New returns a Locker for holder (a name unique to this client) over pool. Its leases'
// heartbeats run until each lease is released or lost, or ctx ends.
func New(ctx context.Context, pool *pgxpool.Pool, holder string, opts Options) *Locker {
	if opts.TTL <= 0 {
		opts.TTL = 10 * time.Second
	}
	if opts.Renew <= 0 {
		opts.Renew = opts.TTL / 4
	}
	if opts.Margin <= 0 {
		opts.Margin = opts.TTL / 10
	}
	return &Locker{ctx: ctx, pool: pool, holder: holder, opts: opts}
}

// Holder is the name the Locker acquires leases as.
func (l *Locker) Holder() string { return l.holder }

// Wait waits for the heartbeats of the Locker's leases to stop: each stops when its lease is
// released or found lost, or the Locker's context ends.
func (l *Locker) Wait() { l.wg.Wait() }

// Acquire takes the lock name if it is free, expired, or already this holder's (which hands
// out a new token: the old lease is fenced), and starts its heartbeat. ctx bounds the acquire
// alone. It returns ErrBusy when another holder has it.
func (l *Locker) Acquire(ctx context.Context, name string) (*Lease, error) {
	sent := time.Now()
	var token int64
	err := l.pool.QueryRow(ctx, `
		INSERT INTO pglock_leases AS l (name, holder, token, expires_at)
		VALUES ($1, $2, 1, now() + $3::interval)
		ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, token = l.token + 1, expires_at = excluded.expires_at
		WHERE l.expires_at <= now() OR l.holder IS NULL OR l.holder = excluded.holder
		RETURNING token`, name, l.holder, l.opts.TTL.String()).Scan(&token)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrBusy
	}
	if err != nil {
		return nil, fmt.Errorf("acquire %s: %w", name, err)
	}
	hctx, stop := context.WithCancel(l.ctx)
	le := &Lease{l: l, name: name, token: token, deadline: sent.Add(l.opts.TTL), lostCh: make(chan struct{}), stop: stop, done: make(chan struct{})}
	l.wg.Add(1)
	go le.heartbeat(hctx)
	return le, nil
}

// Lease is one grant of a lock to a holder.
type Lease struct {
	l     *Locker
	name  string
	token int64

	mu       sync.Mutex
	deadline time.Time // the send time of the last renewal answered ok, plus the TTL
	lost     bool
	lostCh   chan struct{}

	stop context.CancelFunc
	done chan struct{}
}

// Name is the lock's name.
func (le *Lease) Name() string { return le.name }

// Token is the lease's fencing token: greater than every token the lock had before.
func (le *Lease) Token() int64 { return le.token }

// Lost is closed once the lease is known lost.
func (le *Lease) Lost() <-chan struct{} { return le.lostCh }

// Held reports whether the holder may still act: the lease is not known lost and its local
// deadline, less the margin, has not passed. Check it before every act outside the database;
// once it is false it stays false.
func (le *Lease) Held() bool {
	le.mu.Lock()
	defer le.mu.Unlock()
	if le.lost {
		return false
	}
	if ignoreLost {
		return true // planted defect: the heartbeat's deadline is not kept
	}
	if time.Now().After(le.deadline.Add(-le.l.opts.Margin)) {
		le.loseLocked()
		return false
	}
	return true
}

func (le *Lease) lose() {
	le.mu.Lock()
	defer le.mu.Unlock()
	le.loseLocked()
}

func (le *Lease) loseLocked() {
	if !le.lost {
		le.lost = true
		close(le.lostCh)
	}
}

// Do runs fn as the holder, in a transaction fenced by the lease's token: it returns ErrLost,
// without running fn, when the lease is not Held, and when the lease row no longer holds this
// holder's unexpired token; fn's writes commit only while the lease holds.
func (le *Lease) Do(ctx context.Context, fn func(ctx context.Context, tx pgx.Tx) error) error {
	if !noFence && !le.Held() { // planted defect: acts whatever the lease's state
		return ErrLost
	}
	tx, err := le.l.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("act on %s: %w", le.name, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	// A client that dies mid-transaction must not leave the lease row locked: the
	// holder's own renewals would queue behind it until its lease ran out.
	if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL idle_in_transaction_session_timeout = %d", le.l.opts.Renew.Milliseconds())); err != nil {
		return fmt.Errorf("act on %s: %w", le.name, err)
	}
	if !noFence {
		var ok bool
		err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pglock_leases WHERE name = $1 AND holder = $2 AND token = $3 AND expires_at > now() FOR SHARE)`,
			le.name, le.l.holder, le.token).Scan(&ok)
		if err != nil {
			return fmt.Errorf("fence %s: %w", le.name, err)
		}
		if !ok {
			le.lose()
			return ErrLost
		}
	}
	if err := fn(ctx, tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("act on %s: %w", le.name, err)
	}
	return nil
}

// Release stops the heartbeat and gives the lock back. It returns ErrLost when the lease was
// no longer this holder's; the lease is over either way.
func (le *Lease) Release(ctx context.Context) error {
	le.stop()
	<-le.done
	le.lose()
	tag, err := le.l.pool.Exec(ctx, `UPDATE pglock_leases SET holder = NULL, expires_at = now() WHERE name = $1 AND holder = $2 AND token = $3`,
		le.name, le.l.holder, le.token)
	if err != nil {
		return fmt.Errorf("release %s: %w", le.name, err)
	}
	if tag.RowsAffected() == 0 {
		return ErrLost
	}
	return nil
}

// heartbeat renews the lease every Renew, and sooner when less than two periods are left
// before its local deadline (a slow acquire or a failed renewal ate into it), until it is
// lost or released, or ctx ends. A renewal that fails keeps the deadline where it was: the
// lease runs out at its local deadline unless a later renewal is answered ok.
func (le *Lease) heartbeat(ctx context.Context) {
	defer le.l.wg.Done()
	defer close(le.done)
	for {
		le.mu.Lock()
		left := time.Until(le.deadline.Add(-le.l.opts.Margin))
		le.mu.Unlock()
		t := time.NewTimer(max(0, min(le.l.opts.Renew, left/2)))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if !le.Held() {
			return
		}
		if le.renew(ctx) {
			return
		}
	}
}

// renew renews the lease once and reports whether the heartbeat should stop: the lease is
// lost.
func (le *Lease) renew(ctx context.Context) (stop bool) {
	done := func(bool, error) {}
	if le.l.opts.OnRenew != nil {
		done = le.l.opts.OnRenew(le.name, le.token)
	}
	sent := time.Now()
	le.mu.Lock()
	left := time.Until(le.deadline.Add(-le.l.opts.Margin))
	le.mu.Unlock()
	// A slow renewal is still worth its answer until the lease would run out anyway.
	rctx, cancel := context.WithTimeout(ctx, max(le.l.opts.Renew, left))
	defer cancel()
	tag, err := le.l.pool.Exec(rctx, `UPDATE pglock_leases SET expires_at = now() + $4::interval
		WHERE name = $1 AND holder = $2 AND token = $3 AND expires_at > now()`,
		le.name, le.l.holder, le.token, le.l.opts.TTL.String())
	switch {
	case err != nil:
		done(false, err)
		return false // the deadline stays: the lease runs out unless a later renewal lands
	case tag.RowsAffected() == 0:
		done(false, nil)
		if ignoreLost {
			return false // planted defect: a lost lease is not ended
		}
		le.lose()
		return true
	}
	done(true, nil)
	le.mu.Lock()
	le.deadline = sent.Add(le.l.opts.TTL)
	le.mu.Unlock()
	return false
}
