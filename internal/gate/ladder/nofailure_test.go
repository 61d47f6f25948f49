package ladder

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contested/contested/internal/battery/batterytest"
	"github.com/contested/contested/internal/faultlayer"
	"github.com/contested/contested/internal/registry"
	"github.com/contested/contested/internal/rundir"
	"github.com/contested/contested/internal/runenv"
	"github.com/contested/contested/internal/testlog"
	"github.com/contested/contested/internal/testmodule"
	"github.com/contested/contested/internal/tier"
)

// packageModule writes a module whose contract test lives in a package
// that fails before its tests run (files["p/p_test.go"]), registered as
// surface m.p, and returns ladder options over it with a preflight that
// passed (no layer is reached: the test never runs).
func packageModule(t *testing.T, files map[string]string) Options {
	t.Helper()
	tier.Full(t, "go test of a planted module, rerun alone")
	files["go.mod"] = "module example.com/m\n\ngo 1.26\n"
	files["p/p.go"] = "package p\n\n// Half is half of n.\nfunc Half(n int) int { return n / 2 }\n"
	files["contested-surfaces.toml"] = `schema = 1

[[surface]]
id = "m.p"
class = "store"
owner = "p-team"
behavior = "halves"
oracle = "exact"
legs = ["reset"]
tests = ["TestPContract"]
package = "./p"
`
	dir := testmodule.Write(t, files)
	regPath := filepath.Join(dir, "contested-surfaces.toml")
	reg, err := registry.Load(regPath)
	if err != nil {
		t.Fatal(err)
	}
	p := faultlayer.Preflight{Checks: []faultlayer.Check{{Name: "toxiproxy /version", OK: true}}}
	return Options{Env: runenv.Env{ModuleRoot: dir, Registry: regPath, ResultsDir: rundir.Dir(t.TempDir())}, Registry: reg,
		Preflight: &p, Reruns: 2, Out: testlog.Writer(t), Binaries: batterytest.Binaries(t)}
}

// TestATestWhosePackageDoesNotRunIsTheTestAuthors: when the package fails
// before the test runs (its TestMain exits, it does not build), the ladder
// says so and gives it to the test author without judging the contract,
// which could not run either.
func TestATestWhosePackageDoesNotRunIsTheTestAuthors(t *testing.T) {
	tests := []struct {
		name, body, what, says string
	}{
		{"a TestMain that exits", "package p\n\nimport (\n\t\"fmt\"\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) {\n\tfmt.Println(\"setup: pull image postgres:16: 403 Forbidden\")\n\tos.Exit(1)\n}\n\nfunc TestPContract(t *testing.T) {}\n",
			ExitedEarly, "403 Forbidden"},
		{"a compile error", "package p\n\nimport \"testing\"\n\nfunc TestPContract(t *testing.T) {\n\tvar s string = Half(4)\n\t_ = s\n}\n",
			NotBuilt, "cannot use Half(4)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := packageModule(t, map[string]string{"p/p_test.go": tt.body})
			o, err := Walk(context.Background(), "TestPContract", opts)
			if err != nil {
				t.Fatal(err)
			}
			o.Write(testlog.Writer(t))
			if o.Reruns.Class != PackageFails || o.Reruns.NotRun != 2 || o.PackageFailure == nil || o.PackageFailure.What != tt.what {
				t.Fatalf("reruns %+v, package failure %+v; want %s twice: %s", o.Reruns, o.PackageFailure, PackageFails, tt.what)
			}
			if o.Owner != TestAuthor || o.Step != 3 || o.Contract != "" || !strings.Contains(string(o.Verdict), tt.what) {
				t.Errorf("owner %q, step %d, contract %q, verdict %q; want the test author at step 3, no contract", o.Owner, o.Step, o.Contract, o.Verdict)
			}
			if !strings.Contains(strings.Join(o.Evidence, "\n"), tt.says) || !strings.Contains(o.Action, "m.p's contract") {
				t.Errorf("evidence %q, action %q; want %q and the surface", o.Evidence, o.Action, tt.says)
			}
			if issue := o.Issue(); !strings.Contains(issue, "its package "+tt.what) {
				t.Errorf("issue body lacks what happened:\n%s", issue)
			}
		})
	}
}

// TestATestThatNeverRanInAPassingPackageIsNoPackageFailure: a rerun in
// which the test did not run while its package passed (a TestMain that
// exits 0 before m.Run, a build constraint that leaves the file out) is
// not a package failure: NotRun counts only the runs its package failed.
// Nor is it a pass: a test that never ran in any rerun is the test
// author's, "test never runs", never NO FAILURE.
func TestATestThatNeverRanInAPassingPackageIsNoPackageFailure(t *testing.T) {
	tests := []struct {
		name, body string
		unknown    bool // go does not list the test: Locate refuses it before any rerun
	}{
		{"a TestMain that exits 0", "package p\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) { os.Exit(0) }\n\nfunc TestPContract(t *testing.T) {}\n", false},
		{"a build constraint", "//go:build never\n\npackage p\n\nimport \"testing\"\n\nfunc TestPContract(t *testing.T) {}\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			files := map[string]string{"p/p_test.go": tt.body}
			if tt.unknown {
				files["p/other_test.go"] = "package p\n\nimport \"testing\"\n\nfunc TestOther(t *testing.T) {}\n"
			}
			opts := packageModule(t, files)
			o, err := Walk(context.Background(), "TestPContract", opts)
			if tt.unknown {
				if !errors.Is(err, ErrUnknownTest) {
					t.Fatalf("Walk = %v, %v; want ErrUnknownTest for a test go does not list", o, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.Reruns.Runs != 2 || o.Reruns.NotRun != 0 || o.Reruns.Class == PackageFails || o.PackageFailure != nil {
				t.Fatalf("reruns %+v, package failure %+v; want two runs and no package failure", o.Reruns, o.PackageFailure)
			}
			if o.Reruns.Class != NeverRuns || o.Reruns.Absent != 2 || o.Verdict == NoFailure || o.Owner != TestAuthor || !strings.Contains(o.Action, "without running TestPContract") {
				t.Errorf("reruns %+v, verdict %q, owner %q, action %q; want %q, the test author's, saying the test never ran", o.Reruns, o.Verdict, o.Owner, o.Action, NeverRuns)
			}
		})
	}
}

// TestLocateReadsPastASyntaxError: a test file that does not parse hides
// no other test; a name that may sit behind the error is refused saying
// so; a module go cannot list at all is ErrCannotList.
func TestLocateReadsPastASyntaxError(t *testing.T) {
	opts := packageModule(t, map[string]string{
		"p/p_test.go":    "package p\n\nimport \"testing\"\n\nfunc TestPContract(t *testing.T) {}\n",
		"q/q.go":         "package q\n",
		"q/q_test.go":    "package q\n\nimport \"testing\"\n\nfunc TestQ(t *testing.T) {\n\tif true {\n}\n\nfunc TestAfter(t *testing.T) {}\n",
		"q/q2_test.go":   "package q\n",
		"r/r_ok_test.go": "package r\n",
	})
	if s, err := Locate(context.Background(), "TestPContract", opts); err != nil || s.ID != "m.p" {
		t.Fatalf("Locate(TestPContract) = %s, %v; want m.p despite q's syntax error", s.ID, err)
	}
	_, err := Locate(context.Background(), "TestAfter", opts)
	if !errors.Is(err, ErrUnknownTest) || !strings.Contains(err.Error(), "syntax error") || !strings.Contains(err.Error(), "q_test.go") {
		t.Errorf("Locate(TestAfter) = %v; want ErrUnknownTest naming the file that does not parse", err)
	}
	if err := writeFile(filepath.Join(opts.Env.ModuleRoot, "go.mod"), "module example.com/m\n\nnonsense here\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := Locate(context.Background(), "TestPContract", opts); !errors.Is(err, ErrCannotList) {
		t.Errorf("Locate in a module with a broken go.mod = %v; want ErrCannotList", err)
	}
}

func writeFile(path, body string) error { return os.WriteFile(path, []byte(body), 0o644) }
