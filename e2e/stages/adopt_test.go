package stages

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contested/contested/e2e/internal/e2etest"
)

// Packages of an adopter that cannot run here: one whose TestMain exits
// before its tests (its set-up needs an image this machine cannot pull)
// and holds a contract test, one that does not compile, one with a test
// file that does not parse.
var packagesThatCannotRun = map[string]string{
	"setupfails/setup.go": "package setupfails\n\n// Answer is what the package provides.\nfunc Answer() int { return 42 }\n",
	"setupfails/setup_test.go": `package setupfails

import (
	"fmt"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	fmt.Println("setup: start postgres: pull image postgres:16: 403 Forbidden")
	os.Exit(1)
}

func TestSetupContract(t *testing.T) {}
`,
	"broken/broken.go":      "package broken\n\n// Half is half of n.\nfunc Half(n int) int { return n / 2 }\n",
	"broken/broken_test.go": "package broken\n\nimport \"testing\"\n\nfunc TestHalf(t *testing.T) {\n\tvar s string = Half(4)\n\t_ = s\n}\n",
	"syntaxerr/s.go":        "package syntaxerr\n",
	"syntaxerr/s_test.go":   "package syntaxerr\n\nimport \"testing\"\n\nfunc TestBroken(t *testing.T) {\n\tif true {\n}\n",
}

// TestPackagesThatCannotRunAreFindingsWithAnOwner: validate lists each
// package that fails outside any test with what happened, the line that
// says so, an owner and what to do, and still certifies the six phases
// (the inventory reads past the syntax error); arbitrate gives a contract
// test whose package does not run to the test author (exit 1), and finds
// nothing to arbitrate in a test that passed (exit 0, no issue body).
func TestPackagesThatCannotRunAreFindingsWithAnOwner(t *testing.T) {
	t.Parallel()
	registry, err := os.ReadFile(filepath.Join(e2etest.RepoRoot(t), "testdata", "adopter", "contested-surfaces.toml"))
	if err != nil {
		t.Fatal(err)
	}
	edits := map[string]string{"contested-surfaces.toml": string(registry) + `
[[surface]]
id = "adopter.setup"
class = "store"
owner = "setup-team"
behavior = "the set-up's queue keeps its messages"
oracle = "no-lost-ack"
legs = ["reset"]
tests = ["TestSetupContract"]
package = "./setupfails"
`}
	dir := e2etest.Adopter(t, edits)
	for name, body := range packagesThatCannotRun {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, code := e2etest.Mage(t, dir, nil, "validate")
	if code != 1 {
		t.Fatalf("validate: exit %d, want 1:\n%s", code, out)
	}
	if r := e2etest.ReadReport(t, dir); !r.Certified || !r.Phases[5].OK {
		t.Errorf("the six phases: certified %v, phase 6 %+v; the packages that cannot run must not refuse them", r.Certified, r.Phases[5])
	}
	for _, want := range []string{
		"package example.com/adopter/broken: does not build",
		"cannot use Half(4)",
		"fix the compile error",
		"package example.com/adopter/setupfails: exited before running any test",
		"setup: start postgres: pull image postgres:16: 403 Forbidden",
		"package example.com/adopter/syntaxerr: cannot be loaded",
		"owner test author / the package's maintainers",
		"battery failed (3 packages failed outside their tests: example.com/adopter/broken does not build",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("validate does not say %q:\n%s", want, out)
		}
	}
	var v struct {
		BatteryFailures []struct {
			Package, What, Owner, Action string
		} `json:"battery_failures"`
	}
	e2etest.ReadJSON(t, filepath.Join(dir, "test-results", "validate.json"), &v)
	if len(v.BatteryFailures) != 3 {
		t.Fatalf("validate.json battery_failures = %+v, want the three packages", v.BatteryFailures)
	}
	for _, f := range v.BatteryFailures {
		if f.What == "" || f.Owner == "" || f.Action == "" {
			t.Errorf("battery failure %+v lacks what happened, an owner or an action", f)
		}
	}

	out, code = e2etest.Mage(t, dir, nil, "arbitrate", "TestSetupContract")
	if code != 1 || !strings.Contains(out, "owner   test author") || !strings.Contains(out, "package exited before running any test") || !strings.Contains(out, "403 Forbidden") {
		t.Errorf("arbitrate TestSetupContract: exit %d, want 1 with the test author, what happened and the line that says so:\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "test-results", "ladder", "TestSetupContract.md")); err != nil {
		t.Errorf("no issue body for the test author: %v", err)
	}

	out, code = e2etest.Mage(t, dir, nil, "arbitrate", "TestStockContract")
	if code != 0 || !strings.Contains(out, "NO FAILURE") || !strings.Contains(out, "nothing to arbitrate") {
		t.Errorf("arbitrate of a test that passed in validate and in its reruns: exit %d, want 0 and NO FAILURE:\n%s", code, out)
	}
	for _, ext := range []string{".md", ".json"} {
		if _, err := os.Stat(filepath.Join(dir, "test-results", "ladder", "TestStockContract"+ext)); err == nil {
			t.Errorf("arbitrate saved ladder/TestStockContract%s for a test that did not fail", ext)
		}
	}
}
