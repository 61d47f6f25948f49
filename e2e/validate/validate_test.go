package validate

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/contested/contested/e2e/internal/e2etest"
	"github.com/contested/contested/internal/gate/ladder"
)

func TestAdopterValidateIsCertified(t *testing.T) {
	t.Parallel()
	dir := e2etest.Adopter(t, nil)
	out, code := e2etest.GoToolMage(t, dir, nil, "validate") // as a user types it
	if code != 0 || !strings.Contains(out, "CERTIFIED") || !strings.Contains(out, "validate: GREEN") {
		t.Fatalf("validate of the adopter: exit %d, want 0 and CERTIFIED:\n%s", code, out)
	}
	// [battery] packages_per_core = 2: go test runs two packages per core.
	if p := fmt.Sprintf(" -p %d ./... (", 2*runtime.GOMAXPROCS(0)); !strings.Contains(out, p) {
		t.Errorf("the battery's go test does not run with%s:\n%s", strings.TrimSuffix(p, " ./... ("), out)
	}
	r := e2etest.ReadReport(t, dir)
	if !r.Certified || !r.StampConsumed || r.Fired == 0 || len(r.ClassesWithZeroFired) != 0 {
		t.Errorf("report: certified %v, stamp consumed %v, fired %d, classes with zero fired %v", r.Certified, r.StampConsumed, r.Fired, r.ClassesWithZeroFired)
	}
	for _, f := range []string{"fault/fault-report.html", "battery/junit.xml", "battery/go-test.json", "validate.json", "capacity.json"} {
		if _, err := os.Stat(filepath.Join(dir, "test-results", f)); err != nil {
			t.Errorf("artifact %s: %v", f, err)
		}
	}

	// One verdict: the surface's, judged from the battery, in validate.json
	// and fault-report.json, and the same as contested's over one seed.
	var v e2etest.ValidateJSON
	e2etest.ReadJSON(t, filepath.Join(dir, "test-results", "validate.json"), &v)
	if !v.Green || len(v.Surfaces) != 1 || v.Surfaces[0].Verdict != "GREEN" {
		t.Fatalf("validate.json: green %v, surfaces %+v; want one GREEN surface", v.Green, v.Surfaces)
	}
	for _, l := range v.Surfaces[0].Legs {
		if l.Verdict != "PASS-smoke" || l.Armed == 0 || l.Fired != l.Armed || len(l.Oracles) == 0 {
			t.Errorf("leg %+v: want PASS-smoke with its faults and oracles", l)
		}
	}
	if !reflect.DeepEqual(r.Surfaces, v.Surfaces) {
		t.Errorf("fault-report.json surfaces %+v differ from validate.json's %+v", r.Surfaces, v.Surfaces)
	}
	if !strings.Contains(out, "adopter.stock") || !strings.Contains(out, "PASS-smoke") {
		t.Errorf("validate does not print the surface's verdicts:\n%s", out)
	}
	cout, code := e2etest.Mage(t, dir, []string{"CONTESTED_SEEDS=1"}, "contested", "all")
	if code != 0 {
		t.Fatalf("contested all: exit %d, want 0:\n%s", code, cout)
	}
	e2etest.SameVerdicts(t, dir, "adopter.stock", v.Surfaces)

	// The stamp was consumed: program-gate announces it is missing, and
	// verifies the records on disk standalone.
	out, code = e2etest.Mage(t, dir, nil, "program-gate")
	if code != 0 || !strings.Contains(out, "no gate stamp") || !strings.Contains(out, "CERTIFIED") {
		t.Errorf("program-gate after a certified validate: exit %d:\n%s", code, out)
	}
}

// TestValidateAndContestedGiveOneVerdict: validate judges each registered
// surface from its battery by contested's rules; contested over one seed
// gives the same verdicts, for an adopter with a planted defect and for one
// whose leg runs only at level 2 (the healthy adopter is compared in
// TestAdopterValidateIsCertified). A failing test no surface lists walks
// the ladder too and is its author's once the evidence is in.
func TestValidateAndContestedGiveOneVerdict(t *testing.T) {
	t.Parallel()
	t.Run("a planted defect and a failing test outside the registry", func(t *testing.T) {
		t.Parallel()
		dir := e2etest.Adopter(t, map[string]string{"machinery_test.go": machineryTest})
		env := []string{"GOFLAGS=-tags=adopter_defect", "CONTESTED_SEEDS=1"}
		out, code := e2etest.Mage(t, dir, env, "validate")
		if code != 1 {
			t.Fatalf("validate: exit %d, want 1:\n%s", code, out)
		}
		var v e2etest.ValidateJSON
		e2etest.ReadJSON(t, filepath.Join(dir, "test-results", "validate.json"), &v)
		if v.Green || len(v.Surfaces) != 1 || v.Surfaces[0].Verdict != "RED" {
			t.Fatalf("validate.json: green %v, surfaces %+v; want adopter.stock RED", v.Green, v.Surfaces)
		}
		if !strings.Contains(out, "surface adopter.stock is RED (burst FAIL-reproducible)") {
			t.Errorf("validate does not give the surface's verdict as a reason:\n%s", out)
		}
		// Every failure is listed with the evidence of its walk: the
		// defective leg (the component's) and the machinery test no surface
		// lists (its author's, after its reruns, never "register it").
		failures := map[string]ladder.Plain{}
		for _, p := range v.BatteryFailures {
			failures[p.Test] = p
		}
		if m, ok := failures["TestMachineryBringsUpItsProvider"]; !ok || !strings.Contains(m.FirstLine, "the provider never came up") ||
			m.Owner != "test author" || !m.Arbitrated || m.Class != ladder.Consistent || m.Reruns == nil || m.Reruns.Failed != m.Reruns.Ran {
			t.Errorf("the machinery test's entry %+v; want its failure line, walked, consistent over its reruns, owner test author", m)
		}
		if b, ok := failures["TestStockContract/burst"]; !ok || !strings.HasPrefix(b.Owner, "component") || b.Seed == 0 || !strings.Contains(b.Replay, fmt.Sprint(b.Seed)) {
			t.Errorf("the defective leg's entry %+v; want the component's, with the seed it ran with and its replay", b)
		}
		if strings.Contains(strings.ToLower(out), "register testmachinery") || strings.Contains(out, "register it") {
			t.Errorf("validate tells the user to register a machinery test:\n%s", out)
		}
		out, code = e2etest.Mage(t, dir, env, "contested", "all")
		if code != 1 {
			t.Fatalf("contested all: exit %d, want 1:\n%s", code, out)
		}
		e2etest.SameVerdicts(t, dir, "adopter.stock", v.Surfaces)
		out, code = e2etest.Mage(t, dir, nil, "arbitrate", "TestMachineryBringsUpItsProvider")
		if code != 1 || !strings.Contains(out, "owner   test author") || !strings.Contains(out, "-run '^TestMachineryBringsUpItsProvider$'") {
			t.Errorf("arbitrate on a machinery test: exit %d, want 1, its author's, saying how to run it:\n%s", code, out)
		}
		// The defect fixed (the build no longer plants it): the leg passes
		// its reruns, and the last validate ran other code, so there is
		// nothing to arbitrate, whatever the history holds, and nothing
		// is saved.
		os.RemoveAll(filepath.Join(dir, "test-results", "ladder"))
		out, code = e2etest.Mage(t, dir, nil, "arbitrate", "TestStockContract/burst")
		if code != 0 || !strings.Contains(out, "NO FAILURE") || !strings.Contains(out, "ran other code") || !strings.Contains(out, "for context, the flake history") {
			t.Errorf("arbitrate on the fixed leg: exit %d, want 0, NO FAILURE, saying the last validate ran other code and what the history held:\n%s", code, out)
		}
		if _, err := os.Stat(filepath.Join(dir, "test-results", "ladder", ladder.FileName("TestStockContract/burst")+".json")); err == nil {
			t.Error("arbitrate saved an outcome for a test that did not fail")
		}
	})

	t.Run("a leg that runs only at level 2", func(t *testing.T) {
		t.Parallel()
		registry, err := os.ReadFile(filepath.Join(e2etest.RepoRoot(t), "testdata", "adopter", "contested-surfaces.toml"))
		if err != nil {
			t.Fatal(err)
		}
		tests, err := os.ReadFile(filepath.Join(e2etest.RepoRoot(t), "testdata", "adopter", "stock_test.go"))
		if err != nil {
			t.Fatal(err)
		}
		const reset = "t.Run(\"reset\", func(t *testing.T) {\n"
		if !strings.Contains(string(tests), reset) {
			t.Fatal("the adopter's stock_test.go has no reset subtest to restrict")
		}
		// In the surface's table: the registry ends with other tables.
		const legs = "legs = [\"burst\", \"reset\"]\n"
		if !strings.Contains(string(registry), legs) {
			t.Fatal("the adopter's registry has no legs line to add levels beside")
		}
		dir := e2etest.Adopter(t, map[string]string{
			"contested-surfaces.toml": strings.Replace(string(registry), legs, legs+"levels = { reset = [2, 3] }\n", 1),
			"stock_test.go": strings.Replace(string(tests), reset, reset+
				"\t\tif l, _ := contested.Level(); l < 2 {\n\t\t\tt.Skip(\"reset runs from level 2\")\n\t\t}\n", 1),
		})
		out, code := e2etest.Mage(t, dir, []string{"CONTESTED_SEEDS=1"}, "contested", "all")
		if code != 0 || strings.Contains(out, "NOT-RUN") || !strings.Contains(out, "NOT-AT-LEVEL") || !strings.Contains(out, "contract: GREEN") {
			t.Fatalf("contested all at level 1: exit %d; want 0, GREEN, reset NOT-AT-LEVEL and no NOT-RUN:\n%s", code, out)
		}
		out, code = e2etest.Mage(t, dir, nil, "validate")
		if code != 0 {
			t.Fatalf("validate at level 1: exit %d, want 0:\n%s", code, out)
		}
		var v e2etest.ValidateJSON
		e2etest.ReadJSON(t, filepath.Join(dir, "test-results", "validate.json"), &v)
		e2etest.SameVerdicts(t, dir, "adopter.stock", v.Surfaces)
	})
}

// machineryTest is a test of the adopter's own machinery that fails: no
// surface lists it.
const machineryTest = `package stock

import "testing"

func TestMachineryBringsUpItsProvider(t *testing.T) {
	t.Fatal("the provider never came up: debootstrap is not installed")
}
`

// TestAValidateThatTimesOutNamesTheTest: a battery test that sleeps past
// the battery's timeout (CONTESTED_TEST_TIMEOUT, go test's -timeout) turns
// validate RED with the timeout and the test it was running as a reason,
// and lists that test with the cause as its first line and an action that
// says how to find where it waits and how to raise the timeout; never as a
// package that failed outside any test.
func TestAValidateThatTimesOutNamesTheTest(t *testing.T) {
	t.Parallel()
	// Tests run in file order: TestHang runs first, whatever else is slow.
	dir := e2etest.Adopter(t, map[string]string{"a_hang_test.go": "package stock\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n\nfunc TestHang(t *testing.T) {\n\tt.Run(\"waits\", func(t *testing.T) { time.Sleep(time.Hour) })\n}\n"})
	out, code := e2etest.Mage(t, dir, []string{"CONTESTED_TEST_TIMEOUT=10s"}, "validate")
	if code != 1 {
		t.Fatalf("validate: exit %d, want 1:\n%s", code, out)
	}
	for _, want := range []string{
		fmt.Sprintf("battery: go test -json -count=1 -timeout=10s -p %d ./...", 2*runtime.GOMAXPROCS(0)),
		"package example.com/adopter timed out after 10s while running TestHang/waits: make the test faster or raise the battery's timeout (CONTESTED_TEST_TIMEOUT",
		"go test example.com/adopter -run '^TestHang$/^waits$' -count=1 -v",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("validate does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "failed outside any test") {
		t.Errorf("validate blames the package, not the test:\n%s", out)
	}
	var v e2etest.ValidateJSON
	e2etest.ReadJSON(t, filepath.Join(dir, "test-results", "validate.json"), &v)
	if len(v.BatteryFailures) != 1 || v.BatteryFailures[0].Test != "TestHang/waits" ||
		!strings.Contains(v.BatteryFailures[0].FirstLine, "timed out: still running when go test's -timeout of 10s ended the test binary") {
		t.Errorf("battery failures %+v; want TestHang/waits with the timeout as its first line", v.BatteryFailures)
	}
}
