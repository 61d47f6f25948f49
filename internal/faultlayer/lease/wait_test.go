package lease_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/contested/contested/internal/faultlayer/faulttest"
	"github.com/contested/contested/internal/faultlayer/lease"
	"github.com/contested/contested/internal/reap"
)

// timingDB passes every call to the real pool and notes, for each acquire
// attempt (the statement that takes a free or expired port), when it
// started and when its answer was read.
type timingDB struct {
	lease.DB
	mu                sync.Mutex
	started, answered []time.Time
}

func (d *timingDB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if !strings.Contains(sql, "FOR UPDATE SKIP LOCKED") || !strings.Contains(sql, "RETURNING") {
		return d.DB.QueryRow(ctx, sql, args...)
	}
	d.mu.Lock()
	d.started = append(d.started, time.Now())
	d.mu.Unlock()
	return timedRow{d.DB.QueryRow(ctx, sql, args...), d}
}

type timedRow struct {
	pgx.Row
	d *timingDB
}

func (r timedRow) Scan(dest ...any) error {
	err := r.Row.Scan(dest...)
	r.d.mu.Lock()
	r.d.answered = append(r.d.answered, time.Now())
	r.d.mu.Unlock()
	return err
}

// pauses are the waits between one attempt's answer and the next attempt.
func (d *timingDB) pauses() []time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []time.Duration
	for i := 1; i < len(d.started) && i <= len(d.answered); i++ {
		out = append(out, d.started[i].Sub(d.answered[i-1]))
	}
	return out
}

// TestAcquireBacksOffWhileItWaits: with every port held, a waiting Acquire
// pauses between attempts for half to one and a half times a backoff that
// starts at 20ms and doubles up to 250ms: never less (a timer does not
// fire early), and never much more (150ms of slack for a loaded machine).
// A pause that can come out negative hammers the shared database; one that
// grows past the cap leaves a freed port unused.
func TestAcquireBacksOffWhileItWaits(t *testing.T) {
	l := faulttest.Layer(t)
	ctx := context.Background()
	ports := privatePorts(t, 41140)
	freeRows(t, ports...)
	t.Cleanup(func() { freeRows(t, ports...) })
	held, err := lease.New(l.DB(), ports, nil).Acquire(bounded(t), "TestHolder")
	if err != nil {
		t.Fatal(err)
	}
	db := &timingDB{DB: l.DB()}
	wctx, cancel := context.WithTimeout(ctx, 2500*time.Millisecond)
	defer cancel()
	if _, err := lease.New(db, ports, nil, lease.WithoutReclaimOnWait()).Acquire(wctx, "TestWaiter"); !errors.Is(err, lease.ErrExhausted) {
		t.Fatalf("Acquire with port %d held: %v, want ErrExhausted", held.Port, err)
	}
	pauses := db.pauses()
	if len(pauses) < 5 {
		t.Fatalf("%d pauses in 2.5s (%v); want at least 5", len(pauses), pauses)
	}
	backoff := 20 * time.Millisecond
	for i, p := range pauses {
		lo, hi := backoff/2-2*time.Millisecond, backoff*3/2+150*time.Millisecond
		if p < lo || p > hi {
			t.Errorf("pause %d after a backoff of %s: %s, want %s to %s (all: %v)", i, backoff, p.Round(time.Millisecond), backoff/2, backoff*3/2, pauses)
		}
		backoff = min(backoff*2, 250*time.Millisecond)
	}
}

// TestAWaitingAcquireReclaimsOnlyAtEveryEighthAttempt: a waiting Acquire
// looks for dead owners' leases to reclaim at its eighth attempt (and
// every eighth after), not at each: a dead owner's lease is left alone by
// an Acquire that gives up after a few attempts.
func TestAWaitingAcquireReclaimsOnlyAtEveryEighthAttempt(t *testing.T) {
	l := faulttest.Layer(t)
	ports := privatePorts(t, 41146)
	freeRows(t, ports...)
	t.Cleanup(func() { freeRows(t, ports...) })
	me := reap.Self()
	dead := reap.Owner{Host: me.Host, Boot: me.Boot, PIDNS: me.PIDNS, PID: 1 << 30, Start: 1}
	held, err := lease.New(l.DB(), ports, nil, lease.WithOwner(dead.String()), lease.WithTTL(time.Hour)).Acquire(bounded(t), "TestDeadHolder")
	if err != nil {
		t.Fatal(err)
	}
	var cleared atomic.Int64
	cleaner := lease.CleanerFunc(func(context.Context, int) error { cleared.Add(1); return nil })
	// At most 5 attempts fit in 300ms: 0, then pauses of at least 10, 20,
	// 40 and 80ms.
	wctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if got, err := lease.New(l.DB(), ports, cleaner).Acquire(wctx, "TestBrief"); !errors.Is(err, lease.ErrExhausted) {
		t.Fatalf("a brief Acquire got port %d (err %v); want ErrExhausted, the dead owner's lease left to the eighth attempt", got.Port, err)
	}
	if r := readRow(t, held.Port); cleared.Load() != 0 || r.Holder == nil || r.Epoch != held.Epoch {
		t.Errorf("a brief Acquire reclaimed: %d proxies cleared, row %+v", cleared.Load(), r)
	}
}

// TestAcquireReportsAReclaimThatCannotDeleteAProxy: a waiting Acquire that
// reclaims a dead owner's lease and cannot delete its leftover proxy says
// so at once, with the cleaner's error, rather than waiting out its
// context and blaming the holders.
func TestAcquireReportsAReclaimThatCannotDeleteAProxy(t *testing.T) {
	l := faulttest.Layer(t)
	ports := privatePorts(t, 41141)
	freeRows(t, ports...)
	t.Cleanup(func() { freeRows(t, ports...) })
	me := reap.Self()
	dead := reap.Owner{Host: me.Host, Boot: me.Boot, PIDNS: me.PIDNS, PID: 1 << 30, Start: 1}
	if _, err := lease.New(l.DB(), ports, nil, lease.WithOwner(dead.String()), lease.WithTTL(time.Hour)).Acquire(bounded(t), "TestDeadHolder"); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("toxiproxy API unreachable")
	failing := lease.CleanerFunc(func(context.Context, int) error { return boom })
	wctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	_, err := lease.New(l.DB(), ports, failing).Acquire(wctx, "TestImpatient")
	if !errors.Is(err, boom) || errors.Is(err, lease.ErrExhausted) {
		t.Fatalf("Acquire whose reclaim cannot delete the dead owner's proxy: %v after %s; want the cleaner's error, not exhaustion", err, time.Since(start).Round(time.Millisecond))
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the reclaim's failure came after %s; want it at the eighth attempt, within seconds", took.Round(time.Millisecond))
	}
}

// TestAGiveBackThatWorksIsNotReportedAsFailed: when an Acquire cannot
// delete an expired lease's leftover proxy and gives the port back, its
// error is the cleaner's; it says the give-back failed only when it did.
func TestAGiveBackThatWorksIsNotReportedAsFailed(t *testing.T) {
	l := faulttest.Layer(t)
	ctx := context.Background()
	ports := privatePorts(t, 41142)
	freeRows(t, ports...)
	t.Cleanup(func() { freeRows(t, ports...) })
	abandoned, err := lease.New(l.DB(), ports, nil).Acquire(bounded(t), "TestAbandoner")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.DB().Exec(ctx, `UPDATE `+lease.TableName+` SET expires_at = clock_timestamp() - interval '1 second' WHERE port = $1`, abandoned.Port); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("toxiproxy API unreachable")
	failing := lease.New(l.DB(), ports, lease.CleanerFunc(func(context.Context, int) error { return boom }), lease.WithoutReclaimOnWait())
	_, err = failing.Acquire(bounded(t), "TestUnlucky")
	if !errors.Is(err, boom) {
		t.Fatalf("Acquire over an expired lease whose proxy cannot be deleted: %v, want the cleaner's error", err)
	}
	if strings.Contains(err.Error(), "give back") || strings.Contains(err.Error(), "<nil>") {
		t.Errorf("the give-back worked, yet the error says otherwise: %v", err)
	}
	if r := readRow(t, abandoned.Port); r.Holder == nil || *r.Holder != abandoned.Holder || r.Expired == nil || !*r.Expired {
		t.Errorf("the port was not given back to %s, still expired: %+v", abandoned.Holder, r)
	}
}

// TestExhaustedListsTheHolders: the error of an Acquire that waited out
// its context lists the holders one by one, "port by holder (...)",
// separated by commas, the first right after "held: ".
func TestExhaustedListsTheHolders(t *testing.T) {
	l := faulttest.Layer(t)
	ctx := context.Background()
	ports := privatePorts(t, 41143, 41144)
	freeRows(t, ports...)
	t.Cleanup(func() { freeRows(t, ports...) })
	tbl := lease.New(l.DB(), ports, nil)
	var held []lease.Lease
	for _, h := range []string{"TestFirst", "TestSecond"} {
		got, err := tbl.Acquire(bounded(t), h)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, got)
	}
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err := lease.New(l.DB(), ports, nil, lease.WithoutReclaimOnWait()).Acquire(wctx, "TestLate")
	if !errors.Is(err, lease.ErrExhausted) {
		t.Fatalf("Acquire with both ports held: %v", err)
	}
	msg := err.Error()
	first := "2 of 2 ports held: " + strconv.Itoa(held[0].Port) + " by " + held[0].Holder + " (owner "
	second := "), " + strconv.Itoa(held[1].Port) + " by " + held[1].Holder + " (owner "
	if !strings.Contains(msg, first) || !strings.Contains(msg, second) || strings.Count(msg, "), ") != 1 {
		t.Errorf("error %q\nwant the holders listed as %q then %q", msg, first, second)
	}
}

// failingRenewDB fails every renewal with a database error (not a fence),
// and says on failed when it has.
type failingRenewDB struct {
	lease.DB
	err    error
	failed chan struct{}
}

func (f failingRenewDB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if strings.Contains(sql, "SET expires_at = clock_timestamp()") && !strings.Contains(sql, "holder = NULL") {
		select {
		case f.failed <- struct{}{}:
		default:
		}
		return errRow{f.err}
	}
	return f.DB.QueryRow(ctx, sql, args...)
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// TestKeepReportsARenewalThatFails: a renewal that fails while Keep is
// running (the database unreachable, not a fence) ends Keep, and stop
// returns that error: the leg learns its lease may have lapsed. stop comes
// a moment after the first renewal failed and long before the second is
// due, so only a Keep that ended on the failure has it to return.
func TestKeepReportsARenewalThatFails(t *testing.T) {
	l := faulttest.Layer(t)
	ports := privatePorts(t, 41145)
	freeRows(t, ports...)
	t.Cleanup(func() { freeRows(t, ports...) })
	boom := errors.New("connection reset by peer")
	db := failingRenewDB{l.DB(), boom, make(chan struct{}, 1)}
	tbl := lease.New(db, ports, nil, lease.WithTTL(6*time.Second))
	got, err := tbl.Acquire(bounded(t), "TestKeeper")
	if err != nil {
		t.Fatal(err)
	}
	stop := tbl.Keep(context.Background(), got)
	select {
	case <-db.failed: // the first renewal, at 2s
	case <-time.After(10 * time.Second):
		t.Fatal("Keep did not renew within 10s with a TTL of 6s")
	}
	time.Sleep(200 * time.Millisecond)
	if err := stop(); !errors.Is(err, boom) {
		t.Errorf("stop after a failed renewal: %v, want the renewal's error", err)
	}
}

// TestReclaimReturnsWhatItFreedByPort: Reclaim lists the leases it freed
// in port order, whatever order it found them in.
func TestReclaimReturnsWhatItFreedByPort(t *testing.T) {
	l := faulttest.Layer(t)
	ports := privatePorts(t, 41147, 41148, 41149)
	freeRows(t, ports...)
	t.Cleanup(func() { freeRows(t, ports...) })
	me := reap.Self()
	dead := reap.Owner{Host: me.Host, Boot: me.Boot, PIDNS: me.PIDNS, PID: 1 << 30, Start: 1}
	tbl := lease.New(l.DB(), ports, nil, lease.WithOwner(dead.String()), lease.WithTTL(time.Hour))
	for _, h := range []string{"TestDeadA", "TestDeadB", "TestDeadC"} {
		if _, err := tbl.Acquire(bounded(t), h); err != nil {
			t.Fatal(err)
		}
	}
	freed, err := lease.New(l.DB(), ports, nil).Reclaim(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, f := range freed {
		got = append(got, f.Port)
	}
	if len(got) != 3 || got[0] != 41147 || got[1] != 41148 || got[2] != 41149 {
		t.Errorf("Reclaim freed ports %v, want [41147 41148 41149] in that order", got)
	}
}
