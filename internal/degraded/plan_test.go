package degraded

import (
	"testing"
	"time"
)

// TestPlanComesFromTheSeed: one seed gives one plan; seeds give distinct
// plans (so a hardening budget of seeds is one of schedules); every
// latency is above the front's timeout, from 1.5 to 2.5 times it; amounts
// are distinct per cell; a cell's draw does not depend on which cells run.
func TestPlanComesFromTheSeed(t *testing.T) {
	all := Matrix()
	timeout := time.Second
	if a, b := newPlan(42, all, timeout), newPlan(42, all, timeout); a.Digest != b.Digest || a.Summary != b.Summary {
		t.Fatalf("seed 42 gave two plans: %s and %s", a.Digest, b.Digest)
	}
	digests := map[string]bool{}
	for seed := int64(1); seed <= 8; seed++ {
		p := newPlan(seed, all, timeout)
		digests[p.Digest] = true
		amounts := map[int64]string{}
		for _, c := range all {
			if lat := p.Latency(c); lat < timeout*3/2 || lat > timeout*5/2 {
				t.Errorf("seed %d, %s: latency %s, want 1.5s to 2.5s", seed, c.ID(), lat)
			}
			if other, dup := amounts[p.Amount(c)]; dup {
				t.Errorf("seed %d: %s and %s both move %d", seed, other, c.ID(), p.Amount(c))
			}
			amounts[p.Amount(c)] = c.ID()
		}
	}
	if len(digests) < 6 {
		t.Errorf("8 seeds drew %d distinct plans, want at least 6", len(digests))
	}
	one := []Cell{all[5]}
	if a, b := newPlan(7, all, timeout), newPlan(7, one, timeout); a.Amount(all[5]) != b.Amount(all[5]) || a.Latency(all[5]) != b.Latency(all[5]) {
		t.Errorf("cell %s drew differently when it ran alone: a replay of one cell would not be the same cell", all[5].ID())
	}
}
