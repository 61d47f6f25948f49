package contract

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contested/contested/contested/runenv"
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
