package lease_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/contested/contested/internal/faultlayer/faulttest"
	"github.com/contested/contested/internal/faultlayer/lease"
)

// TestALeaseIsNotTakenBeforeItExpires: a lease that expires in a moment is
// still held. Its holder's lease is set to expire 800 ms from now on the
// server's clock and another holder tries to acquire the port for 300 ms:
// it must be refused (ErrExhausted) and the lease left with its holder.
// Should a stalled machine reach the port only after the expiry, taking it
// is right; that trial says so by its lease's start (at or after the old
// expiry) and is tried again.
func TestALeaseIsNotTakenBeforeItExpires(t *testing.T) {
	l := faulttest.Layer(t)
	ctx := context.Background()
	ports := privatePorts(t, 41160)
	tbl := lease.New(l.DB(), ports, nil, lease.WithoutReclaimOnWait())
	for trial := 1; trial <= 5; trial++ {
		freeRows(t, ports...)
		held, err := tbl.Acquire(bounded(t), "TestExpiryHolder")
		if err != nil {
			t.Fatal(err)
		}
		var expires time.Time
		if err := l.DB().QueryRow(ctx, `UPDATE `+lease.TableName+` SET expires_at = clock_timestamp() + interval '800 milliseconds'
			WHERE port = $1 AND epoch = $2 RETURNING expires_at`, held.Port, held.Epoch).Scan(&expires); err != nil {
			t.Fatal(err)
		}
		actx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		took, err := tbl.Acquire(actx, "TestExpiryTaker")
		cancel()
		if errors.Is(err, lease.ErrExhausted) {
			if r := readRow(t, held.Port); r.Holder == nil || *r.Holder != held.Holder || r.Epoch != held.Epoch {
				t.Fatalf("after a refused acquire the row is %+v; want it still %s's at epoch %d", r, held.Holder, held.Epoch)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if took.LeasedAt.Before(expires) {
			t.Fatalf("trial %d: %s took port %d at %s, before %s's lease expired at %s",
				trial, took.Holder, took.Port, took.LeasedAt.Format(time.RFC3339Nano), held.Holder, expires.Format(time.RFC3339Nano))
		}
		t.Logf("trial %d: the machine reached the port only after the lease expired (%s ≥ %s); trying again", trial, took.LeasedAt, expires)
	}
	t.Fatal("in five trials the other holder never tried for the port before the lease expired: the machine stalls for more than 800 ms")
}
