package command

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/faultdir"
	"github.com/contested/contested/internal/gate"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gate/verdict"
	"github.com/contested/contested/internal/testmodule"
)

// module writes a minimal module with a registry into a temp dir.
func module(t *testing.T) string {
	t.Helper()
	return testmodule.Write(t, map[string]string{
		"go.mod":                  "module example.com/m\n\ngo 1.24\n",
		"m_test.go":               "package m\nimport \"testing\"\nfunc TestLeg(t *testing.T) {}\n",
		"contested-surfaces.toml": "schema = 1\n[gate]\nrecording_classes = [\"store\"]\nself_tests = [\"TestLeg\"]\n[[surface]]\nid = \"m.store\"\nclass = \"store\"\nowner = \"m-team\"\nbehavior = \"b\"\noracle = \"exactly-once\"\nlegs = [\"reset\"]\ntests = [\"TestLeg\"]\n",
	})
}

func deadAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestValidateRefusesToRunTheBatteryWhenPreflightFails: with a fault layer
// that cannot run, validate exits 3, says why, writes no stamp and deletes
// none of the evidence already on disk.
func TestValidateRefusesToRunTheBatteryWhenPreflightFails(t *testing.T) {
	dir := module(t)
	dead := deadAddr(t)
	t.Setenv(envvar.Layer, "")
	t.Setenv(envvar.ToxiproxyURL, "http://"+dead)
	t.Setenv(envvar.PostgresDSN, "postgres://u:p@"+dead+"/db")
	t.Setenv(envvar.ResultsDir, "")
	t.Setenv(envvar.Surfaces, "")
	faultDir := filepath.Join(dir, "test-results", "fault")
	if err := os.MkdirAll(faultDir, 0o755); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(faultDir, "earlier-run.json")
	if err := os.WriteFile(old, []byte(`{"schema":"contested/faultrecord@1"}`), 0o644); err != nil {
		t.Fatal(err)
	}

	var out strings.Builder
	err := Validate(context.Background(), ValidateOptions{Dir: dir, Out: &out})
	if got := ExitCode(err); got != ExitCannotRun {
		t.Fatalf("exit %d (%v), want %d; output:\n%s", got, err, ExitCannotRun, out.String())
	}
	if !strings.Contains(out.String(), "refusing to run the battery") {
		t.Errorf("validate does not say it refused to run the battery:\n%s", out.String())
	}
	if strings.Contains(out.String(), "battery: go test") {
		t.Errorf("the battery ran anyway:\n%s", out.String())
	}
	if _, err := os.Stat(filepath.Join(faultDir, faultdir.StampName)); err == nil {
		t.Error("a gate stamp was written although preflight failed")
	}
	if _, err := os.Stat(old); err != nil {
		t.Errorf("evidence from an earlier run was deleted: %v", err)
	}
}

func TestValidateOnBadInput(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  int
		says  string
	}{
		{"no go.mod", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "go.mod")) }, ExitUsage, "has no go.mod"},
		{"no registry", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "contested-surfaces.toml")) }, ExitUsage, "create the registry"},
		{"a registry that does not parse", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "contested-surfaces.toml"), []byte("schema = 1\n[gate\n"), 0o644)
		}, ExitUsage, "contested-surfaces.toml:2"},
		{"bogus layer", func(t *testing.T, dir string) { t.Setenv(envvar.Layer, "bogus") }, ExitUsage, "CONTESTED_LAYER"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := module(t)
			t.Setenv(envvar.Layer, "")
			t.Setenv(envvar.Surfaces, "")
			tt.setup(t, dir)
			var out strings.Builder
			err := Validate(context.Background(), ValidateOptions{Dir: dir, Out: &out})
			if got := ExitCode(err); got != tt.want || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("exit %d (%v), want %d saying %q", got, err, tt.want, tt.says)
			}
		})
	}
}

func TestContestedOnBadInput(t *testing.T) {
	tests := []struct {
		name    string
		surface string
		env     map[string]string
		want    int
		says    string
	}{
		{"no surface", "", nil, ExitUsage, "name a surface or all"},
		{"unknown surface", "m.nope", nil, ExitUsage, `surface "m.nope" is not in`},
		{"bad level", "m.store", map[string]string{"CONTESTED_LEVEL": "7"}, ExitUsage, "CONTESTED_LEVEL"},
		{"a registered test that does not exist", "m.store", map[string]string{"REWRITE_TEST": "TestGone"}, ExitUsage, `lists test "TestGone"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := module(t)
			t.Setenv(envvar.Surfaces, "")
			t.Setenv("CONTESTED_LEVEL", tt.env["CONTESTED_LEVEL"])
			if name := tt.env["REWRITE_TEST"]; name != "" {
				p := filepath.Join(dir, "contested-surfaces.toml")
				b, _ := os.ReadFile(p)
				os.WriteFile(p, []byte(strings.Replace(string(b), "\ntests = [\"TestLeg\"]", "\ntests = [\""+name+"\"]", 1)), 0o644)
			}
			var out strings.Builder
			err := Contested(context.Background(), ContestedOptions{Dir: dir, Surface: tt.surface, Out: &out})
			if got := ExitCode(err); got != tt.want || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("exit %d (%v), want %d saying %q", got, err, tt.want, tt.says)
			}
		})
	}
}

func TestArbitrateExitCodes(t *testing.T) {
	adopter, err := filepath.Abs("../../testdata/adopter")
	if err != nil {
		t.Fatal(err)
	}
	dead := deadAddr(t)
	tests := []struct {
		name, test string
		want       int
		says       string
	}{
		{"no test named", "", ExitUsage, "name the failing test"},
		{"an unknown test id", "TestNoSuchThing", ExitUsage, "is not a test of"},
		{"the fault layer is down", "TestStockContract/reset", ExitCannotRun, "owner fault layer"},
		{"a test outside the registry walks the ladder too, which needs the layer", "TestOutsideRegistry", ExitCannotRun, "owner fault layer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(envvar.Layer, "")
			t.Setenv(envvar.ToxiproxyURL, "http://"+dead)
			t.Setenv(envvar.PostgresDSN, "postgres://u:p@"+dead+"/db")
			t.Setenv(envvar.ResultsDir, t.TempDir())
			t.Setenv(envvar.Surfaces, "")
			var out strings.Builder
			err := Arbitrate(context.Background(), ArbitrateOptions{Dir: adopter, Test: tt.test, Out: &out})
			if got := ExitCode(err); got != tt.want || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("exit %d (%v), want %d saying %q; output:\n%s", got, err, tt.want, tt.says, out.String())
			}
		})
	}
}

// TestValidateVerdict is validate's rule: GREEN only when the battery
// passed, the six phases certified and no registered leg that ran is
// FAIL, INCONCLUSIVE or PARTIAL (nor NOT-RUN in a whole battery).
func TestValidateVerdict(t *testing.T) {
	passed := &battery.Result{Tests: []battery.Test{{Package: "example.com/m", Name: "TestLeg", Action: "pass"}}}
	failed := &battery.Result{Tests: []battery.Test{{Package: "example.com/m", Name: "TestLeg", Action: "fail"}}, ExitCode: 1}
	certified := &gate.Report{Certified: true, Phases: []gate.Phase{{Number: 1, OK: true}}}
	refused := &gate.Report{Phases: []gate.Phase{{Number: 3, Name: "every armed fault fired"}}}
	surface := func(c verdict.Contract, legs ...verdict.Verdict) []*contract.Result {
		r := &contract.Result{Surface: "m.store", Contract: c}
		for i, v := range legs {
			r.Legs = append(r.Legs, verdict.Leg{Lever: fmt.Sprintf("leg%d", i), Verdict: v})
		}
		return []*contract.Result{r}
	}
	tests := []struct {
		name   string
		res    *battery.Result
		gate   *gate.Report
		judged []*contract.Result
		whole  bool
		green  bool
		says   string
	}{
		{"all passes", passed, certified, surface(verdict.Green, verdict.PassSmoke, verdict.PassSmoke), true, true, ""},
		{"a leg not at this level", passed, certified, surface(verdict.Green, verdict.PassSmoke, verdict.NotAtLevel), true, true, ""},
		{"PARTIAL-surface", passed, certified, surface(verdict.Inconclusive, verdict.PassSmoke, verdict.PartialSurface), true, false, "surface m.store is INCONCLUSIVE (leg1 PARTIAL-surface)"},
		{"PARTIAL-model", passed, certified, surface(verdict.Inconclusive, verdict.PartialModel), true, false, "leg0 PARTIAL-model"},
		{"oracle too weak", passed, certified, surface(verdict.Inconclusive, verdict.InconclusiveOracleTooWeak), true, false, "INCONCLUSIVE-oracle-too-weak"},
		{"armed, not fired", passed, certified, surface(verdict.Inconclusive, verdict.InconclusiveFaultNotProven), true, false, "INCONCLUSIVE-fault-not-proven"},
		{"a FAIL is RED", failed, certified, surface(verdict.Red, verdict.FailReproducible), true, false, "surface m.store is RED (leg0 FAIL-reproducible)"},
		{"NOT-RUN in a whole battery", passed, certified, surface(verdict.Inconclusive, verdict.PassSmoke, verdict.NotRun), true, false, "leg1 NOT-RUN"},
		{"NOT-RUN in a selected battery", passed, certified, surface(verdict.Inconclusive, verdict.PassSmoke, verdict.NotRun), false, true, ""},
		{"the gate refused", passed, refused, surface(verdict.Green, verdict.PassSmoke), true, false, "gate refused: phase 3"},
		{"no surface ran", passed, certified, nil, true, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reasons := validateReasons(tt.res, tt.gate, tt.judged, tt.whole, nil, nil)
			if green := len(reasons) == 0; green != tt.green {
				t.Fatalf("green %v (%v), want %v", green, reasons, tt.green)
			}
			if tt.says != "" && !strings.Contains(strings.Join(reasons, "; "), tt.says) {
				t.Errorf("reasons %v do not say %q", reasons, tt.says)
			}
		})
	}
}

func TestWholeBattery(t *testing.T) {
	tests := []struct {
		name string
		opts ValidateOptions
		want bool
	}{
		{"defaults", ValidateOptions{}, true},
		{"./...", ValidateOptions{Patterns: []string{"./..."}}, true},
		{"-v", ValidateOptions{Args: []string{"-v"}}, true},
		{"one package", ValidateOptions{Patterns: []string{"./stock"}}, false},
		{"-run", ValidateOptions{Args: []string{"-run", "TestX"}}, false},
		{"-run=", ValidateOptions{Args: []string{"-run=TestX"}}, false},
		{"-short", ValidateOptions{Args: []string{"-short"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := wholeBattery(tt.opts); got != tt.want {
				t.Errorf("wholeBattery = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestTheBatteryReasonCountsWhatFailed: the verdict line counts a
// contract's failing legs, not their parent as well, names the packages
// they are in, and lists a package that failed outside its tests apart.
func TestTheBatteryReasonCountsWhatFailed(t *testing.T) {
	fail := func(pkg, name string) battery.Test { return battery.Test{Package: pkg, Name: name, Action: "fail"} }
	tests := []struct {
		name string
		res  *battery.Result
		want string
	}{
		{"a leg and its parent", &battery.Result{Tests: []battery.Test{fail("m", "TestC"), fail("m", "TestC/reset")},
			Packages: []battery.Package{{Name: "m", Action: "fail"}}}, "battery failed (1 subtest in 1 package)"},
		{"two legs", &battery.Result{Tests: []battery.Test{fail("m", "TestC"), fail("m", "TestC/reset"), fail("m", "TestC/burst")},
			Packages: []battery.Package{{Name: "m", Action: "fail"}}}, "battery failed (2 subtests in 1 package)"},
		{"a test and a leg of another", &battery.Result{Tests: []battery.Test{fail("m", "TestA"), fail("m", "TestC"), fail("m", "TestC/reset")},
			Packages: []battery.Package{{Name: "m", Action: "fail"}}}, "battery failed (1 test and 1 subtest in 1 package)"},
		{"tests in two packages", &battery.Result{Tests: []battery.Test{fail("m/a", "TestA"), fail("m/b", "TestB")},
			Packages: []battery.Package{{Name: "m/a", Action: "fail"}, {Name: "m/b", Action: "fail"}}}, "battery failed (2 tests in 2 packages)"},
		{"a package that does not build", &battery.Result{Packages: []battery.Package{{Name: "m/broken", Action: "fail", Output: "x.go:1:1: undefined: y\nFAIL\tm/broken [build failed]\n"}}},
			"battery failed (1 package failed outside its tests: m/broken does not build"},
		{"both", &battery.Result{Tests: []battery.Test{fail("m", "TestC")},
			Packages: []battery.Package{{Name: "m", Action: "fail"}, {Name: "m/broken", Action: "fail", Output: "x.go:1:1: undefined: y\nFAIL\tm/broken [build failed]\n"}}},
			"battery failed (1 test in 1 package; 1 package failed outside its tests: m/broken does not build"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := "battery failed" + batteryFailures(tt.res); !strings.HasPrefix(got, tt.want) {
				t.Errorf("%q, want it to start %q", got, tt.want)
			}
		})
	}
}
