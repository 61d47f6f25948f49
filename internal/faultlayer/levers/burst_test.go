package levers

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// TestBurst: armed with a shape, the plan perturbs deliveries and says so;
// a consumer that processes a perturbed delivery proves it fired, one that
// drops them does not, and a burst of no messages, or one that perturbs
// nothing, is not in place.
func TestBurst(t *testing.T) {
	ctx := context.Background()
	f := arm(t, Burst, Target{Burst: BurstTarget{Seed: 42, Messages: 40}})
	in, what := f.Injector()
	if !in || !strings.HasPrefix(what, "seeded burst (seed 42): ") {
		t.Fatalf("injector: %v %q", in, what)
	}
	d := f.(Delivering).Deliveries()
	if !reflect.DeepEqual(d, Plan(42, 40, BurstPlan{})) {
		t.Fatal("the armed burst is not Plan's")
	}
	consumed, dropped := 0, 0 // perturbed deliveries a consumer processed, or dropped
	for _, x := range d {
		if x.Kind != Original {
			consumed++
		}
	}
	if err := f.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		proof Proof
		want  error
	}{
		{"a consumer that processes every delivery", Proof{Injected: in, Victim: consumed}, nil},
		{"a consumer that drops what is perturbed", Proof{Injected: in, Victim: dropped}, ErrUnseen},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Burst.Fired(tt.proof); !errors.Is(got, tt.want) || (got == nil) != (tt.want == nil) {
				t.Fatalf("Fired(%+v) = %v, want %v", tt.proof, got, tt.want)
			}
		})
	}
	for name, tg := range map[string]Target{
		"no messages":                  {},
		"a plan that perturbs nothing": {Burst: BurstTarget{Seed: 42, Messages: 40, Plan: BurstPlan{DuplicateRate: 1e-9, Window: 1}}},
	} {
		t.Run(name, func(t *testing.T) {
			f := arm(t, Burst, tg)
			in, what := f.Injector()
			if err := Burst.Fired(Proof{Injected: in, Victim: 1}); !errors.Is(err, ErrNotInPlace) {
				t.Fatalf("Fired = %v, want ErrNotInPlace (injector: %q)", err, what)
			}
		})
	}
}

// TestPlanIsPinned: a seed replays the very burst it gave before the
// generator moved here; a replay that does not replay is worse than none.
func TestPlanIsPinned(t *testing.T) {
	tests := []struct {
		seed int64
		n    int
		plan BurstPlan
		want string
	}{
		{42, 24, BurstPlan{}, "1o 4o 5o 0r 6o 3r 8o 2r 10o 9r 7r 0d 12o 10d 14o 11r 16o 15r 16d 13r 12d 5d 17o 19o 19d 18r 20o 22o 21r 23o 21d 20d"},
		{7, 16, BurstPlan{DuplicateRate: 0.5, Window: 3}, "0o 1o 3o 2r 4o 4d 6o 5r 2d 7o 9o 8r 5d 11o 9d 10r 12o 11d 13o 14o 13d 15o"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.seed), func(t *testing.T) {
			var parts []string
			for _, d := range Plan(tt.seed, tt.n, tt.plan) {
				parts = append(parts, fmt.Sprintf("%d%c", d.Index, "odr"[d.Kind]))
			}
			if got := strings.Join(parts, " "); got != tt.want {
				t.Errorf("Plan(%d, %d, %+v) =\n%s\nwant\n%s", tt.seed, tt.n, tt.plan, got, tt.want)
			}
		})
	}
}

func TestPlanIsAFunctionOfTheSeed(t *testing.T) {
	a1 := Plan(42, 100, BurstPlan{})
	a2 := Plan(42, 100, BurstPlan{})
	b := Plan(43, 100, BurstPlan{})
	if !reflect.DeepEqual(a1, a2) {
		t.Fatal("the same seed gave two different bursts")
	}
	if reflect.DeepEqual(a1, b) {
		t.Fatal("seeds 42 and 43 gave the same burst")
	}
	for _, d := range [][]Delivery{a1, b} {
		seen := map[int]int{}
		for _, x := range d {
			seen[x.Index]++
		}
		for i := range 100 {
			if seen[i] == 0 {
				t.Fatalf("message %d was never delivered", i)
			}
		}
		if dups, re := burstStats(d); dups == 0 || re == 0 {
			t.Errorf("burst has %d duplicates and %d reordered deliveries; want both", dups, re)
		}
	}
}

func TestPlanKinds(t *testing.T) {
	d := Plan(7, 50, BurstPlan{DuplicateRate: 0.5})
	first := map[int]bool{}
	maxSeen := -1
	for _, x := range d {
		switch {
		case first[x.Index] && x.Kind != Duplicate:
			t.Errorf("second delivery of %d is %s, want duplicate", x.Index, x.Kind)
		case !first[x.Index] && x.Index < maxSeen && x.Kind != Reordered:
			t.Errorf("late first delivery of %d is %s, want reordered", x.Index, x.Kind)
		case !first[x.Index] && x.Index > maxSeen && x.Kind != Original:
			t.Errorf("in-order delivery of %d is %s, want original", x.Index, x.Kind)
		}
		first[x.Index] = true
		maxSeen = max(maxSeen, x.Index)
	}
}

// checkTable: the levels table's burst row, its duplicates and reordering
// heavier at each level.
func (p BurstParams) checkTable(t *testing.T, seed int64, w Window) {
	t.Helper()
	r := map[Kind][3]float64{Base: {0.20, 0.35, 4}, More: {0.40, 0.60, 8}, Recovery: {0.60, 0.80, 16}}[w.Kind]
	if p.Plan.DuplicateRate < r[0] || p.Plan.DuplicateRate > r[1] || p.Plan.Window < int(r[2]) || p.Plan.Window > 2*int(r[2]) {
		t.Errorf("seed %d: %s burst %s outside %.0f-%.0f%% duplicates within %d-%d", seed, w.Kind, p, r[0]*100, r[1]*100, int(r[2]), 2*int(r[2]))
	}
}
