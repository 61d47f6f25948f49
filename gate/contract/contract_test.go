package contract

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/contested/contested/contested/runenv"
	"github.com/contested/contested/faultlayer/levers"
	"github.com/contested/contested/internal/testlog"

	"github.com/contested/contested/faultlayer/faulttest"
	"github.com/contested/contested/gate/verdict"
	"github.com/contested/contested/registry"
)

func TestMain(m *testing.M) { faulttest.Main(m) }

// adopter returns the adopter fixture's module directory and its surface.
func adopter(t *testing.T) (string, string, registry.Surface) {
	t.Helper()
	dir, err := filepath.Abs("../../testdata/adopter")
	if err != nil {
		t.Fatal(err)
	}
	regPath := filepath.Join(dir, "contested-surfaces.toml")
	reg, err := registry.Load(regPath)
	if err != nil {
		t.Fatal(err)
	}
	s, ok := reg.Surface("adopter.stock")
	if !ok {
		t.Fatal("adopter.stock is not in the fixture's registry")
	}
	return dir, regPath, s
}

func run(t *testing.T, extraEnv []string, seeds []int64, envMissing string) *Result {
	t.Helper()
	dir, regPath, s := adopter(t)
	opts := Options{Env: runenv.Env{ModuleRoot: dir, Registry: regPath, ResultsDir: t.TempDir(), Level: 1}, Seeds: seeds,
		Out: testlog.Writer(t), EnvMissing: envMissing}
	if envMissing == "" {
		l := faulttest.Layer(t)
		opts.Env = opts.Env.Attach(append(l.Env(), extraEnv...), l.RunID)
	}
	res, err := Run(context.Background(), s, opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

func TestRunJudgesAGreenSurface(t *testing.T) {
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
	if got := levers.NewSchedule(levers.Reset, 15, levers.Scope{Level: 1}).Traits(); !slices.Equal(got, []string{"reset:upstream"}) {
		t.Fatalf("seed 15's reset schedule has %v; the test needs one that resets only upstream", got)
	}
	res := run(t, []string{"GOFLAGS=-tags=adopter_defect"}, []int64{15}, "")
	if res.Contract != verdict.Red {
		t.Fatalf("contract %s, want RED", res.Contract)
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

func TestRunWithoutALayerCannotRun(t *testing.T) {
	res := run(t, nil, []int64{13}, "fault-preflight failed: lease table missing")
	if res.Contract != verdict.CannotRun {
		t.Fatalf("contract %s, want CANNOT RUN", res.Contract)
	}
	if len(res.Seeds) != 0 {
		t.Errorf("tests ran although the layer cannot run: %+v", res.Seeds)
	}
	for _, l := range res.Legs {
		if l.Verdict != verdict.InconclusiveEnv {
			t.Errorf("leg %s: %s, want INCONCLUSIVE-env", l.Lever, l.Verdict)
		}
	}
}
