package contract

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/faultlayer/levers"
	"github.com/contested/contested/internal/gate/verdict"
)

// scheduled is a passing burst run whose two records carry schedule
// digest.
func scheduled(seed int64, digest string) SeedRun {
	var recs []faultrecord.Record
	for i := range 2 {
		r := rec("burst", true, held)
		r.Seed = seed
		r.Schedule = &faultrecord.Schedule{Digest: digest, Summary: "burst level 1: …", Window: i + 1, Timing: "test"}
		recs = append(recs, r)
	}
	run := runOf(recs, nil, []string{"TestStock/burst"}, nil, nil)
	run.Seed = seed
	return run
}

// TestAHardeningBudgetIsABudgetOfSchedules: three seeds that ran three
// schedules are PASS-hardening; three that ran one schedule are no
// evidence of hardening (INCONCLUSIVE, the schedule not seeded) and turn
// the surface INCONCLUSIVE; two schedules of three seeds are PASS-smoke.
// The leg counts its distinct schedules.
func TestAHardeningBudgetIsABudgetOfSchedules(t *testing.T) {
	tests := []struct {
		name      string
		digests   []string
		want      verdict.Verdict
		contract  verdict.Contract
		schedules int
		says      string
	}{
		{"three schedules", []string{"a", "b", "c"}, verdict.PassHardening, verdict.Green, 3, "3 distinct schedules"},
		{"one schedule", []string{"a", "a", "a"}, verdict.InconclusiveOracleTooWeak, verdict.Inconclusive, 1, "3 seeds ran one schedule (a): the schedule is not seeded"},
		{"two schedules", []string{"a", "b", "a"}, verdict.PassSmoke, verdict.Green, 2, "hardening needs 3 distinct schedules"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var runs []SeedRun
			for i, d := range tt.digests {
				runs = append(runs, scheduled(int64(i+1), d))
			}
			legs, c := Judge(surface(), Evidence{Level: 1, Runs: runs})
			burst := legs[0]
			if burst.Verdict != tt.want || c != tt.contract || burst.Schedules != tt.schedules || !strings.Contains(burst.Reason, tt.says) {
				t.Errorf("burst %s (%s), %d schedules, contract %s; want %s, %d schedules, %s, saying %q",
					burst.Verdict, burst.Reason, burst.Schedules, c, tt.want, tt.schedules, tt.contract, tt.says)
			}
			if burst.Thin {
				t.Errorf("6 fired faults flagged thin")
			}
		})
	}
}

// TestPickSeedsSpreadsTheSchedules: the picked seeds run distinct
// schedules and cover the levers' choices a random pick may miss: two
// seeds of a reset leg reset both upstream and downstream, three at level
// 2 also both at once; the same draws pick the same seeds.
func TestPickSeedsSpreadsTheSchedules(t *testing.T) {
	for _, tt := range []struct {
		n, level int
		want     []string
	}{
		{2, 1, []string{"reset:downstream", "reset:upstream"}},
		{3, 2, []string{"reset:both", "reset:downstream", "reset:upstream"}},
	} {
		for trial := range 20 {
			r := rand.New(rand.NewPCG(uint64(trial), 1))
			seeds := PickSeeds(tt.n, []string{"reset", "disconnect"}, tt.level, r.Int64N)
			if len(seeds) != tt.n {
				t.Fatalf("picked %v, want %d seeds", seeds, tt.n)
			}
			digests := map[string]bool{}
			for _, s := range seeds {
				digests[levers.NewSchedule(levers.Reset, s, levers.Scope{Level: tt.level}).Digest()] = true
			}
			if len(digests) != tt.n {
				t.Errorf("seeds %v ran %d schedules", seeds, len(digests))
			}
			if got := Covers(seeds, []string{"reset"}, tt.level); !slices.Equal(got, tt.want) {
				t.Errorf("trial %d: %d seeds at level %d cover %v, want %v", trial, tt.n, tt.level, got, tt.want)
			}
			again := PickSeeds(tt.n, []string{"reset", "disconnect"}, tt.level, rand.New(rand.NewPCG(uint64(trial), 1)).Int64N)
			if !slices.Equal(seeds, again) {
				t.Errorf("the same draws picked %v and %v", seeds, again)
			}
		}
	}
}

// TestPickSeedsDrawsSixteenCandidatesPerSeed: PickSeeds draws 16
// candidates for each seed it picks, each below 2^53 so that it is exact
// in a JSON number, and every seed it picks is positive: seed 0 means a run
// without a seed of its own.
func TestPickSeedsDrawsSixteenCandidatesPerSeed(t *testing.T) {
	for n := 1; n <= 3; n++ {
		r := rand.New(rand.NewPCG(uint64(n), 2))
		draws := 0
		seeds := PickSeeds(n, []string{"reset", "disconnect"}, 2, func(bound int64) int64 {
			draws++
			if bound != 1<<53-1 {
				t.Fatalf("drew below %d, want below 2^53-1", bound)
			}
			return r.Int64N(bound)
		})
		if draws != 16*n {
			t.Errorf("%d seeds: %d draws, want %d", n, draws, 16*n)
		}
		for _, s := range seeds {
			if s < 1 || s > 1<<53-1 {
				t.Errorf("%d seeds: picked %d, want 1 to 2^53-1", n, s)
			}
		}
	}
}

// TestPickSeedsNeverRepeatsASeed: when every candidate repeats a schedule
// already picked (here no leg, so every seed runs the same), each further
// seed is a fresh draw, never a candidate picked before.
func TestPickSeedsNeverRepeatsASeed(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 3))
	seeds := PickSeeds(3, nil, 1, func(bound int64) int64 {
		if bound != 1<<53-1 {
			t.Fatalf("drew below %d, want below 2^53-1", bound)
		}
		return r.Int64N(bound)
	})
	if len(seeds) != 3 || seeds[0] == seeds[1] || seeds[1] == seeds[2] || seeds[0] == seeds[2] {
		t.Errorf("picked %v, want three different seeds", seeds)
	}
	for _, s := range seeds {
		if s < 1 || s > 1<<53-1 {
			t.Errorf("picked %d, want 1 to 2^53-1", s)
		}
	}
	// Of candidates that add as many choices (here none), the first drawn wins.
	next := int64(0)
	if got := PickSeeds(1, nil, 1, func(int64) int64 { next++; return next }); !slices.Equal(got, []int64{2}) {
		t.Errorf("picked %v of the candidates 2 to 17, want the first drawn, 2", got)
	}
}
