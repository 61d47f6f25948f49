package battery

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/contested/contested/internal/testmodule"
	"github.com/contested/contested/internal/tier"
)

func TestRunReportsEachKindOfOutcome(t *testing.T) {
	dir := testmodule.Write(t, map[string]string{
		"go.mod":                "module example.com/bat\n\ngo 1.24\n",
		"good/good_test.go":     "package good\nimport \"testing\"\nfunc TestGood(t *testing.T) {}\nfunc TestSkipped(t *testing.T) { t.Skip(\"not here\") }\n",
		"bad/bad_test.go":       "package bad\nimport \"testing\"\nfunc TestBad(t *testing.T) {\n\tt.Run(\"leg=reset\", func(t *testing.T) { t.Log(\"the oracle saw a duplicate\"); t.Fail() })\n\tt.Run(\"leg=ok\", func(t *testing.T) {})\n}\n",
		"broken/broken_test.go": "package broken\nimport \"testing\"\nfunc TestBroken(t *testing.T) { undefined() }\n",
		// A test file that does not parse, and an external test package that does not compile.
		"unparsed/u_test.go": "package unparsed\nimport \"testing\"\nfunc TestU(t *testing.T) {\n\tif true {\n}\n",
		"external/x.go":      "package external\n",
		"external/x_test.go": "package external_test\nimport \"testing\"\nfunc TestX(t *testing.T) { missing() }\n",
		"notests/x.go":       "package notests\n",
	})
	var progress strings.Builder
	var events strings.Builder
	res, err := Run(context.Background(), Options{Dir: dir, Out: &progress, Events: &events})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Log("\n" + progress.String())
	if res.OK() || res.ExitCode == 0 {
		t.Fatalf("a battery with failures reads as OK (exit %d)", res.ExitCode)
	}
	failed := map[string]Test{}
	for _, ft := range res.Failed() {
		failed[ft.Name] = ft
	}
	if _, ok := failed["TestBad/leg=reset"]; !ok {
		t.Errorf("failed tests %v do not include TestBad/leg=reset", keys(failed))
	}
	if ft := failed["TestBad"]; !strings.Contains(ft.Output, "the oracle saw a duplicate") {
		t.Errorf("TestBad's output does not carry its subtest's log: %q", ft.Output)
	}
	if _, ok := failed["TestGood"]; ok {
		t.Error("TestGood reported as failed")
	}
	var broken *Package
	for _, p := range res.FailedPackages() {
		if strings.HasSuffix(p.Name, "/broken") {
			broken = &p
		}
	}
	if broken == nil || !strings.Contains(broken.Output, "undefined") {
		t.Errorf("the package that does not compile is not reported with its build error: %+v", res.FailedPackages())
	}
	// Each package that fails to build is one failure, under its own name,
	// with go's message: never a second entry named after its test binary.
	outputs := map[string]string{}
	for _, p := range res.FailedPackages() {
		outputs[strings.TrimPrefix(p.Name, "example.com/bat/")] = p.Output
	}
	for pkg, says := range map[string]string{"broken": "undefined: undefined", "unparsed": "u_test.go:5", "external": "undefined: missing"} {
		if !strings.Contains(outputs[pkg], says) {
			t.Errorf("package %s: output %q lacks %q", pkg, outputs[pkg], says)
		}
	}
	if len(outputs) != 3 {
		t.Errorf("failed packages %v; want broken, unparsed and external only", keys2(outputs))
	}
	for _, want := range []string{"packages)", "FAIL bad TestBad/leg=reset", "/6] ok   good", "tests passed"} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("progress does not say %q", want)
		}
	}
	if !strings.Contains(events.String(), `"Action":"run"`) {
		t.Error("raw events were not forwarded")
	}
}

func TestRunAllGreen(t *testing.T) {
	dir := testmodule.Write(t, map[string]string{
		"go.mod":      "module example.com/green\n\ngo 1.24\n",
		"a/a_test.go": "package a\nimport \"testing\"\nfunc TestA(t *testing.T) {}\n",
	})
	res, err := Run(context.Background(), Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() {
		t.Fatalf("green battery not OK: %+v", res)
	}
}

func TestRunWithBadPatternsIsAFailureWithGoOutput(t *testing.T) {
	dir := testmodule.Write(t, map[string]string{"go.mod": "module example.com/x\n\ngo 1.24\n", "a/a_test.go": "package a\n"})
	res, err := Run(context.Background(), Options{Dir: dir, Args: []string{"-notaflag"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK() {
		t.Fatal("go test with a bad flag reads as OK")
	}
	if ps := res.FailedPackages(); len(ps) == 0 || strings.TrimSpace(ps[len(ps)-1].Output) == "" {
		t.Errorf("the failure does not carry go's message: %+v", ps)
	}
}

func TestRunOnABrokenModuleDoesNotRun(t *testing.T) {
	dir := testmodule.Write(t, map[string]string{"go.mod": "module example.com/x\n\ngo 1.24\nrequire (\n"})
	_, err := Run(context.Background(), Options{Dir: dir})
	if !errors.Is(err, ErrNotRun) || !strings.Contains(err.Error(), "go.mod") {
		t.Fatalf("Run on a broken go.mod: err = %v, want ErrNotRun naming go.mod", err)
	}
}

func keys(m map[string]Test) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func keys2(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestAFailureIsWhatTheTestReported: a failing test's Failure is its
// t.Error and t.Fatal messages (or its panic), never a log line printed
// before them; a skipped test that lacks a capability names it. Both
// through go test and through prebuilt binaries.
func TestAFailureIsWhatTheTestReported(t *testing.T) {
	tier.Full(t, "go test of a planted module")
	t.Parallel()
	dir := testmodule.Write(t, map[string]string{
		"go.mod": "module example.com/why\n\ngo 1.24\n",
		"why/why_test.go": `package why
import "testing"
func TestLogsThenFails(t *testing.T) {
	t.Logf("reset: 15 tenures, 15 acquires, 15 loss checks")
	t.Fatalf("could not acquire the lock within 4s")
}
func TestLegs(t *testing.T) {
	t.Run("reset", func(t *testing.T) {
		t.Log("armed")
		t.Errorf("oracle exactly-once: VIOLATED: t-3 applied twice\nsecond line")
	})
}
func TestPanics(t *testing.T) { t.Log("before"); panic("boom") }
`,
		"skips/skips_test.go": `package skips
import "testing"
func TestNeedsChromium(t *testing.T) { t.Skip("missing capability chromium: not found on PATH; provide it: apt-get install chromium") }
`,
	})
	bins, err := NewBinaries(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bins.Close() })
	for _, through := range []struct {
		name string
		bins *Binaries
	}{{"go test", nil}, {"prebuilt", bins}} {
		t.Run(through.name, func(t *testing.T) {
			res, err := Run(context.Background(), Options{Dir: dir, Binaries: through.bins})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]Test{}
			for _, tt := range res.Tests {
				got[tt.Name] = tt
			}
			for name, want := range map[string]string{
				"TestLogsThenFails": "why_test.go:5: could not acquire the lock within 4s",
				"TestLegs/reset":    "why_test.go:10: oracle exactly-once: VIOLATED: t-3 applied twice\nsecond line",
				"TestLegs":          "why_test.go:10: oracle exactly-once: VIOLATED: t-3 applied twice\nsecond line",
				"TestPanics":        "panic: boom",
			} {
				if f := got[name].Failure; !strings.HasPrefix(f, want) {
					t.Errorf("%s: Failure = %q, want it to start %q", name, f, want)
				}
				if strings.Contains(got[name].Failure, "tenures") || strings.Contains(got[name].Failure, "armed") {
					t.Errorf("%s: Failure %q carries a log line", name, got[name].Failure)
				}
			}
			if m := got["TestNeedsChromium"].Missing; len(m) != 1 || m[0] != "chromium" {
				t.Errorf("TestNeedsChromium: Missing = %v, want [chromium]", m)
			}
		})
	}
}
