package ladder

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contested/contested/internal/battery/batterytest"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/runenv"
	"github.com/contested/contested/internal/testlog"

	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/faultlayer"
	"github.com/contested/contested/internal/faultlayer/faulttest"
	"github.com/contested/contested/internal/gate/verdict"
	"github.com/contested/contested/internal/registry"
	"github.com/contested/contested/internal/rundir"
)

// TestMain runs every contract the tests walk to over one seed (the
// adopter's budget is more), for the whole process: the tests that walk
// the adopter fixture run in parallel, where t.Setenv may not be used.
func TestMain(m *testing.M) {
	if err := os.Setenv(envvar.Seeds, "1"); err != nil {
		panic(err)
	}
	code := m.Run()
	batterytest.Close()
	faulttest.Close()
	os.Exit(code)
}

// options returns ladder options over the adopter fixture with a healthy
// layer; extraEnv is added to what the tests see.
func options(t *testing.T, extraEnv ...string) Options {
	t.Helper()
	dir, err := filepath.Abs("../../../testdata/adopter")
	if err != nil {
		t.Fatal(err)
	}
	regPath := filepath.Join(dir, "contested-surfaces.toml")
	reg, err := registry.Load(regPath)
	if err != nil {
		t.Fatal(err)
	}
	l := faulttest.Layer(t)
	p := faultlayer.Preflight{Checks: []faultlayer.Check{{Name: "toxiproxy /version", OK: true}}}
	env := runenv.Env{ModuleRoot: dir, Registry: regPath, ResultsDir: rundir.Dir(t.TempDir())}.Attach(append(l.Env(), extraEnv...), l.RunID)
	return Options{Env: env, Registry: reg, Preflight: &p, Reruns: 3, Out: testlog.Writer(t), Binaries: batterytest.Binaries(t)}
}

func TestAFaultLayerThatIsDownCannotRun(t *testing.T) {
	opts := options(t)
	opts.Preflight, opts.LayerErr = nil, fmt.Errorf("%w: Toxiproxy at http://127.0.0.1:1 does not answer", faultlayer.ErrCannotRun)
	o, err := Walk(context.Background(), "TestStockContract/reset", opts)
	if err != nil {
		t.Fatal(err)
	}
	if o.Step != 2 || o.Owner != FaultLayer || o.Contract != verdict.CannotRun || !strings.Contains(o.Action, "does not answer") {
		t.Fatalf("step %d, owner %s, contract %s, action %q; want step 2, fault layer, CANNOT RUN, saying what failed", o.Step, o.Owner, o.Contract, o.Action)
	}
}

// TestATestOutsideTheRegistryWalksTheLadderToo: a test no surface lists
// is walked as an ordinary test: rerun alone, and owned by its author once
// the evidence is in (never "register it"); one that did not fail has
// nothing to arbitrate.
func TestATestOutsideTheRegistryWalksTheLadderToo(t *testing.T) {
	opts := options(t)
	if _, err := Locate(context.Background(), "TestOutsideRegistry", opts); !errors.Is(err, ErrNotContractTest) {
		t.Fatalf("Locate: %v, want ErrNotContractTest", err)
	}
	for _, id := range []string{"TestOutsideRegistry", "example.com/adopter.TestOutsideRegistry"} {
		o, err := Walk(context.Background(), id, opts)
		if err != nil {
			t.Fatalf("Walk(%s): %v", id, err)
		}
		if o.Surface != nil || o.Reruns.Runs == 0 || !o.NoFailure() {
			t.Fatalf("Walk(%s) without a battery: surface %v, reruns %+v, verdict %s; want no surface, reruns, NO FAILURE", id, o.Surface, o.Reruns, o.Verdict)
		}
	}
	opts.Seen = &battery.Result{Tests: []battery.Test{{Package: "example.com/adopter", Name: "TestOutsideRegistry", Action: "fail", Failure: "stock_test.go:145: boom"}}}
	o, err := Walk(context.Background(), "TestOutsideRegistry", opts)
	if err != nil {
		t.Fatal(err)
	}
	o.Write(testlog.Writer(t))
	if o.Owner != TestAuthor || o.Verdict != "fails only in the battery" || o.Reruns.Class != Passes || o.Reason != "stock_test.go:145: boom" {
		t.Fatalf("owner %s, verdict %q, reruns %+v, reason %q; want the test author's, fails only in the battery, with its reason", o.Owner, o.Verdict, o.Reruns, o.Reason)
	}
	if strings.Contains(strings.ToLower(o.Action), "register") {
		t.Errorf("the action tells the user to register a test: %s", o.Action)
	}
	// A registered test's name in another package is not the surface's.
	if _, err := Locate(context.Background(), "example.com/elsewhere.TestStockContract/burst", opts); err == nil {
		t.Error("Locate mapped a test of another package to adopter.stock")
	}
}

func TestNewPlain(t *testing.T) {
	tests := []struct {
		name, pkg, test, output string
		first, action, what     string
	}{
		{"a test", "example.com/m/faultlayer", "TestProviders/containers", "=== RUN   TestProviders/containers\n    layer_test.go:42: debootstrap is not installed\n--- FAIL: TestProviders/containers (0.01s)\n",
			"layer_test.go:42: debootstrap is not installed", "go test example.com/m/faultlayer -run '^TestProviders$/^containers$' -count=1", ""},
		// How many of its tests ran is unknown: never "after its tests passed".
		{"a package outside any test", "example.com/m/broken", "", "# example.com/m/broken\nundefined: x\nFAIL\n", "undefined: x", "go test example.com/m/broken -count=1", ExitedEarly},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPlain(tt.pkg, tt.test, tt.output)
			if p.FirstLine != tt.first || !strings.Contains(p.Action, tt.action) || p.Owner != PlainOwner || p.What != tt.what {
				t.Errorf("NewPlain = %+v; want first line %q, an action with %q and what %q", p, tt.first, tt.action, tt.what)
			}
		})
	}
}

// TestPackageFailureSaysWhatHappened reads go test's own output for each
// way a package fails outside any test into what happened, the line that
// says so and what to do.
func TestPackageFailureSaysWhatHappened(t *testing.T) {
	const pkg = "example.com/m/p"
	tests := []struct {
		name, output string
		ran          int
		what, first  string
		action       string
	}{
		{"a compile error", "# example.com/m/p [example.com/m/p.test]\np/p_test.go:6:17: cannot use Half(4) (value of type int) as string value\nFAIL\texample.com/m/p [build failed]\n", 0,
			NotBuilt, "p/p_test.go:6:17: cannot use Half(4) (value of type int) as string value", "fix the compile error (go vet example.com/m/p"},
		{"a syntax error", "# example.com/m/p\np/s_test.go:9:3: expected '}', found 'EOF'\nFAIL\texample.com/m/p [setup failed]\n", 0,
			NotLoaded, "p/s_test.go:9:3: expected '}', found 'EOF'", "a syntax error, an import cycle"},
		{"a TestMain that exits before m.Run", "setup: pull image postgres:16: 403 Forbidden\nFAIL\texample.com/m/p\t0.005s\n", 0,
			ExitedEarly, "setup: pull image postgres:16: 403 Forbidden", "go test example.com/m/p -count=1 -v"},
		{"a TestMain that panics", "panic: set-up: no database\n\ngoroutine 1 [running]:\nexample.com/m/p.TestMain(...)\n\t/src/p/p_test.go:5\nFAIL\texample.com/m/p\t0.011s\n", 0,
			PanickedEarly, "panic: set-up: no database", "fix the panic"},
		{"a TestMain that fails after its tests", "tear-down: drop schema: connection refused\nFAIL\texample.com/m/p\t0.2s\n", 3,
			ExitedAfter, "tear-down: drop schema: connection refused", "after m.Run"},
		{"a lost test binary", "the package started and never finished", 0, NeverFinished, "the package started and never finished", "where it stops"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := PackageFailure(pkg, tt.output, tt.ran)
			if p.What != tt.what || p.FirstLine != tt.first || !strings.Contains(p.Action, tt.action) || p.Owner != PlainOwner || p.Package != pkg || p.Test != "" {
				t.Errorf("PackageFailure = %+v; want what %q, first line %q, an action with %q", p, tt.what, tt.first, tt.action)
			}
		})
	}
}

// TestPlainSaysWhatEndedATest: a test that go test's -timeout or a panic
// outside it ended is described by that, with an action that says how to
// find where it waits (and, for a timeout, how to raise it), never as a
// package that failed outside any test.
func TestPlainSaysWhatEndedATest(t *testing.T) {
	const pkg = "example.com/m/e2e"
	timedOut := battery.Test{Package: pkg, Name: "TestValidate/a_defect", Action: "fail", Timeout: "10m0s",
		Cause:  "timed out: still running when go test's -timeout of 10m0s ended the test binary",
		Output: "=== RUN   TestValidate/a_defect\n    e2e_test.go:80: running validate\npanic: test timed out after 10m0s\n\trunning tests:\n"}
	panicked := battery.Test{Package: pkg, Name: "TestBoom", Action: "fail", Cause: "the test binary exited while it ran: a panic outside the test's goroutine, os.Exit or a crash",
		Output: "=== RUN   TestBoom\npanic: the worker gave up\n\ngoroutine 7 [running]:\n"}
	stopped := battery.Test{Package: pkg, Name: "TestSlow", Action: "fail", Interrupted: "SIGINT",
		Cause:  "interrupted by SIGINT while it ran: the run stopped its test binary, which is not a crash; the test's outcome is unconfirmed",
		Output: "=== RUN   TestSlow\nsignal: interrupt\n"}
	inMain := battery.Package{Name: pkg, Action: "fail", Timeout: "30m0s", Output: "panic: test timed out after 30m0s\n"}
	tests := []struct {
		name          string
		plain         Plain
		first, action string
	}{
		{"a test the timeout ended", PlainTest(timedOut), timedOut.Cause,
			"go test's -timeout (10m0s) ended its test binary: run it alone with go test example.com/m/e2e -run '^TestValidate$/^a_defect$' -count=1 -v to see where it waits, then make it faster, or raise the battery's timeout (CONTESTED_TEST_TIMEOUT, go test's -timeout; default 30m"},
		{"a test a panic ended", PlainTest(panicked), "panic: the worker gave up", "a panic outside the test's goroutine"},
		{"a test that failed", PlainTest(battery.Test{Package: pkg, Name: "TestX", Output: "    x_test.go:3: no\n"}), "x_test.go:3: no", "go tool mage arbitrate TestX"},
		{"a test that logged, then failed", PlainTest(battery.Test{Package: pkg, Name: "TestX", Output: "    x_test.go:2: 15 tenures\n    x_test.go:3: no\n", Failure: "x_test.go:3: no"}), "x_test.go:3: no", "go test example.com/m/e2e -run '^TestX$'"},
		{"a package the timeout ended outside any test", PlainPackage(inMain, 0), "timed out after 30m0s", "outside any test (TestMain or its teardown)"},
		{"a test an interrupted run stopped is unconfirmed, not a crash", PlainTest(stopped), stopped.Cause,
			"unconfirmed, not a crash: the run was interrupted (SIGINT) while it ran"},
		{"a package an interrupted run stopped is unconfirmed, not a crash", PlainPackage(battery.Package{Name: pkg, Action: "fail", Interrupted: "SIGTERM", Output: "signal: terminated\nFAIL\texample.com/m/e2e\t1.0s\n"}, 0),
			"interrupted by SIGTERM: the run stopped its test binary", "unconfirmed, not a crash: the run was interrupted (SIGTERM)"},
		{"a package that does not build", PlainPackage(battery.Package{Name: pkg, Output: "# example.com/m/e2e\ne2e/x_test.go:3:2: undefined: x\nFAIL\texample.com/m/e2e [build failed]\n"}, 0), "e2e/x_test.go:3:2: undefined: x", "fix the compile error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.plain.FirstLine != tt.first || !strings.Contains(tt.plain.Action, tt.action) {
				t.Errorf("got %+v; want first line %q and an action with %q", tt.plain, tt.first, tt.action)
			}
			if stopped := strings.Contains(tt.name, "interrupted"); stopped != (tt.plain.Owner == InterruptedOwner) || stopped && strings.Contains(tt.plain.Action, "fix") {
				t.Errorf("owner %q, action %q; want owner %q and no fix asked for exactly when the run was interrupted", tt.plain.Owner, tt.plain.Action, InterruptedOwner)
			}
		})
	}
	reason := TimeoutReason(battery.Package{Name: pkg, Timeout: "10m0s", Running: []string{"TestValidate/a_defect", "TestOther"}})
	if want := "package example.com/m/e2e timed out after 10m0s while running TestValidate/a_defect (and: TestOther): make the test faster or raise the battery's timeout (CONTESTED_TEST_TIMEOUT"; !strings.HasPrefix(reason, want) {
		t.Errorf("TimeoutReason = %q, want it to start %q", reason, want)
	}
}

func TestAnUnknownTestIDIsRefused(t *testing.T) {
	_, err := Walk(context.Background(), "TestNoSuchThing", options(t))
	if !errors.Is(err, ErrUnknownTest) {
		t.Fatalf("err = %v, want ErrUnknownTest", err)
	}
}

func TestSplitID(t *testing.T) {
	tests := []struct{ in, pkg, name string }{
		{"TestX", "", "TestX"},
		{"TestX/reset", "", "TestX/reset"},
		{"github.com/a/b.TestX/reset", "github.com/a/b", "TestX/reset"},
		{"example.com/adopter.TestStockContract/burst", "example.com/adopter", "TestStockContract/burst"},
		{"TestX/sub.TestY", "", "TestX/sub.TestY"},
		{"example.com/m.helper", "", "example.com/m.helper"}, // no test name in it
	}
	for _, tt := range tests {
		pkg, name := SplitID(tt.in)
		if pkg != tt.pkg || name != tt.name {
			t.Errorf("SplitID(%q) = %q, %q; want %q, %q", tt.in, pkg, name, tt.pkg, tt.name)
		}
	}
}

func TestFileNameIsCollisionFreeAndBounded(t *testing.T) {
	long := "example.com/m/store.TestStoreContract/" + strings.Repeat("a_very_long_subtest_name_", 20)
	pairs := [][2]string{
		{"TestA/b", "TestA_b"},
		{"example.com/m/a.TestX", "example.com/m/a_TestX"},
		{long + "1", long + "2"},
	}
	for _, p := range pairs {
		a, b := FileName(p[0]), FileName(p[1])
		if a == b {
			t.Errorf("FileName(%q) = FileName(%q) = %q", p[0], p[1], a)
		}
		for _, n := range []string{a, b} {
			// ladder/<name>.json and its temporary ".<name>.json.tmp-<suffix>" must fit in 255 bytes.
			if len("."+n+".json.tmp-")+13 > 255 || strings.ContainsAny(n, "/\\") || strings.HasPrefix(n, ".") {
				t.Errorf("FileName = %q (%d bytes): not a safe, bounded file name", n, len(n))
			}
		}
	}
}
