package contract

// The tests that run the adopter fixture's contract (go test on it once
// per seed, and again for each rerun of a failing seed: seconds apiece,
// a minute or more on a loaded machine) run in parallel, and this file
// comes last, so every quick test of the package runs before any of them
// starts: with go test's -failfast (which mutation testing passes) a
// failure among the quick tests ends the run without starting them.

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/contested/contested/internal/battery/batterytest"
	"github.com/contested/contested/internal/faultlayer/faulttest"
	"github.com/contested/contested/internal/faultlayer/levers"
	"github.com/contested/contested/internal/gate/verdict"
	"github.com/contested/contested/internal/rundir"
	"github.com/contested/contested/internal/runenv"
)

func TestRunJudgesAGreenSurface(t *testing.T) {
	t.Parallel()
	res := run(t, nil, []int64{11}, "")
	if res.Contract != verdict.Green {
		t.Fatalf("contract %s, want GREEN: %+v", res.Contract, res.Legs)
	}
	for _, l := range res.Legs {
		if l.Verdict != verdict.PassSmoke || l.Fired != 2 || !l.Thin || l.Schedules != 1 {
			t.Errorf("leg %s: %s (%s), fired %d, thin %v, %d schedules; want PASS-smoke with the schedule's two fired faults, flagged thin",
				l.Lever, l.Verdict, l.Reason, l.Fired, l.Thin, l.Schedules)
		}
		if l.Injector == "" || l.Victim == "" {
			t.Errorf("leg %s carries no evidence", l.Lever)
		}
	}
	if len(res.Seeds) != 1 || res.Seeds[0].Seed != 11 {
		t.Errorf("seeds = %+v, want the one given", res.Seeds)
	}
	for _, r := range res.Seeds[0].Records {
		if r.Seed != 11 {
			t.Errorf("record %s/%s used seed %d, want 11", r.Test, r.Leg, r.Seed)
		}
	}
}

// TestRunCatchesAPlantedDefectReproducibly: the adopter's planted defect
// (a redelivery applied again) turns burst RED, reproducibly. Seed 15's
// reset schedule resets upstream only, so no delivery it fails was applied
// and its redelivery is the first: reset still passes. (A downstream reset
// fails a delivery the server applied, and there the redelivery exposes
// the defect too.)
func TestRunCatchesAPlantedDefectReproducibly(t *testing.T) {
	t.Parallel()
	if got := levers.NewSchedule(levers.Reset, 15, levers.Scope{Level: 1}).Traits(); !slices.Equal(got, []string{"reset:upstream"}) {
		t.Fatalf("seed 15's reset schedule has %v; the test needs one that resets only upstream", got)
	}
	res := run(t, []string{"GOFLAGS=-tags=adopter_defect"}, []int64{15}, "")
	if res.Contract != verdict.Red {
		t.Fatalf("contract %s, want RED", res.Contract)
	}
	// A reproducible defect fails the seed and every one of its reruns.
	if len(res.Seeds) != 1 {
		t.Fatalf("%d seed runs, want the one of seed 15", len(res.Seeds))
	}
	if s := res.Seeds[0]; s.Reruns != Reruns || s.Rerun == nil || !*s.Rerun {
		t.Errorf("seed 15 was rerun %d times (every rerun failed: %v); want %d reruns, every one failing", s.Reruns, s.Rerun != nil && *s.Rerun, Reruns)
	}
	// Only the failing test is rerun: TestStockReport passed, and runs once.
	var report int
	for _, tt := range res.Seeds[0].Tests {
		if tt.Name == "TestStockReport" {
			report++
		}
	}
	if report != 1 {
		t.Errorf("TestStockReport ran %d times over the seed and its reruns; it passed, so want 1", report)
	}
	burst, _ := res.Leg("burst")
	if burst.Verdict != verdict.FailReproducible {
		t.Errorf("burst: %s (%s), want FAIL-reproducible", burst.Verdict, burst.Reason)
	}
	if !strings.Contains(burst.Reason, "exactly-once violated") {
		t.Errorf("burst reason %q does not name the oracle that caught it", burst.Reason)
	}
	if !strings.Contains(burst.Replay, "CONTESTED_SEED=15 ") || !strings.Contains(burst.Replay, "^burst$") {
		t.Errorf("replay %q does not replay seed 15 of the burst leg", burst.Replay)
	}
	if reset, _ := res.Leg("reset"); !reset.Verdict.Pass() {
		t.Errorf("reset: %s (%s); the defect is in deduplication, reset should still pass", reset.Verdict, reset.Reason)
	}
}

// TestRunNamesItsSeeds: contested numbers the seeds it runs from 1 and
// gives each its own results directory, contested/<surface>/seed-<seed>.
func TestRunNamesItsSeeds(t *testing.T) {
	t.Parallel()
	dir, regPath, s := adopter(t)
	root := t.TempDir()
	var out strings.Builder
	l := faulttest.Layer(t)
	env := runenv.Env{ModuleRoot: dir, Registry: regPath, ResultsDir: rundir.Dir(root), Level: 1}.Attach(l.Env(), l.RunID)
	opts := Options{Env: env, Seeds: []int64{11}, Out: &out, Binaries: batterytest.Binaries(t)}
	res, err := Run(context.Background(), s, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "contested: adopter.stock seed 1/1 (CONTESTED_SEED=11)") {
		t.Errorf("output does not number the seed 1/1:\n%s", out.String())
	}
	if want := filepath.Join(root, "contested", "adopter.stock", "seed-11"); len(res.Seeds) != 1 || res.Seeds[0].Dir != want {
		t.Errorf("seed runs %+v; want one in %s", res.Seeds, want)
	}
	if strings.Contains(out.String(), "matched no test") {
		t.Errorf("output says a test entry matched no test, yet they all ran:\n%s", out.String())
	}

	// A surface that names no package still runs its tests (over the module).
	s.Package = ""
	out.Reset()
	res, err = Run(context.Background(), s, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Contract != verdict.Green || len(res.Seeds) != 1 || !res.Seeds[0].Passed || len(res.Seeds[0].Ran) == 0 {
		t.Errorf("without a package: contract %s, seeds %+v; want GREEN from the module's tests\n%s", res.Contract, res.Seeds, out.String())
	}
}
