package lease_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/contested/contested/faultlayer/faulttest"
	"github.com/contested/contested/faultlayer/lease"
	"github.com/contested/contested/internal/reap"
)

// countingDB passes every call to the real pool and counts the acquire
// attempts (the statement that takes a free or expired port).
type countingDB struct {
	lease.DB
	acquires atomic.Int64
}

func (c *countingDB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if strings.Contains(sql, "FOR UPDATE SKIP LOCKED") && strings.Contains(sql, "RETURNING") {
		c.acquires.Add(1)
	}
	return c.DB.QueryRow(ctx, sql, args...)
}

// TestAcquireBacksOffWhileItWaits: with every port held, a waiting Acquire
// tries again after a growing, jittered pause (20ms doubling to 250ms),
// not in a loop that hammers the shared database. In 1.5s that is at most
// 15 attempts even if every jitter draw is the shortest (about 8 as a
// rule); a pause that can come out negative or zero makes several dozen.
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
	db := &countingDB{DB: l.DB()}
	wctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	if _, err := lease.New(db, ports, nil, lease.WithoutReclaimOnWait()).Acquire(wctx, "TestWaiter"); !errors.Is(err, lease.ErrExhausted) {
		t.Fatalf("Acquire with port %d held: %v, want ErrExhausted", held.Port, err)
	}
	if n := db.acquires.Load(); n < 3 || n > 15 {
		t.Errorf("%d acquire attempts in 1.5s; want 3 to 15: a pause of 10-30ms, doubling up to 125-375ms", n)
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
