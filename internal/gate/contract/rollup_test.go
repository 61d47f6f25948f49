package contract

import (
	"strings"
	"testing"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/gate/verdict"
	"github.com/contested/contested/internal/registry"
)

// oneLegRegistry registers m.stock with the burst leg alone.
func oneLegRegistry(t *testing.T) *registry.Registry {
	t.Helper()
	reg, err := registry.Parse("contested-surfaces.toml", []byte(`schema = 1
[gate]
recording_classes = ["store"]
[[surface]]
id = "m.stock"
class = "store"
owner = "stock-team"
behavior = "b"
oracle = "exactly-once"
legs = ["burst"]
tests = ["TestStock"]
package = "./stock"
`))
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// TestAWeakLegIsNeverAPass: a leg whose fault was armed and not proven,
// that reported no oracle, whose oracle checked part of the run, or whose
// oracle could not decide, in a battery whose tests all passed, is not a
// pass: not in mage contested's judge (Judge), not in validate's
// per-surface verdict (JudgeBattery, Blocking, the surfaces entry).
func TestAWeakLegIsNeverAPass(t *testing.T) {
	weak := []struct {
		name    string
		fired   bool
		oracles []faultrecord.OracleRun
		want    verdict.Verdict
	}{
		{"armed, not fired", false, held, verdict.InconclusiveFaultNotProven},
		{"no oracle", true, nil, verdict.PartialSurface},
		{"part of the run checked", true, []faultrecord.OracleRun{{Name: "linearizability", OpsProduced: 10, OpsChecked: 9, Result: "held"}}, verdict.PartialModel},
		{"oracle undecided", true, []faultrecord.OracleRun{{Name: "linearizability", OpsProduced: 10, OpsChecked: 10, Result: "unknown", Detail: "timed out"}}, verdict.InconclusiveOracleTooWeak},
	}
	for _, w := range weak {
		t.Run(w.name, func(t *testing.T) {
			r := rec("burst", w.fired, w.oracles)
			r.Package = "example.com/m/stock"

			// mage contested: one seed whose test passed.
			legs, c := Judge(surface(), Evidence{Level: 1, Runs: []SeedRun{runOf([]faultrecord.Record{r}, nil, []string{"TestStock/burst"}, []string{"TestStock/reset"}, nil)}})
			if legs[0].Verdict != w.want || c != verdict.Inconclusive {
				t.Errorf("Judge: burst %s (%s), contract %s; want %s, INCONCLUSIVE", legs[0].Verdict, legs[0].Reason, c, w.want)
			}

			// validate: the battery passed, the record is its evidence.
			res := &battery.Result{Tests: []battery.Test{
				{Package: "example.com/m/stock", Name: "TestStock", Action: "pass"},
				{Package: "example.com/m/stock", Name: "TestStock/burst", Action: "pass"},
			}}
			got := JudgeBattery(Battery{Registry: oneLegRegistry(t), Module: "example.com/m", Result: res, Records: []faultrecord.Record{r}, Level: 1})
			if len(got) != 1 {
				t.Fatalf("JudgeBattery judged %d surfaces, want m.stock", len(got))
			}
			burst, _ := got[0].Leg("burst")
			if burst.Verdict != w.want || got[0].Contract != verdict.Inconclusive {
				t.Errorf("JudgeBattery: burst %s (%s), contract %s; want %s, INCONCLUSIVE", burst.Verdict, burst.Reason, got[0].Contract, w.want)
			}
			for _, whole := range []bool{true, false} {
				if b := got[0].Blocking(whole); len(b) != 1 || b[0].Lever != "burst" {
					t.Errorf("Blocking(whole battery %v) = %+v, want the burst leg: validate must not be GREEN", whole, b)
				}
			}
			sv := got[0].Verdict()
			if sv.Verdict != verdict.Inconclusive || len(sv.Legs) != 1 || sv.Legs[0].Verdict != w.want {
				t.Errorf("surfaces entry %+v, want INCONCLUSIVE with burst %s", sv, w.want)
			}
			wantFired := 0
			if w.fired {
				wantFired = 1
			}
			if sv.Legs[0].Armed != 1 || sv.Legs[0].Fired != wantFired {
				t.Errorf("surfaces entry: burst armed %d fired %d, want 1 and %d", sv.Legs[0].Armed, sv.Legs[0].Fired, wantFired)
			}
		})
	}
}

// TestUnfiredFaultsAreNeverCountedFired: over several tests and seeds, a
// leg's fired count is the records that fired, never the records armed,
// in the leg result and in the surfaces entry; one unfired record among
// fired ones keeps the leg unproven.
func TestUnfiredFaultsAreNeverCountedFired(t *testing.T) {
	fired := rec("burst", true, held)
	other := rec("burst", false, held)
	other.Test = "TestStock/again/burst"
	seed1 := runOf([]faultrecord.Record{fired, fired, fired}, nil, nil, nil, nil)
	seed1.Seed = 1
	seed2 := runOf([]faultrecord.Record{fired, other}, nil, nil, nil, nil)
	seed2.Seed = 2
	legs, c := Judge(surface(), Evidence{Level: 1, Runs: []SeedRun{seed1, seed2}})
	b := legs[0]
	if b.Armed != 5 || b.Fired != 4 || b.Verdict != verdict.InconclusiveFaultNotProven || c != verdict.Inconclusive {
		t.Fatalf("burst: armed %d fired %d, %s (%s), contract %s; want 5 armed, 4 fired, INCONCLUSIVE-fault-not-proven, INCONCLUSIVE",
			b.Armed, b.Fired, b.Verdict, b.Reason, c)
	}
	if b.Runs[0].Fired != 3 || b.Runs[1].Armed != 2 || b.Runs[1].Fired != 1 {
		t.Errorf("per seed: %+v; want seed 1 with 3 fired, seed 2 with 2 armed and 1 fired", b.Runs)
	}
	if b.FailedRun != 2 || b.Replay == "" {
		t.Errorf("the unproven seed is not the one to replay: seed %d, replay %q; want seed 2", b.FailedRun, b.Replay)
	}
	sv := (&Result{Surface: "m.stock", Contract: c, Legs: legs}).Verdict()
	if sv.Legs[0].Armed != 5 || sv.Legs[0].Fired != 4 {
		t.Errorf("surfaces entry: armed %d fired %d, want 5 and 4", sv.Legs[0].Armed, sv.Legs[0].Fired)
	}
}

// TestThinCoverageIsFlaggedBelowFiveFired: four fired faults are thin,
// five are not.
func TestThinCoverageIsFlaggedBelowFiveFired(t *testing.T) {
	for _, n := range []int{4, 5} {
		var recs []faultrecord.Record
		for range n {
			recs = append(recs, rec("burst", true, held))
		}
		legs, _ := Judge(surface(), Evidence{Level: 1, Runs: []SeedRun{runOf(recs, nil, nil, nil, nil)}})
		if want := n < 5; legs[0].Thin != want {
			t.Errorf("%d fired: thin %v, want %v", n, legs[0].Thin, want)
		}
	}
}

// TestAFailingSubtestOfALegIsTheLegsFailure: go test reports a leg test
// failed when a subtest under it failed, with the reason in the subtest's
// output alone; the leg's reason is that line, not the parent's framing.
func TestAFailingSubtestOfALegIsTheLegsFailure(t *testing.T) {
	r := runOf([]faultrecord.Record{failedRec("burst")}, map[string]string{
		"TestStock/burst":            "=== RUN   TestStock/burst\n--- FAIL: TestStock/burst (0.20s)\n",
		"TestStock/burst/after-heal": "=== RUN   TestStock/burst/after-heal\n    stock_test.go:77: a delivery was lost after the heal\n--- FAIL: TestStock/burst/after-heal (0.10s)\n",
	}, []string{"TestStock/burst", "TestStock/burst/after-heal"}, nil, nil)
	legs, c := Judge(surface(), Evidence{Level: 1, Runs: []SeedRun{r}})
	if legs[0].Verdict != verdict.FailNondeterministic || c != verdict.Red {
		t.Fatalf("burst %s (%s), contract %s; want FAIL-nondeterministic (not rerun), RED", legs[0].Verdict, legs[0].Reason, c)
	}
	if !strings.Contains(legs[0].Reason, "a delivery was lost after the heal") {
		t.Errorf("burst reason %q does not carry the failing subtest's line", legs[0].Reason)
	}
}

func TestPackageMatchesNeverTakesASiblingForAChild(t *testing.T) {
	tests := []struct {
		pattern, pkg string
		want         bool
	}{
		{"./examples/...", "example.com/m/examplesx", false},
		{"./examples/...", "example.com/m/examples", true},
		{"example.com/m/stock/...", "example.com/m/stockpile", false},
		{"example.com/m/stock/...", "example.com/m/stock/inner", true},
	}
	for _, tt := range tests {
		if got := packageMatches("example.com/m", tt.pattern, tt.pkg); got != tt.want {
			t.Errorf("packageMatches(%q, %q) = %v, want %v", tt.pattern, tt.pkg, got, tt.want)
		}
	}
}
