package battery

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/contested/contested/internal/testmodule"
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
