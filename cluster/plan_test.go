package cluster

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/contested/contested/internal/faultlayer/levers"
)

// TestPlanComesFromTheSeed: one seed draws one plan for every leg (a
// replay lands each fault at the same operation on the same replica for
// as long), the plans of a handful of seeds differ, and every strike stays
// mid-stream, before the held-back last quarter, on a replica that exists,
// for at least the leg's own hold.
func TestPlanComesFromTheSeed(t *testing.T) {
	const n, replicas = 240, 3
	for _, l := range legs {
		t.Run(l.name, func(t *testing.T) {
			digests := map[string]bool{}
			for seed := int64(1); seed <= 8; seed++ {
				p := planLeg(l, seed, 1, n, replicas)
				again := planLeg(l, seed, 1, n, replicas)
				if p.summary(l) != again.summary(l) {
					t.Fatalf("seed %d drew two plans: %q and %q", seed, p.summary(l), again.summary(l))
				}
				if len(p.strikes) != 1 {
					t.Fatalf("seed %d at level 1: %d strikes, want 1", seed, len(p.strikes))
				}
				st := p.strikes[0]
				if st.after < n/6 || st.after > n/3 {
					t.Errorf("seed %d: armed after %d of %d operations; want between a sixth and a third", seed, st.after, n)
				}
				if st.replica < 0 || st.replica >= replicas || (!l.one && st.replica != 0) {
					t.Errorf("seed %d: replica %d of %d", seed, st.replica, replicas)
				}
				if st.hold < l.hold || st.hold > l.hold+time.Second {
					t.Errorf("seed %d: held %v; want from the leg's %v to a second more", seed, st.hold, l.hold)
				}
				if r := p.record(l, 0); r.Digest == "" || r.Summary != p.summary(l) || r.Timing != "schedule" || r.Window != 1 {
					t.Errorf("seed %d: record schedule %+v", seed, r)
				}
				digests[p.record(l, 0).Digest] = true
			}
			if len(digests) < 6 {
				t.Errorf("8 seeds drew %d distinct plans; want at least 6", len(digests))
			}
		})
	}
}

// TestLevelsAddStrikes: from one seed, level 2 keeps level 1's strike and
// adds one in the stream's third quarter; level 3 also strikes the
// same replica again as soon as the first strike healed, while it
// recovers. Every strike's record carries the whole plan's digest and its
// own window number.
func TestLevelsAddStrikes(t *testing.T) {
	const n, replicas = 240, 3
	for _, l := range legs {
		for seed := int64(1); seed <= 8; seed++ {
			p1, p2, p3 := planLeg(l, seed, 1, n, replicas), planLeg(l, seed, 2, n, replicas), planLeg(l, seed, 3, n, replicas)
			if len(p2.strikes) != 2 || len(p3.strikes) != 3 {
				t.Fatalf("%s seed %d: %d strikes at level 2 and %d at level 3; want 2 and 3", l.name, seed, len(p2.strikes), len(p3.strikes))
			}
			if p2.strikes[0] != p1.strikes[0] || p3.strikes[0] != p1.strikes[0] {
				t.Errorf("%s seed %d: the higher levels moved level 1's strike: %+v, %+v, %+v", l.name, seed, p1.strikes[0], p2.strikes[0], p3.strikes[0])
			}
			more := p2.strikes[1]
			if h := holds(n, 2); more.after <= h[0] || more.after >= h[1] || more.kind != levers.More || p1.strikes[0].after >= h[0] {
				t.Errorf("%s seed %d: level 2's strike %+v after level 1's at %d; want each between the holds before and after it %v", l.name, seed, more, p1.strikes[0].after, h)
			}
			if p2.phases() != 2 || p3.phases() != 2 || p3.phase(1) != 0 || p3.phase(2) != 1 {
				t.Errorf("%s seed %d: phases %d and %d; the recovery strike is in phase %d", l.name, seed, p2.phases(), p3.phases(), p3.phase(1))
			}
			rec := p3.strikes[1]
			if rec.after != -1 || rec.replica != p3.strikes[0].replica || rec.kind != levers.Recovery {
				t.Errorf("%s seed %d: level 3's recovery strike %+v; want at once after the first heal, on replica %d", l.name, seed, rec, p3.strikes[0].replica)
			}
			for i := range p3.strikes {
				if r := p3.record(l, i); r.Window != i+1 || r.Digest != p3.record(l, 0).Digest {
					t.Errorf("%s seed %d: strike %d's record schedule %+v", l.name, seed, i+1, r)
				}
			}
			if p1.record(l, 0).Digest == p2.record(l, 0).Digest || p2.record(l, 0).Digest == p3.record(l, 0).Digest {
				t.Errorf("%s seed %d: two levels share one digest", l.name, seed)
			}
		}
	}
}

// opsWorkload counts the operations performed, for produce's test.
type opsWorkload struct {
	Workload
	done atomic.Int64
}

func (w *opsWorkload) Op(context.Context, int) error { w.done.Add(1); return nil }

// TestTheLastQuarterWaitsForTheHeal: however long the struck replicas take
// to come back, the stream keeps its last quarter until they have, so a
// restarted replica always finds work to take up.
func TestTheLastQuarterWaitsForTheHeal(t *testing.T) {
	const n = 40
	w := &opsWorkload{}
	r := &rig{work: w}
	healed := make(chan struct{})
	produced := make(chan error, 1)
	var sent atomic.Int64
	go func() {
		produced <- r.produce(context.Background(), n, streamTime, &sent, holds(n, 1), []chan struct{}{healed})
	}()
	deadline := time.Now().Add(time.Minute)
	for w.done.Load() < n-n/4 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // time for operations past the quarter, were any sent
	if got := w.done.Load(); got != n-n/4 {
		t.Fatalf("%d operations before the heal; want %d, the last quarter held back", got, n-n/4)
	}
	close(healed)
	if err := <-produced; err != nil || w.done.Load() != n {
		t.Fatalf("after the heal: %d operations, %v; want all %d", w.done.Load(), err, n)
	}
}
