package contract

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contested/contested/contested/runenv"
	"github.com/contested/contested/faultlayer/faulttest"
	"github.com/contested/contested/gate/verdict"
	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/registry"
)

// TestRerunFailuresSaysWhatItReruns: the reruns are announced on the
// writer given, one line per rerun with the test and its seed.
func TestRerunFailuresSaysWhatItReruns(t *testing.T) {
	dir := t.TempDir()
	for name, body := range rerunModule {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("CONTESTED_SEED", "")
	reg, err := registry.Parse("contested-surfaces.toml", []byte("schema = 1\n[[surface]]\nid = \"m.stock\"\nclass = \"store\"\nowner = \"o\"\nbehavior = \"b\"\noracle = \"exactly-once\"\nlegs = [\"burst\"]\ntests = [\"TestStock\"]\npackage = \"./stock\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	const pkg = "example.com/m/stock"
	res := &battery.Result{ExitCode: 1, Tests: []battery.Test{{Package: pkg, Name: "TestStock/burst", Action: "fail"}}}
	results := filepath.Join(t.TempDir(), "results")
	if err := os.MkdirAll(results, 0o755); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	b := Battery{Registry: reg, Module: "example.com/m", Result: res}
	if _, err := RerunFailures(context.Background(), b, RerunOptions{Env: runenv.Env{ModuleRoot: dir}, Root: filepath.Join(results, "reruns"), Out: &out}); err != nil {
		t.Fatal(err)
	}
	if want := "rerunning " + pkg + ".TestStock/burst alone"; !strings.Contains(out.String(), want) {
		t.Errorf("output %q does not say %q", out.String(), want)
	}
}

// TestRunNamesItsSeeds: contested numbers the seeds it runs from 1 and
// gives each its own results directory, contested/<surface>/seed-<seed>.
func TestRunNamesItsSeeds(t *testing.T) {
	dir, regPath, s := adopter(t)
	root := t.TempDir()
	var out strings.Builder
	l := faulttest.Layer(t)
	env := runenv.Env{ModuleRoot: dir, Registry: regPath, ResultsDir: root, Level: 1}.Attach(l.Env(), l.RunID)
	opts := Options{Env: env, Seeds: []int64{11}, Out: &out}
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
