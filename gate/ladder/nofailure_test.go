package ladder

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contested/contested/contested/runenv"
	"github.com/contested/contested/faultlayer"
	"github.com/contested/contested/gate/contract"
	"github.com/contested/contested/gate/verdict"
	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/testlog"
	"github.com/contested/contested/internal/testmodule"
	"github.com/contested/contested/registry"
)

// TestATestThatDidNotFailHasNothingToArbitrate: a test that passes every
// rerun and did not fail in the battery it was reported from (or when no
// battery is known) ends with NO FAILURE, no owner and no contract run;
// the same reruns with a battery in which it failed go on to judge it.
func TestATestThatDidNotFailHasNothingToArbitrate(t *testing.T) {
	passed := &battery.Result{Tests: []battery.Test{
		{Package: "example.com/adopter", Name: "TestStockReport", Action: "pass"},
		{Package: "example.com/adopter", Name: "TestStockContract", Action: "fail"},
	}}
	failed := &battery.Result{Tests: []battery.Test{{Package: "example.com/adopter", Name: "TestStockReport", Action: "fail"}}}
	packageFailed := &battery.Result{Packages: []battery.Package{{Name: "example.com/adopter", Action: "fail", Output: "FAIL\texample.com/adopter [build failed]\n"}}}
	tests := []struct {
		name      string
		seen      *battery.Result
		noFailure bool
	}{
		{"passed in the last run", passed, true},
		{"no last run", nil, true},
		{"failed in the last run", failed, false},
		{"its package failed in the last run", packageFailed, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := options(t)
			opts.Reruns = 1
			opts.Seen = tt.seen
			opts.Contracts = map[string]*contract.Result{"adopter.stock": {Surface: "adopter.stock", Contract: verdict.Green}}
			o, err := Walk(context.Background(), "TestStockReport", opts)
			if err != nil {
				t.Fatal(err)
			}
			o.Write(testlog.Writer(t))
			if o.Reruns.Class != "passes" {
				t.Fatalf("reruns %+v; the fixture's TestStockReport should pass", o.Reruns)
			}
			if got := o.NoFailure(); got != tt.noFailure {
				t.Fatalf("NoFailure() = %v (verdict %s, owner %q), want %v", got, o.Verdict, o.Owner, tt.noFailure)
			}
			if !tt.noFailure {
				if o.Owner != TestAuthor || o.Contract != verdict.Green {
					t.Errorf("owner %q, contract %s; want the test author over a GREEN contract", o.Owner, o.Contract)
				}
				return
			}
			if o.Owner != "" || o.Contract != "" || len(o.Legs) != 0 || !strings.Contains(o.Action, "nothing to arbitrate") {
				t.Errorf("owner %q, contract %q, legs %d, action %q; want no owner, no contract, nothing to arbitrate", o.Owner, o.Contract, len(o.Legs), o.Action)
			}
			// The answer says which battery it compared with, or that there was none.
			where := map[bool]string{true: "no validate run to compare with", false: "did not fail in the last validate run"}[tt.seen == nil]
			if !strings.Contains(o.Action, where) {
				t.Errorf("action %q does not say %q", o.Action, where)
			}
		})
	}
}

// packageModule writes a module whose contract test lives in a package
// that fails before its tests run (files["p/p_test.go"]), registered as
// surface m.p, and returns ladder options over it with a preflight that
// passed (no layer is reached: the test never runs).
func packageModule(t *testing.T, files map[string]string) Options {
	t.Helper()
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
	return Options{Env: runenv.Env{ModuleRoot: dir, Registry: regPath, ResultsDir: t.TempDir()}, Registry: reg,
		Preflight: &p, Reruns: 2, Out: testlog.Writer(t)}
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
			if o.Owner != TestAuthor || o.Step != 3 || o.Contract != "" || !strings.Contains(o.Verdict, tt.what) {
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
