package command

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/gate/flakes"
)

// TestArbitrateCannotRunWhereTheTestsCannotBeListed: a module go cannot
// list (here a go.mod with a directive go does not know) cannot be
// arbitrated: exit 3 saying what go said and what to do, before any layer,
// never a bare exit 1.
func TestArbitrateCannotRunWhereTheTestsCannotBeListed(t *testing.T) {
	mod := module(t)
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module example.com/m\n\ngo 1.24\n\nnonsense here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dead := deadAddr(t)
	t.Setenv(envvar.Layer, "")
	t.Setenv(envvar.ToxiproxyURL, "http://"+dead)
	t.Setenv(envvar.PostgresDSN, "postgres://u:p@"+dead+"/db")
	t.Setenv(envvar.ResultsDir, "")
	t.Setenv(envvar.Surfaces, "")
	var out strings.Builder
	err := Arbitrate(context.Background(), ArbitrateOptions{Dir: mod, Test: "TestLeg", Out: &out})
	if got := ExitCode(err); got != ExitCannotRun {
		t.Fatalf("exit %d (%v), want %d:\n%s", got, err, ExitCannotRun, out.String())
	}
	for _, want := range []string{"cannot list the module's tests", "nonsense", "fix what go says"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q: %v", want, err)
		}
	}
	if strings.Contains(out.String(), "fault-preflight") {
		t.Errorf("arbitrate reached the fault layer:\n%s", out.String())
	}
}

// TestArbitrateAnswersAPassFromTheLastValidate: a test the last validate
// run on this code saw pass is NO FAILURE from that run, exit 0, without a
// fault layer (here one that does not answer) and in well under the time
// a rerun takes; with -rerun the ladder is walked, and reaches the layer.
func TestArbitrateAnswersAPassFromTheLastValidate(t *testing.T) {
	mod := module(t)
	dead := deadAddr(t)
	t.Setenv(envvar.Layer, "external")
	t.Setenv(envvar.ToxiproxyURL, "http://"+dead)
	t.Setenv(envvar.PostgresDSN, "postgres://u:p@"+dead+"/db")
	t.Setenv(envvar.ResultsDir, "")
	t.Setenv(envvar.Surfaces, "")
	results := filepath.Join(mod, "test-results")
	if err := os.MkdirAll(results, 0o755); err != nil {
		t.Fatal(err)
	}
	last := lastRun{RunID: "r-green", Revision: flakes.ReadRevision(context.Background(), mod),
		Battery: &battery.Result{Tests: []battery.Test{{Package: "example.com/m", Name: "TestLeg", Action: "pass", Elapsed: time.Second}}}}
	b, _ := json.Marshal(last)
	if err := os.WriteFile(filepath.Join(results, "validate.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	start := time.Now()
	err := Arbitrate(context.Background(), ArbitrateOptions{Dir: mod, Test: "TestLeg", Out: &out})
	took := time.Since(start)
	if err != nil || !strings.Contains(out.String(), "NO FAILURE") || !strings.Contains(out.String(), "run r-green") {
		t.Fatalf("err %v; want NO FAILURE from run r-green:\n%s", err, out.String())
	}
	if strings.Contains(out.String(), "fault-preflight") || took > 30*time.Second {
		t.Errorf("took %s and reached the fault layer (%v):\n%s", took, strings.Contains(out.String(), "fault-preflight"), out.String())
	}
	out.Reset()
	err = Arbitrate(context.Background(), ArbitrateOptions{Dir: mod, Test: "TestLeg", Rerun: true, Out: &out})
	if got := ExitCode(err); got != ExitCannotRun {
		t.Fatalf("with -rerun: exit %d (%v), want %d: the ladder walked, against a layer that does not answer:\n%s", got, err, ExitCannotRun, out.String())
	}
}
