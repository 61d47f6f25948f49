package contract

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/contested/contested/contested/runenv"
	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/battery/batterytest"
	"github.com/contested/contested/internal/testlog"
	"github.com/contested/contested/registry"
)

// rerunModule is a module whose stock tests fail or pass by the seed they
// are given: burst fails only with its record's seed 42, reset only when
// it is given any seed (it failed before drawing one, so it has none).
var rerunModule = map[string]string{
	"go.mod": "module example.com/m\n\ngo 1.26.0\n",
	"stock/stock_test.go": `package stock

import (
	"os"
	"testing"
)

func TestStock(t *testing.T) {
	t.Run("burst", func(t *testing.T) {
		if os.Getenv("CONTESTED_SEED") == "42" {
			t.Fatal("fails with seed 42")
		}
	})
	t.Run("reset", func(t *testing.T) {
		if os.Getenv("CONTESTED_SEED") != "" {
			t.Fatal("reset was given a seed")
		}
	})
}

func TestMachinery(t *testing.T) { t.Fatal("not a contract test") }
`,
}

// TestRerunFailuresRerunsEachFailingLegAloneWithItsSeed: of a battery's
// failures, only the leaves (the legs, not their parent) of registered
// tests are rerun, each with the seed its records carry and none when it
// has no record; a failure no surface lists is never rerun.
func TestRerunFailuresRerunsEachFailingLegAloneWithItsSeed(t *testing.T) {
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
	reg, err := registry.Parse("contested-surfaces.toml", []byte(`schema = 1
[gate]
recording_classes = ["store"]
[[surface]]
id = "m.stock"
class = "store"
owner = "stock-team"
behavior = "b"
oracle = "exactly-once"
legs = ["burst", "reset"]
tests = ["TestStock"]
package = "./stock"
`))
	if err != nil {
		t.Fatal(err)
	}
	module, err := ModulePath(dir)
	if err != nil || module != "example.com/m" {
		t.Fatalf("ModulePath = %q, %v; want example.com/m", module, err)
	}
	const pkg = "example.com/m/stock"
	res := &battery.Result{ExitCode: 1, Tests: []battery.Test{
		{Package: pkg, Name: "TestStock", Action: "fail"},
		{Package: pkg, Name: "TestStock/burst", Action: "fail"},
		{Package: pkg, Name: "TestStock/reset", Action: "fail"},
		{Package: pkg, Name: "TestMachinery", Action: "fail"},
		{Package: "example.com/m/other", Name: "TestStock/burst", Action: "pass"},
	}}
	recs := []faultrecord.Record{
		{Test: "TestStock/burst", Package: "example.com/m/other", Leg: "burst", Seed: 7},
		{Test: "TestStock/burst", Package: pkg, Leg: "burst", Seed: 42},
	}
	results := filepath.Join(t.TempDir(), "results")
	if err := os.MkdirAll(results, 0o755); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	got, err := RerunFailures(context.Background(), Battery{Registry: reg, Module: module, Result: res, Records: recs},
		RerunOptions{Env: runenv.Env{ModuleRoot: dir}, Root: filepath.Join(results, "reruns"), Out: io.MultiWriter(&out, testlog.Writer(t)), Binaries: batterytest.Binaries(t)})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{pkg + ".TestStock/burst": true, pkg + ".TestStock/reset": false}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reruns (test id → failed again) (-want +got):\n%s", diff)
	}
	// burst fails every rerun, so it gets all of them; reset passes its first.
	for test, n := range map[string]int{"TestStock/burst": Reruns, "TestStock/reset": 1} {
		if got := strings.Count(out.String(), "rerunning "+pkg+"."+test+" alone"); got != n {
			t.Errorf("%s was rerun %d times, want %d:\n%s", test, got, n, out.String())
		}
	}
}

func TestLeafFailures(t *testing.T) {
	res := &battery.Result{Tests: []battery.Test{
		{Package: "a", Name: "TestX", Action: "fail"},
		{Package: "a", Name: "TestX/one", Action: "fail"},
		{Package: "a", Name: "TestX/two", Action: "pass"},
		{Package: "a", Name: "TestXY", Action: "fail"},
		{Package: "a", Name: "TestY", Action: "fail"},
		{Package: "a", Name: "TestYZ", Action: "fail"},
		{Package: "b", Name: "TestX", Action: "fail"},
	}}
	var got []string
	for _, t := range LeafFailures(res) {
		got = append(got, t.ID())
	}
	if diff := cmp.Diff([]string{"a.TestX/one", "a.TestXY", "a.TestY", "a.TestYZ", "b.TestX"}, got); diff != "" {
		t.Errorf("leaf failures (-want +got):\n%s", diff)
	}
}

func TestModulePath(t *testing.T) {
	tests := []struct{ gomod, want string }{
		{"module example.com/m\n\ngo 1.26.0\n", "example.com/m"},
		{"// a comment\ngo 1.26.0\n\nmodule \"example.com/q\" // quoted\n", "example.com/q"},
	}
	for _, tt := range tests {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(tt.gomod), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := ModulePath(dir); err != nil || got != tt.want {
			t.Errorf("ModulePath(%q) = %q, %v; want %q", tt.gomod, got, err, tt.want)
		}
	}
	if _, err := ModulePath(t.TempDir()); err == nil {
		t.Error("ModulePath of a directory without go.mod: no error")
	}
}
