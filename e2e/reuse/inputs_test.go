package reuse

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/contested/contested/e2e/internal/e2etest"
	"github.com/contested/contested/internal/testmodule"
)

// fixturesTest is a package of the adopter whose test reads, at run time,
// everything TestAReusedGreenNeverStandsForChangedInputs changes, and
// fails when any of it is not what it was.
const fixturesTest = `package fixtures

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"example.com/dep"
)

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func TestFixtures(t *testing.T) {
	for _, f := range []string{"fixture.json", "migrations/001.sql", "testdata/shared/golden.txt", "testdata/linked.txt"} {
		if got := read(t, f); got != "ok" {
			t.Errorf("%s holds %q, want ok", f, got)
		}
	}
	if mode := os.Getenv("FIXTURES_MODE"); mode == "broken" {
		t.Errorf("FIXTURES_MODE=%s", mode)
	}
	// A child process reads this one: no test log shows it, so the
	// registry's [reuse] reads names it.
	out, err := exec.Command("cat", "../docs/page.md").Output()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Errorf("docs/page.md through cat: %q, %v; want ok", out, err)
	}
	if dep.Value != 1 {
		t.Errorf("example.com/dep's Value is %d, want 1", dep.Value)
	}
}
`

// initReadsTest is a package of the adopter that reads where the testing
// package's log does not see: in init, in a package-level variable's
// initializer, in TestMain before m.Run, and in a worker process started
// from its own test binary.
const initReadsTest = `package initreads

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

var mode string

func init() { mode = os.Getenv("INITREADS_MODE") }

var maxQty = func() string {
	b, _ := os.ReadFile("../config/max_qty")
	return strings.TrimSpace(string(b))
}()

var count string

func TestMain(m *testing.M) {
	if os.Getenv("INITREADS_WORKER") == "1" {
		fmt.Print(os.Getenv("WORKER_COPIES"))
		os.Exit(0)
	}
	count = os.Getenv("INITREADS_COUNT")
	os.Exit(m.Run())
}

func TestInitReads(t *testing.T) {
	if mode != "" || maxQty != "10" || count != "" {
		t.Errorf("read before the test log: mode %q, max_qty %q, count %q", mode, maxQty, count)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "INITREADS_WORKER=1")
	out, err := cmd.Output()
	if err != nil || string(out) != "" {
		t.Errorf("the worker read WORKER_COPIES=%q (%v)", out, err)
	}
}
`

// TestAReusedGreenNeverStandsForChangedInputs: after a GREEN, certified
// run, each change to what a package's tests read or are built from
// (however the file is edited, whatever links lead to it) makes the
// tests that now fail run and go RED, never "GREEN, all reused".
func TestAReusedGreenNeverStandsForChangedInputs(t *testing.T) {
	t.Parallel()
	dir := e2etest.Adopter(t, map[string]string{
		"fixtures/fixtures_test.go":   fixturesTest,
		"fixtures/fixture.json":       "ok\n",
		"fixtures/migrations/001.sql": "ok\n",
		"initreads/initreads_test.go": initReadsTest,
		"config/max_qty":              "10\n",
		"go.mod":                      "",
	})
	parent, outside := filepath.Dir(dir), t.TempDir()
	for name, body := range map[string]string{
		filepath.Join(outside, "shared/golden.txt"): "ok\n",
		filepath.Join(outside, "target.txt"):        "ok\n",
		filepath.Join(outside, "docs/page.md"):      "ok\n",
		filepath.Join(parent, "dep/go.mod"):         "module example.com/dep\n\ngo 1.26.0\n",
		filepath.Join(parent, "dep/dep.go"):         "package dep\n\n// Value is one.\nconst Value = 1\n",
		filepath.Join(parent, "dep2/go.mod"):        "module example.com/dep\n\ngo 1.26.0\n",
		filepath.Join(parent, "dep2/dep.go"):        "package dep\n\n// Value is two.\nconst Value = 2\n",
		filepath.Join(parent, "go.work"):            "go 1.26.0\n\nuse ./adopter\n\nreplace example.com/dep v1.0.0 => ./dep\n",
	} {
		writeFile(t, name, body)
	}
	goMod := read(t, filepath.Join(e2etest.RepoRoot(t), "testdata", "adopter", "go.mod"))
	goMod = strings.Replace(goMod, "\nrequire (", "\nrequire example.com/dep v1.0.0\n\nrequire (", 1)
	goMod = strings.Replace(goMod, "=> ../..", "=> "+e2etest.RepoRoot(t), 1)
	writeFile(t, filepath.Join(dir, "go.mod"), goMod)
	for link, target := range map[string]string{
		"fixtures/testdata/shared":     filepath.Join(outside, "shared"),
		"fixtures/testdata/linked.txt": filepath.Join(outside, "target.txt"),
		"docs":                         filepath.Join(outside, "docs"),
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, link)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	edit(t, dir, "contested-surfaces.toml", "[battery]", "[reuse.reads]\n\"./fixtures\" = [\"docs\"]\n\n[battery]")

	first, _, _ := validate(t, dir, nil)
	if first.Reuse.Certified == 0 {
		t.Fatalf("the first validate certified nothing: %+v", first.Reuse)
	}
	if same, _, _ := validate(t, dir, nil); !same.Reuse.All {
		t.Fatalf("nothing changed: reuse %+v; want everything reused", same.Reuse)
	}
	const fixturesPkg = "example.com/adopter/fixtures"
	tests := []struct {
		name    string
		change  func(t *testing.T) (undo func())
		env     []string
		failing string // the test that must run and fail
	}{
		{"a fixture in the package directory, not under testdata", func(t *testing.T) func() {
			return rewrite(t, filepath.Join(dir, "fixtures/fixture.json"), "no\n")
		}, nil, "TestFixtures"},
		{"a migration in a subdirectory", func(t *testing.T) func() {
			return rewrite(t, filepath.Join(dir, "fixtures/migrations/001.sql"), "no\n")
		}, nil, "TestFixtures"},
		{"a file behind the link testdata holds to a shared directory", func(t *testing.T) func() {
			return rewrite(t, filepath.Join(outside, "shared/golden.txt"), "no\n")
		}, nil, "TestFixtures"},
		{"the target of a link inside testdata", func(t *testing.T) func() {
			return rewrite(t, filepath.Join(outside, "target.txt"), "no\n")
		}, nil, "TestFixtures"},
		{"a file in a [reuse] reads entry that links to a directory", func(t *testing.T) func() {
			return rewrite(t, filepath.Join(outside, "docs/page.md"), "no\n")
		}, nil, "TestFixtures"},
		{"a variable the test reads", func(t *testing.T) func() { return func() {} }, []string{"FIXTURES_MODE=broken"}, "TestFixtures"},
		{"a go.work above the module gains a replace", func(t *testing.T) func() {
			return rewrite(t, filepath.Join(parent, "go.work"), "go 1.26.0\n\nuse ./adopter\n\nreplace example.com/dep v1.0.0 => ./dep2\n")
		}, nil, "TestFixtures"},
		{"a variable read in init", func(t *testing.T) func() { return func() {} }, []string{"INITREADS_MODE=broken"}, "TestInitReads"},
		{"a file a package-level variable reads", func(t *testing.T) func() {
			return rewrite(t, filepath.Join(dir, "config/max_qty"), "-1\n")
		}, nil, "TestInitReads"},
		{"a variable TestMain reads before m.Run", func(t *testing.T) func() { return func() {} }, []string{"INITREADS_COUNT=0"}, "TestInitReads"},
		{"a variable a worker process of the test binary reads", func(t *testing.T) func() { return func() {} }, []string{"WORKER_COPIES=2"}, "TestInitReads"},
		{"the planted defect, its build constraint deleted in place", func(t *testing.T) func() {
			p := filepath.Join(dir, "defect.go")
			return rewrite(t, p, strings.Replace(read(t, p), "//go:build adopter_defect\n", "", 1))
		}, nil, "TestStockContract"},
	}
	for _, tt := range tests {
		undo := tt.change(t)
		out, code := e2etest.Mage(t, dir, append([]string{"CI="}, tt.env...), "validate")
		undo()
		if code != 1 || !strings.Contains(out, "validate: RED") || !strings.Contains(out, tt.failing) {
			t.Errorf("%s: exit %d; want RED with %s failing, never a reused GREEN:\n%s", tt.name, code, tt.failing, out)
			continue
		}
		var r report
		e2etest.ReadJSON(t, filepath.Join(dir, "test-results", "validate.json"), &r)
		if pkgs, _ := reused(r); tt.failing == "TestFixtures" && contains(pkgs, fixturesPkg) {
			t.Errorf("%s: %s was reused", tt.name, fixturesPkg)
		}
		// The replay carries the variable the run was given, wherever the
		// code read it.
		for _, kv := range tt.env {
			if !slices.ContainsFunc(strings.Split(out, "\n"), func(l string) bool {
				return strings.Contains(l, "replay: ") && strings.Contains(l, " "+kv+" ")
			}) {
				t.Errorf("%s: no replay line carries %s:\n%s", tt.name, kv, out)
			}
		}
	}
	// Back where it was certified: reused again.
	if back, out, _ := validate(t, dir, nil); !back.Reuse.All {
		t.Errorf("every change undone: reuse %+v; want everything reused from the first run:\n%s", back.Reuse, out)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func writeFile(t *testing.T, p, body string) { t.Helper(); testmodule.WriteFile(t, p, body) }

// rewrite truncates and writes p in place and gives it back its times,
// as an editor that keeps them does; undo puts back what was there, the
// same way.
func rewrite(t *testing.T, p, body string) (undo func()) {
	t.Helper()
	old := read(t, p)
	put := func(body string) {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(body)
		f.Close()
		os.Chtimes(p, fi.ModTime(), fi.ModTime())
	}
	put(body)
	return func() { put(old) }
}
