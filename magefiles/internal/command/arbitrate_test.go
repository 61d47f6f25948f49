package command

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contested/contested/internal/envvar"
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
