package lease_test

import (
	"context"
	"errors"
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

// freeRows gives the rows of ports back to nobody, as a fresh layer has
// them: a test that reruns against a shared layer starts from the same
// state. The first port is left never released, so it is Acquire's first
// choice; the others were released just now.
func freeRows(t *testing.T, ports ...int) {
	t.Helper()
	_, err := faulttest.Layer(t).DB().Exec(context.Background(), `UPDATE `+lease.TableName+`
		SET holder = NULL, owner = NULL, run_id = NULL, expires_at = NULL, token = NULL,
		    released_at = CASE WHEN port = $2 THEN NULL ELSE clock_timestamp() END
		WHERE port = ANY($1::int[])`, ports, ports[0])
	if err != nil {
		t.Fatal(err)
	}
}

// bounded is a context for one Acquire that should return at once: when
// it does not (the table is broken), the test fails with the deadline
// instead of hanging the package until go test's own timeout.
func bounded(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// row is one lease row as the table holds it.
type row struct {
	Holder  *string
	Epoch   int64
	Expired *bool
}

func readRow(t *testing.T, port int) row {
	t.Helper()
	var r row
	err := faulttest.Layer(t).DB().QueryRow(context.Background(), `SELECT holder, epoch, expires_at < clock_timestamp()
		FROM `+lease.TableName+` WHERE port = $1`, port).Scan(&r.Holder, &r.Epoch, &r.Expired)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestTheSameHolderWithAnOldEpochIsFenced: a holder name is not an
// identity (a test reruns under its own name, a leg leases twice), so the
// epoch alone must fence a lease the same holder took again. Each lease
// is also fenced by its holder: the right epoch under another name is
// refused, and so is a lease that was released.
func TestTheSameHolderWithAnOldEpochIsFenced(t *testing.T) {
	l := faulttest.Layer(t)
	ctx := context.Background()
	ports := privatePorts(t, 41120)
	freeRows(t, ports...)
	tbl := lease.New(l.DB(), ports, nil, lease.WithoutReclaimOnWait())

	old, err := tbl.Acquire(bounded(t), "TestSameHolder")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Release(ctx, old); err != nil {
		t.Fatal(err)
	}
	cur, err := tbl.Acquire(bounded(t), "TestSameHolder")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tbl.Release(context.Background(), cur) })
	if cur.Port != old.Port || cur.Holder != old.Holder || cur.Epoch <= old.Epoch {
		t.Fatalf("re-lease: port %d epoch %d holder %s after port %d epoch %d holder %s; want the same port and holder, a later epoch",
			cur.Port, cur.Epoch, cur.Holder, old.Port, old.Epoch, old.Holder)
	}
	before := readRow(t, cur.Port)

	if _, err := tbl.Renew(ctx, old); !errors.Is(err, lease.ErrFenced) {
		t.Errorf("renew by the same holder with the old epoch %d: err = %v, want ErrFenced", old.Epoch, err)
	}
	if _, err := tbl.Release(ctx, old); !errors.Is(err, lease.ErrFenced) {
		t.Errorf("release by the same holder with the old epoch %d: err = %v, want ErrFenced", old.Epoch, err)
	}
	forged := cur
	forged.Holder = "TestSomeoneElse"
	if _, err := tbl.Renew(ctx, forged); !errors.Is(err, lease.ErrFenced) {
		t.Errorf("renew of the current epoch under another holder: err = %v, want ErrFenced", err)
	}
	if _, err := tbl.Release(ctx, forged); !errors.Is(err, lease.ErrFenced) {
		t.Errorf("release of the current epoch under another holder: err = %v, want ErrFenced", err)
	}
	if after := readRow(t, cur.Port); after.Holder == nil || *after.Holder != cur.Holder || after.Epoch != cur.Epoch {
		t.Fatalf("the fenced calls changed the current lease: row %+v, want holder %s epoch %d", after, cur.Holder, cur.Epoch)
	} else if before.Expired == nil || after.Expired == nil {
		t.Fatalf("the current lease lost its expiry: before %+v, after %+v", before, after)
	}

	if _, err := tbl.Renew(ctx, cur); err != nil {
		t.Errorf("renew by the current holder and epoch: %v", err)
	}
	if _, err := tbl.Release(ctx, cur); err != nil {
		t.Errorf("release by the current holder and epoch: %v", err)
	}
	if _, err := tbl.Renew(ctx, cur); !errors.Is(err, lease.ErrFenced) {
		t.Errorf("renew of a released lease: err = %v, want ErrFenced", err)
	}
	if r := readRow(t, cur.Port); r.Holder != nil || r.Expired != nil {
		t.Errorf("a renew after the release revived the row: %+v", r)
	}
}

// TestALockedFreeRowDoesNotStallAcquire: another transaction holds the row
// lock of the free port Acquire would take first (a concurrent acquire or
// reclaim mid-statement). Acquire must skip it and take the other free
// port, not wait for the lock: the lock is held until Acquire has returned,
// so an Acquire that waits for it can only end at its context's deadline.
func TestALockedFreeRowDoesNotStallAcquire(t *testing.T) {
	l := faulttest.Layer(t)
	ctx := context.Background()
	ports := privatePorts(t, 41121, 41122)
	freeRows(t, ports...) // 41121 never released: Acquire's first choice
	tx, err := l.DB().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var locked int
	if err := tx.QueryRow(ctx, `SELECT port FROM `+lease.TableName+` WHERE port = $1 FOR UPDATE`, ports[0]).Scan(&locked); err != nil {
		t.Fatal(err)
	}

	tbl := lease.New(l.DB(), ports, nil, lease.WithoutReclaimOnWait())
	actx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	got, err := tbl.Acquire(actx, "TestLockedRow")
	if err != nil {
		t.Fatalf("Acquire while port %d's free row is locked by another transaction: %v; want port %d, taken without waiting for the lock",
			locked, err, ports[1])
	}
	defer tbl.Release(ctx, got)
	if got.Port != ports[1] {
		t.Fatalf("Acquire returned port %d while port %d was locked; want %d", got.Port, locked, ports[1])
	}
}

// TestReclaimWithAFailingCleanerKeepsTheLease: a lease whose owner is gone
// is reclaimable, but its proxy must be deleted before the port is freed.
// When the deletion fails, the lease stays exactly as it was (same holder,
// same epoch), so the next reclaim tries again and no acquirer is handed a
// port with someone's proxy still on it.
func TestReclaimWithAFailingCleanerKeepsTheLease(t *testing.T) {
	l := faulttest.Layer(t)
	ctx := context.Background()
	ports := privatePorts(t, 41123)
	freeRows(t, ports...)
	me := reap.Self()
	dead := reap.Owner{Host: me.Host, Boot: me.Boot, PIDNS: me.PIDNS, PID: 1 << 30, Start: 1}
	held, err := lease.New(l.DB(), ports, nil, lease.WithOwner(dead.String()), lease.WithTTL(time.Hour)).Acquire(bounded(t), "TestDeadHolder")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { freeRows(t, ports...) })

	boom := errors.New("toxiproxy API unreachable")
	var calls []int
	failing := lease.New(l.DB(), ports, lease.CleanerFunc(func(_ context.Context, port int) error {
		calls = append(calls, port)
		return boom
	}))
	freed, err := failing.Reclaim(ctx)
	if !errors.Is(err, boom) {
		t.Errorf("Reclaim with a failing cleaner: err = %v, want the cleaner's error", err)
	}
	if len(freed) != 0 {
		t.Errorf("Reclaim says it freed %+v although the proxy could not be deleted", freed)
	}
	if len(calls) != 1 || calls[0] != held.Port {
		t.Fatalf("cleaner calls %v, want one for port %d: the dead owner's lease is reclaimable", calls, held.Port)
	}
	if r := readRow(t, held.Port); r.Holder == nil || *r.Holder != held.Holder || r.Epoch != held.Epoch {
		t.Fatalf("after a failed proxy deletion the row is %+v; want it still held by %s at epoch %d", r, held.Holder, held.Epoch)
	}

	// The next reclaim, with a working cleaner, frees it.
	ok := lease.New(l.DB(), ports, lease.CleanerFunc(func(context.Context, int) error { return nil }))
	freed, err = ok.Reclaim(ctx)
	if err != nil || len(freed) != 1 || freed[0].Port != held.Port {
		t.Fatalf("second Reclaim: freed %+v, err %v; want port %d freed", freed, err, held.Port)
	}
}

// TestAnExpiredLeaseWhoseProxyCannotBeDeletedIsNotHandedOutAsFree: an
// Acquire that takes over an expired lease and cannot delete its leftover
// proxy gives the port back still expired and still naming the abandoned
// holder, so the next Acquire deletes the proxy before using the port,
// rather than taking it as a clean free port.
func TestAnExpiredLeaseWhoseProxyCannotBeDeletedIsNotHandedOutAsFree(t *testing.T) {
	l := faulttest.Layer(t)
	ctx := context.Background()
	ports := privatePorts(t, 41124)
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
	if _, err := failing.Acquire(bounded(t), "TestUnlucky"); !errors.Is(err, boom) {
		t.Fatalf("Acquire over an expired lease whose proxy cannot be deleted: err = %v, want the cleaner's error", err)
	}
	if r := readRow(t, abandoned.Port); r.Holder == nil || r.Expired == nil || !*r.Expired {
		t.Fatalf("after the failed takeover the row is %+v; want it still held and expired, so the next taker clears it", r)
	}

	var cleared []int
	next := lease.New(l.DB(), ports, lease.CleanerFunc(func(_ context.Context, port int) error {
		cleared = append(cleared, port)
		return nil
	}), lease.WithoutReclaimOnWait())
	got, err := next.Acquire(bounded(t), "TestNext")
	if err != nil {
		t.Fatal(err)
	}
	defer next.Release(ctx, got)
	if len(cleared) != 1 || cleared[0] != got.Port || got.Reclaimed != abandoned.Holder {
		t.Fatalf("next Acquire took port %d (reclaimed from %q) after clearing %v; want the leftover proxy on %d deleted first, reclaimed from %s",
			got.Port, got.Reclaimed, cleared, abandoned.Port, abandoned.Holder)
	}
}

// spyDB passes every call to the real pool and tells renewals apart: each
// completed renewal (the UPDATE that sets expires_at alone) is sent on
// renewed with its error, after noting whether the lease was still
// unexpired when the renewal started. Once hold is set, a renewal that
// completed waits for its context to end before it returns its answer:
// the order of a stop that comes while a renewal's answer is on its way.
type spyDB struct {
	lease.DB
	port    int
	renewed chan renewal
	hold    atomic.Bool
}

type renewal struct {
	unexpired bool
	err       error
}

func (s *spyDB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if !strings.Contains(sql, "SET expires_at = clock_timestamp()") || strings.Contains(sql, "holder = NULL") {
		return s.DB.QueryRow(ctx, sql, args...)
	}
	var unexpired *bool
	_ = s.DB.QueryRow(ctx, `SELECT expires_at > clock_timestamp() FROM `+lease.TableName+` WHERE port = $1`, s.port).Scan(&unexpired)
	return spyRow{s.DB.QueryRow(ctx, sql, args...), ctx, s, unexpired != nil && *unexpired}
}

type spyRow struct {
	pgx.Row
	ctx       context.Context
	s         *spyDB
	unexpired bool
}

func (r spyRow) Scan(dest ...any) error {
	err := r.Row.Scan(dest...)
	r.s.renewed <- renewal{r.unexpired, err}
	if r.s.hold.Load() {
		<-r.ctx.Done()
	}
	return err
}

// TestKeepRenewsBeforeExpiryAndReportsAFence: Keep renews a held lease
// before it expires (each renewal finds it unexpired), and when the lease
// is lost (here released under it) the next renewal's ErrFenced is what
// stop returns, so the leg learns it ran without owning its port, even
// when stop is called while that renewal's answer is on its way (the end
// of a leg racing the renewal). The renewals are observed, and that order
// made, through a pass-through of the real database, so nothing here
// depends on how long a tick takes.
func TestKeepRenewsBeforeExpiryAndReportsAFence(t *testing.T) {
	l := faulttest.Layer(t)
	ctx := context.Background()
	ports := privatePorts(t, 41125)
	freeRows(t, ports...)
	spy := &spyDB{DB: l.DB(), port: ports[0], renewed: make(chan renewal, 16)}
	tbl := lease.New(spy, ports, nil, lease.WithTTL(3*time.Second), lease.WithoutReclaimOnWait())
	held, err := tbl.Acquire(bounded(t), "TestKept")
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release := func() { once.Do(func() { lease.New(l.DB(), ports, nil).Release(ctx, held) }) }
	t.Cleanup(release)
	stop := tbl.Keep(ctx, held)
	wait := func(what string) renewal {
		t.Helper()
		select {
		case r := <-spy.renewed:
			return r
		case <-time.After(time.Minute):
			stop()
			t.Fatalf("no renewal %s within a minute", what)
		}
		return renewal{}
	}
	for i := range 2 {
		r := wait("of the held lease")
		if r.err != nil || !r.unexpired {
			stop()
			t.Fatalf("renewal %d: err %v, lease unexpired when it started %v; want a renewal before expiry", i+1, r.err, r.unexpired)
		}
	}
	spy.hold.Store(true)
	release()
	if r := wait("after the release"); !errors.Is(r.err, pgx.ErrNoRows) {
		t.Errorf("the renewal after the release matched a row (err %v)", r.err)
	}
	if err := stop(); !errors.Is(err, lease.ErrFenced) {
		t.Fatalf("stop after the lease was lost: %v, want ErrFenced", err)
	}
}

// TestAcquireReclaimsADeadOwnersLeaseWhileItWaits: every port is held,
// unexpired, by an owner that is provably gone. An Acquire told not to
// reclaim while it waits (a history test's table) leaves the lease alone
// and runs out of time; a default Acquire frees it, deleting its proxy
// first, and gets the port long before the lease would expire.
func TestAcquireReclaimsADeadOwnersLeaseWhileItWaits(t *testing.T) {
	l := faulttest.Layer(t)
	ctx := context.Background()
	ports := privatePorts(t, 41126)
	freeRows(t, ports...)
	t.Cleanup(func() { freeRows(t, ports...) })
	me := reap.Self()
	dead := reap.Owner{Host: me.Host, Boot: me.Boot, PIDNS: me.PIDNS, PID: 1 << 30, Start: 1}
	held, err := lease.New(l.DB(), ports, nil, lease.WithOwner(dead.String()), lease.WithTTL(time.Hour)).Acquire(bounded(t), "TestDeadHolder")
	if err != nil {
		t.Fatal(err)
	}
	var cleared []int
	cleaner := lease.CleanerFunc(func(_ context.Context, port int) error {
		cleared = append(cleared, port)
		return nil
	})

	// Long enough for the eighth attempt, where a waiting Acquire reclaims.
	wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if got, err := lease.New(l.DB(), ports, cleaner, lease.WithoutReclaimOnWait()).Acquire(wctx, "TestPatient"); !errors.Is(err, lease.ErrExhausted) {
		t.Fatalf("Acquire without reclaim on wait: got port %d, err %v; want ErrExhausted, the dead owner's lease left alone", got.Port, err)
	}
	if r := readRow(t, held.Port); len(cleared) != 0 || r.Holder == nil || r.Epoch != held.Epoch {
		t.Fatalf("Acquire without reclaim on wait touched the lease: row %+v, cleared %v", r, cleared)
	}

	got, err := lease.New(l.DB(), ports, cleaner).Acquire(bounded(t), "TestImpatient")
	if err != nil {
		t.Fatalf("Acquire with every port held by a dead owner: %v; want the port, reclaimed while waiting", err)
	}
	defer lease.New(l.DB(), ports, nil).Release(ctx, got)
	if got.Port != held.Port || got.Epoch <= held.Epoch || len(cleared) != 1 || cleared[0] != held.Port {
		t.Fatalf("got port %d epoch %d after clearing %v; want port %d at a later epoch than %d, its proxy deleted first",
			got.Port, got.Epoch, cleared, held.Port, held.Epoch)
	}
}
