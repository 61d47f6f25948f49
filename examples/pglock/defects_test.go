package pglock_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"

	"github.com/contested/contested/examples/internal/planted"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/faultlayer/faulttest"
	"github.com/contested/contested/internal/faultlayer/levers"
)

// TestPlantedDefectsAreCaught proves the lock contract has teeth: each defect planted behind a
// test-only build tag (see defects.go) turns the isolate leg RED, the lock model naming the
// act after loss, while the cut fired for real. The seed is one whose first cut lasts well past
// the lease's TTL, so the cut-off holder's lease runs out and its neighbour takes it while it
// is away; the failure names the replay command that reproduces it.
func TestPlantedDefectsAreCaught(t *testing.T) {
	seed := longCut(t, 2*ttl+time.Second)
	tests := []struct {
		name, tag string
	}{
		{"a holder that acts after its lease expired, without the fence", "contested_defect_nofence"},
		{"a heartbeat that ignores a lost lease", "contested_defect_ignorelost"},
	}
	layer := faulttest.Layer(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build the defective variants: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			results := t.TempDir()
			out, err := planted.Run(ctx, goBin, planted.ModuleRoot(t), tt.tag, "./examples/pglock", "^TestLockContract$/^isolate$", seed, 1,
				append(layer.Env(), envvar.ResultsDir+"="+results))
			if err == nil {
				t.Fatalf("the contract stayed GREEN with the planted defect %s:\n%s", tt.tag, planted.Tail(out))
			}
			for _, want := range []string{"oracle lock: VIOLATED", "a lost lease is noticed before acting: acted after loss: client-", "--- FAIL: TestLockContract/isolate"} {
				if !bytes.Contains(out, []byte(want)) {
					t.Errorf("the contract went RED with %s, but does not say %q:\n%s", tt.tag, want, planted.Tail(out))
				}
			}
			if bytes.Contains(out, []byte("ARMED BUT DID NOT FIRE")) {
				t.Errorf("a cut did not fire, so the RED proves nothing about the model:\n%s", planted.Tail(out))
			}
			if !planted.FiredRecord(t, results, "TestLockContract/isolate", levers.NameIsolate) {
				t.Errorf("no fired isolate record under %s: the cut did not run", results)
			}
			if m := regexp.MustCompile(`see (\S+\.html)`).FindSubmatch(out); m == nil {
				t.Errorf("the verdict names no visualization:\n%s", planted.Tail(out))
			} else if _, err := os.Stat(string(m[1])); err != nil {
				t.Errorf("the visualization the verdict names is missing: %v", err)
			}
			if !bytes.Contains(out, []byte("replay: CONTESTED_SEED=")) {
				t.Errorf("the leg names no replay command:\n%s", planted.Tail(out))
			}
		})
	}
}

// longCut is the first seed whose level-1 isolate schedule's first cut lasts at least d.
func longCut(t *testing.T, d time.Duration) int64 {
	t.Helper()
	for seed := int64(1); seed < 1000; seed++ {
		if levers.NewSchedule(levers.Isolate, seed, levers.Scope{Level: 1}).Windows[0].For >= d {
			return seed
		}
	}
	t.Fatalf("no seed under 1000 draws a first cut of %v", d)
	return 0
}
