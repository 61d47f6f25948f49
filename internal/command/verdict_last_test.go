package command

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/fatih/color"

	"github.com/contested/contested/internal/registry"
	"github.com/contested/contested/internal/rundir"
	"github.com/contested/contested/internal/runenv"
)

// TestAReusedGreenEndsOnItsVerdict: a run that reused every package and
// surface prints its findings before its verdict, so the verdict line is
// the last line a reader (or a CI log) shows.
func TestAReusedGreenEndsOnItsVerdict(t *testing.T) {
	noColor := color.NoColor
	color.NoColor = true
	t.Cleanup(func() { color.NoColor = noColor })
	root := t.TempDir()
	var out bytes.Buffer
	v := &validation{
		out:   &out,
		reg:   &registry.Registry{},
		env:   runenv.Env{ResultsDir: rundir.Dir(root), RunID: "green-run", ModuleRoot: root},
		rep:   &ValidateReport{RunID: "green-run"},
		reuse: &reuse{rep: &ReuseReport{On: true, All: true}},
	}
	if err := v.finishReused(time.Now()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "validate: GREEN") {
		t.Errorf("the last line is %q, not the verdict:\n%s", last, out.String())
	}
	if !strings.Contains(out.String(), "findings:") {
		t.Errorf("the findings were not printed:\n%s", out.String())
	}
}
