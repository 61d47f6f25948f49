package cluster

import (
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
