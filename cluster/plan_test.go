package cluster

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestPlanComesFromTheSeed: one seed draws one plan for every leg (a
// replay lands the fault at the same operation on the same replica for
// as long), the plans of a handful of seeds differ, and every plan keeps
// the fault mid-stream, on a replica that exists, for at least the leg's
// own hold.
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
				if p.after < n/6 || p.after > n/3 {
					t.Errorf("seed %d: armed after %d of %d operations; want between a sixth and a third", seed, p.after, n)
				}
				if p.replica < 0 || p.replica >= replicas {
					t.Errorf("seed %d: replica %d of %d", seed, p.replica, replicas)
				}
				if p.hold < l.hold || p.hold > l.hold+time.Second {
					t.Errorf("seed %d: held %v; want from the leg's %v to a second more", seed, p.hold, l.hold)
				}
				if r := p.record(l); r.Digest == "" || r.Summary != p.summary(l) || r.Timing != "schedule" {
					t.Errorf("seed %d: record schedule %+v", seed, r)
				}
				digests[p.record(l).Digest] = true
			}
			if len(digests) < 6 {
				t.Errorf("8 seeds drew %d distinct plans; want at least 6", len(digests))
			}
		})
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
	go func() { produced <- r.produce(context.Background(), n, &sent, healed) }()
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
