package command

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contested/contested/internal/faultdir"
	"github.com/contested/contested/internal/faultlayer/noise"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/rundir"
	"github.com/contested/contested/internal/runenv"
)

// TestANeighbourThatCouldNotMeasureIsNotProven: a neighbour whose probe
// could not measure (the run was interrupted) writes its record armed and
// not fired; validate says it is INCONCLUSIVE-fault-not-proven, as any
// leg's unfired fault is, and its reasons name the cause, not more hogs.
func TestANeighbourThatCouldNotMeasureIsNotProven(t *testing.T) {
	mod := t.TempDir()
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module example.com/m\n\ngo 1.24\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(mod, "test-results")
	ctx, cancel := context.WithCancel(context.Background())
	n, err := noise.Start(ctx, noise.Spec{CPU: 1}, 9, root)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	var out strings.Builder
	e := recordNeighbour(n, "validate", rundir.Dir(root), runenv.Env{ModuleRoot: mod, ResultsDir: rundir.Dir(root), RunID: "run"}, &out, "")
	t.Log(out.String())
	if e == nil || e.Fired() || e.Unmeasured == "" {
		t.Fatalf("evidence %+v: want a neighbour that could not measure", e)
	}
	for _, want := range []string{"the neighbour did NOT fire, INCONCLUSIVE-fault-not-proven", "could not measure the neighbour: the run was interrupted"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("validate does not say %q:\n%s", want, out.String())
		}
	}
	recs, err := contract.ReadRecords(faultdir.Of(root))
	if err != nil || len(recs) != 1 {
		t.Fatalf("records %+v, %v: want the neighbour's", recs, err)
	}
	if r := recs[0]; !r.Armed || r.Fired || r.Surface != noise.Surface || r.Leg != noise.Leg || !strings.Contains(r.Evidence.Victim, "the run was interrupted") {
		t.Errorf("record %+v: want armed, not fired, saying why", r)
	}
	v := &validation{noise: e}
	reasons := v.noiseReasons()
	if len(reasons) != 1 || !strings.HasPrefix(reasons[0], "the neighbour contested.battery/capacity/noise is INCONCLUSIVE-fault-not-proven: the probe could not measure the neighbour: the run was interrupted") ||
		strings.Contains(reasons[0], "more hogs") {
		t.Errorf("reasons %q: want the neighbour not proven, for the interruption", reasons)
	}
}

// TestAFiredNeighbourKeepsNoOneFromGreen: a neighbour both sides saw land
// adds no reason, and neither does a shard's, which the union judges.
func TestAFiredNeighbourKeepsNoOneFromGreen(t *testing.T) {
	fired := noise.Evidence{Spec: noise.Spec{CPU: 2}, Taken: 1.5, Duty: 0.75, Cores: 2, Samples: 20,
		Baseline: 5 * time.Millisecond, Loaded: 10 * time.Millisecond, Slowdown: 2, ThreadShare: 0.5}
	unfired := fired
	unfired.Slowdown = 1.02
	for _, tt := range []struct {
		name    string
		v       *validation
		reasons int
	}{
		{"no neighbour", &validation{}, 0},
		{"a fired neighbour", &validation{noise: &fired}, 0},
		{"an unfired neighbour", &validation{noise: &unfired}, 1},
		{"a shard's unfired neighbour", &validation{noise: &unfired, shard: &sharding{}}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.v.noiseReasons(); len(got) != tt.reasons {
				t.Errorf("reasons %q, want %d", got, tt.reasons)
			}
		})
	}
	if got := (&validation{noise: &unfired}).noiseReasons(); len(got) == 1 && !strings.Contains(got[0], "give it more hogs") {
		t.Errorf("a neighbour that did not slow the machine: %q, want the advice to give it more hogs", got[0])
	}
}
