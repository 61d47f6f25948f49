package battery

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/testmodule"
	"github.com/contested/contested/internal/tier"
)

// unfinished is a module whose test binaries never let some tests finish:
// go test's -timeout ends seq while TestSlow/sub sleeps (TestWaiting,
// parallel, is paused behind it) and par while two parallel tests sleep;
// a goroutine's panic ends boom while TestBoom runs.
var unfinished = map[string]string{
	"go.mod": "module example.com/unfinished\n\ngo 1.24\n",
	"seq/seq_test.go": `package seq

import (
	"testing"
	"time"
)

func TestFast(t *testing.T) {}

func TestWaiting(t *testing.T) { t.Parallel() }

func TestSlow(t *testing.T) {
	t.Run("sub", func(t *testing.T) { time.Sleep(time.Hour) })
}
`,
	"par/par_test.go": `package par

import (
	"testing"
	"time"
)

func TestLong(t *testing.T)   { t.Parallel(); time.Sleep(time.Hour) }
func TestLonger(t *testing.T) { t.Parallel(); time.Sleep(time.Hour) }
`,
	"boom/boom_test.go": `package boom

import (
	"testing"
	"time"
)

func TestCalm(t *testing.T) {}

func TestBoom(t *testing.T) {
	go func() { panic("the worker gave up") }()
	time.Sleep(time.Hour)
}
`,
}

// TestATimeoutOrAPanicIsTheRunningTestsFailure: a package that go test's
// -timeout ends names the timeout and the tests it was running, and those
// tests (not a paused one, not one that passed) fail with the cause; a
// panic outside a test's goroutine fails the test that was running. None
// of it is a package "failed outside any test".
func TestATimeoutOrAPanicIsTheRunningTestsFailure(t *testing.T) {
	tier.Full(t, "go test of a planted module")
	dir := testmodule.Write(t, unfinished)
	var progress strings.Builder
	res, err := Run(context.Background(), Options{Dir: dir, Out: &progress, Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + progress.String())
	if res.OK() {
		t.Fatal("a battery that timed out reads as OK")
	}
	if ps := res.FailedPackages(); len(ps) != 0 {
		t.Errorf("packages failed outside any test: %+v; want every failure blamed on a test", ps)
	}
	failed := map[string]Test{}
	for _, ft := range res.Failed() {
		failed[short(ft.Package)+"."+ft.Name] = ft
	}
	timedOut := "go test's -timeout of 3s"
	for _, tc := range []struct{ test, cause, output string }{
		{"seq.TestSlow/sub", timedOut, ""},
		{"seq.TestSlow", timedOut, ""},
		{"par.TestLong", timedOut, ""},
		{"par.TestLonger", timedOut, ""},
		{"boom.TestBoom", "a panic outside the test's goroutine", "the worker gave up"},
	} {
		ft, ok := failed[tc.test]
		if !ok {
			t.Errorf("%s is not among the failed tests %v", tc.test, keys(failed))
			continue
		}
		if !strings.Contains(ft.Cause, tc.cause) || !strings.Contains(ft.Output, tc.output) {
			t.Errorf("%s: cause %q, output %q; want the cause to say %q and the output %q", tc.test, ft.Cause, ft.Output, tc.cause, tc.output)
		}
		if (tc.cause == timedOut) != (ft.Timeout == "3s") {
			t.Errorf("%s: timeout %q; want 3s exactly when the timeout ended it", tc.test, ft.Timeout)
		}
	}
	if !strings.Contains(failed["seq.TestSlow/sub"].Output+failed["seq.TestSlow"].Output, "panic: test timed out after 3s") {
		t.Errorf("the timeout's panic is in neither of the tests it ended: %+v", failed["seq.TestSlow/sub"])
	}
	for _, name := range []string{"seq.TestFast", "seq.TestWaiting", "boom.TestCalm"} {
		if _, ok := failed[name]; ok {
			t.Errorf("%s failed: it passed or never ran", name)
		}
	}
	want := map[string]string{
		"seq":  "timed out after 3s while running TestSlow/sub",
		"par":  "timed out after 3s while running TestLong (and: TestLonger)",
		"boom": "",
	}
	for _, p := range res.Packages {
		if got := p.TimedOut(); got != want[short(p.Name)] {
			t.Errorf("package %s: TimedOut() = %q, want %q", short(p.Name), got, want[short(p.Name)])
		}
	}
	if len(res.TimedOut()) != 2 {
		t.Errorf("TimedOut() = %+v, want seq and par", res.TimedOut())
	}
	for _, s := range []string{"-timeout=3s", want["seq"], "(go test -timeout; CONTESTED_TEST_TIMEOUT sets it)", "FAIL boom TestBoom"} {
		if !strings.Contains(progress.String(), s) {
			t.Errorf("the progress lines do not say %q", s)
		}
	}
}

// TestTheTimeoutComesFromTheEnvironment: without Options.Timeout the
// battery passes CONTESTED_TEST_TIMEOUT to go test, 30m when it is unset;
// a value that is not a duration stops the battery before go test starts.
func TestTheTimeoutComesFromTheEnvironment(t *testing.T) {
	dir := testmodule.Write(t, map[string]string{
		"go.mod":      "module example.com/envtimeout\n\ngo 1.24\n",
		"a/a_test.go": "package a\nimport \"testing\"\nfunc TestA(t *testing.T) {}\n",
	})
	tests := []struct {
		name, value, says string
		err               error
	}{
		{"unset", "", "-timeout=30m0s", nil},
		{"a duration", "1h30m", "-timeout=1h30m0s", nil},
		{"zero, no timeout", "0", "-timeout=0s", nil},
		{"not a duration", "soon", "", ErrBadTimeout},
		{"negative", "-5m", "", ErrBadTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(envvar.TestTimeout, tt.value)
			var progress strings.Builder
			res, err := Run(context.Background(), Options{Dir: dir, Out: &progress})
			if tt.err != nil {
				if !errors.Is(err, ErrNotRun) || !strings.Contains(err.Error(), envvar.TestTimeout) || !strings.Contains(err.Error(), tt.value) {
					t.Fatalf("Run with %s=%q: %v, want ErrNotRun naming the variable and its value", envvar.TestTimeout, tt.value, err)
				}
				if _, err := TimeoutFromEnv(); !errors.Is(err, tt.err) {
					t.Errorf("TimeoutFromEnv: %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil || !res.OK() {
				t.Fatalf("Run: %v, %+v", err, res)
			}
			if !strings.Contains(progress.String(), tt.says) {
				t.Errorf("go test was not given %s:\n%s", tt.says, progress.String())
			}
		})
	}
}
