package degraded

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/capability"
	"github.com/contested/contested/internal/faultlayer/faulttest"
	"github.com/contested/contested/internal/registry"
	"github.com/contested/contested/internal/runenv"
	"github.com/contested/contested/internal/seed"
)

func TestMain(m *testing.M) { faulttest.Main(m) }

// stage runs the real stage against the registry's real front (built with
// tags), in a real Chromium, on the test's fault layer, writing under
// results.
func stage(t *testing.T, results, tags string, cells ...string) Result {
	t.Helper()
	capability.Require(t, capability.Chromium)
	lay := faulttest.Layer(t)
	env, err := runenv.Process()
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.Load(env.Registry)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var log strings.Builder
	defer func() { t.Log(log.String()) }()
	lock, err := Hold(ctx, results, "TestDegradedStage", &log)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	// The seed a contested run hands each of its seeds (CONTESTED_SEED),
	// else a fresh one: N seeds run N plans.
	given, err := seed.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	seed := int64(given.OrNew())
	res, err := Run(ctx, Options{Layer: lay, Registry: reg, ModuleRoot: env.ModuleRoot, ResultsDir: results, RunID: lay.RunID, Cells: cells, Tags: tags, Seed: seed, Out: &log})
	if err != nil {
		t.Fatalf("the stage could not run: %v", err)
	}
	if _, err := os.Stat(MarkerPath(results)); err == nil {
		t.Errorf("the stage ended and left its marker %s", MarkerPath(results))
	}
	return res
}

// TestDegradedStage runs the degraded-UX stage for real: GREEN on the clean
// ledger front over the whole matrix (its records, class ux, all fired, go
// to the run's results directory, where the gate counts them), and RED with
// each planted defect of the front, on the cells that catch it.
func TestDegradedStage(t *testing.T) {
	t.Run("clean front is GREEN", func(t *testing.T) {
		env, err := runenv.Process()
		if err != nil {
			t.Fatal(err)
		}
		res := stage(t, env.ResultsDir.String(), "")
		if len(res.Cells) != len(Flows)*len(Conditions) {
			t.Fatalf("%d cells ran, want %d", len(res.Cells), len(Flows)*len(Conditions))
		}
		for _, c := range res.Cells {
			if !c.Passed || !c.Fired {
				t.Errorf("cell %s: passed %v fired %v: %s (screenshot %s)", c.Cell, c.Passed, c.Fired, strings.Join(c.Problems, "; "), c.Screenshot)
			}
			if c.Record == "" && c.ArmedAt.IsZero() {
				continue // never armed, so no record: failed above
			}
			b, err := os.ReadFile(c.Record)
			if err != nil {
				t.Fatalf("cell %s's record: %v", c.Cell, err)
			}
			r, err := faultrecord.ParseRecord(b)
			if err != nil {
				t.Fatalf("cell %s's record: %v", c.Cell, err)
			}
			if r.Class != Class || r.Leg != c.Leg || r.Fired != c.Fired || r.Evidence.Injector == "" || r.Evidence.Victim == "" {
				t.Errorf("cell %s's record: class %q leg %q fired %v evidence %+v", c.Cell, r.Class, r.Leg, r.Fired, r.Evidence)
			}
		}
	})
	for _, tc := range []struct {
		defect string
		cells  []string
		want   map[string]string // failing cell -> a problem it must name
	}{
		{
			defect: "contested_defect_webnewkey",
			cells:  []string{"submit/latency", "reload/latency"},
			want: map[string]string{
				"submit/latency": "money moved under another key",
				"reload/latency": "money moved under another key",
			},
		},
		{
			defect: "contested_defect_weberror",
			cells:  []string{"load/latency", "load/backend-down"},
			want:   map[string]string{"load/latency": "HTTP 500"},
		},
	} {
		t.Run(tc.defect+" is RED", func(t *testing.T) {
			results := t.TempDir()
			res := stage(t, results, tc.defect, tc.cells...)
			for _, c := range res.Cells {
				want, red := tc.want[c.Cell]
				switch {
				case red && c.Passed:
					t.Errorf("cell %s passed with the %s defect planted: %s", c.Cell, tc.defect, c.Victim)
				case red && !strings.Contains(strings.Join(c.Problems, "; "), want):
					t.Errorf("cell %s failed for %q, want a problem naming %q", c.Cell, c.Problems, want)
				case red && (c.Screenshot == "" || !exists(filepath.Join(results, c.Screenshot))):
					t.Errorf("failing cell %s kept no screenshot (%q)", c.Cell, c.Screenshot)
				case !red && !c.Passed:
					t.Errorf("cell %s failed with the %s defect, which it does not exercise: %s", c.Cell, tc.defect, c.Problems)
				}
			}
		})
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
