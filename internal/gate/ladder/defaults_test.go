package ladder

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gate/verdict"
)

// TestAWalkWithoutRerunsOrWriterUsesItsDefaults: options that give no
// rerun count rerun the test twice, and options that give no writer
// still walk (progress goes nowhere). The module's test never builds, so
// each rerun is quick and the ladder ends before any contract runs.
func TestAWalkWithoutRerunsOrWriterUsesItsDefaults(t *testing.T) {
	opts := packageModule(t, map[string]string{"p/p_test.go": "package p\n\nimport \"testing\"\n\nfunc TestPContract(t *testing.T) {\n\tvar s string = Half(4)\n\t_ = s\n}\n"})
	opts.Reruns, opts.Out = 0, nil
	o, err := Walk(context.Background(), "TestPContract", opts)
	if err != nil {
		t.Fatal(err)
	}
	if o.Reruns.Runs != 2 || o.Reruns.NotRun != 2 || o.Reruns.Class != PackageFails {
		t.Errorf("reruns %+v; want the default 2, none of which ran the test (%s)", o.Reruns, PackageFails)
	}
	// Each rerun had a results directory of its own, numbered from 1.
	for _, run := range []string{"run-1", "run-2"} {
		if fi, err := os.Stat(opts.Env.ResultsDir.Join("ladder", "reruns", FileName("TestPContract"), run)); err != nil || !fi.IsDir() {
			t.Errorf("rerun directory %s: %v; want one directory per rerun, run-1 and run-2", run, err)
		}
	}
}

// TestATestIDWithoutAPackageIsRerunInTheSurfacesPackage: a test id that
// names no package is rerun in the package its surface names, not across
// the module: another package's test of the same name (which fails) is not
// this test. Here the surface's test passes, so there is no failure.
func TestATestIDWithoutAPackageIsRerunInTheSurfacesPackage(t *testing.T) {
	opts := packageModule(t, map[string]string{
		"p/p_test.go": "package p\n\nimport \"testing\"\n\nfunc TestPContract(t *testing.T) {\n\tif Half(4) != 2 {\n\t\tt.Fatal(\"Half(4) != 2\")\n\t}\n}\n",
		"q/q.go":      "package q\n",
		// Another package's TestPContract, which does not even build.
		"q/q_test.go": "package q\n\nimport \"testing\"\n\nfunc TestPContract(t *testing.T) {\n\tvar s string = 1\n\t_ = s\n}\n",
	})
	opts.Reruns = 1
	opts.Contracts = map[string]*contract.Result{"m.p": {Surface: "m.p", Contract: verdict.Green}}
	o, err := Walk(context.Background(), "TestPContract", opts)
	if err != nil {
		t.Fatal(err)
	}
	o.Write(opts.Out)
	if o.Reruns.Runs != 1 || o.Reruns.Failures != 0 || o.Reruns.Class != "passes" {
		t.Fatalf("reruns %+v; want one passing rerun of ./p's test alone", o.Reruns)
	}
	if !o.NoFailure() || !strings.Contains(o.Action, "no validate run to compare with") {
		t.Errorf("verdict %s, action %q; want NO FAILURE with no validate run to compare with", o.Verdict, o.Action)
	}
}
