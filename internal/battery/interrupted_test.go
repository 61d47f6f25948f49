package battery

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/contested/contested/internal/testmodule"
	"github.com/contested/contested/internal/tier"
)

// stoppedBinary is what go test -json says of a package whose test binary
// was stopped by SIGINT while TestSlow ran (TestFast had passed).
func stoppedBinary(at time.Time) []string {
	ts := func(d time.Duration) string { return at.Add(d).Format(time.RFC3339Nano) }
	return []string{
		`{"Time":"` + ts(0) + `","Action":"start","Package":"example.com/m/slow"}`,
		`{"Time":"` + ts(0) + `","Action":"run","Package":"example.com/m/slow","Test":"TestFast"}`,
		`{"Time":"` + ts(10*time.Millisecond) + `","Action":"pass","Package":"example.com/m/slow","Test":"TestFast","Elapsed":0.01}`,
		`{"Time":"` + ts(10*time.Millisecond) + `","Action":"run","Package":"example.com/m/slow","Test":"TestSlow"}`,
		`{"Time":"` + ts(time.Second) + `","Action":"output","Package":"example.com/m/slow","Output":"signal: interrupt\n"}`,
		`{"Time":"` + ts(time.Second) + `","Action":"output","Package":"example.com/m/slow","Output":"FAIL\texample.com/m/slow\t1.000s\n"}`,
		`{"Time":"` + ts(time.Second) + `","Action":"fail","Package":"example.com/m/slow","Elapsed":1}`,
	}
}

// TestATestBinaryTheRunStoppedIsInterruptedNotCrashed: a test binary that
// exits while a test runs is a crash only when nothing stopped the run;
// when the runner knows it was stopped (it received SIGINT, or its context
// ended, and it sent the binary SIGINT itself) the running test is
// interrupted and unconfirmed, and so is its package, even when the
// runner learns of the stop only after the binary's exit.
func TestATestBinaryTheRunStoppedIsInterruptedNotCrashed(t *testing.T) {
	at := time.Now().Add(-time.Minute)
	tests := []struct {
		name        string
		stopped     func() (string, time.Time)
		learnLate   bool // the stop is known only once the run is over
		interrupted string
	}{
		{"a binary that exits on its own crashed", nil, false, ""},
		{"a binary stopped after the run received SIGINT was interrupted", func() (string, time.Time) { return "SIGINT", at.Add(900 * time.Millisecond) }, false, "SIGINT"},
		{"a binary stopped just before the runner learned of SIGTERM was interrupted", func() (string, time.Time) { return "SIGTERM", at.Add(1500 * time.Millisecond) }, true, "SIGTERM"},
		{"a binary that crashed long before the run was stopped crashed", func() (string, time.Time) { return "SIGINT", at.Add(time.Hour) }, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFollower(io.Discard, map[string]string{"example.com/m/slow": t.TempDir()})
			if tt.stopped != nil && !tt.learnLate {
				f.stopped = tt.stopped
			}
			for _, l := range stoppedBinary(at) {
				follow(f, nil, nil, []byte(l))
			}
			if tt.learnLate {
				f.stopped = tt.stopped
			}
			ps, ts := f.results()
			var slow *Test
			for i := range ts {
				if ts[i].Name == "TestSlow" {
					slow = &ts[i]
				}
			}
			if slow == nil || slow.Action != "fail" {
				t.Fatalf("TestSlow: %+v; want it failed, not passed", slow)
			}
			if slow.Interrupted != tt.interrupted {
				t.Errorf("TestSlow.Interrupted = %q, want %q (cause %q)", slow.Interrupted, tt.interrupted, slow.Cause)
			}
			crash := strings.Contains(slow.Cause, "crash") && !strings.Contains(slow.Cause, "not a crash")
			if tt.interrupted != "" && (crash || !strings.Contains(slow.Cause, "interrupted by "+tt.interrupted) || !strings.Contains(slow.Cause, "unconfirmed")) {
				t.Errorf("TestSlow's cause %q; want it interrupted by %s, unconfirmed, not a crash", slow.Cause, tt.interrupted)
			}
			if tt.interrupted == "" && !crash {
				t.Errorf("TestSlow's cause %q; want the crash a binary that exited on its own is", slow.Cause)
			}
			if want := tt.interrupted; !tt.learnLate && len(ps) == 1 && ps[0].Interrupted != want {
				t.Errorf("package Interrupted = %q, want %q", ps[0].Interrupted, want)
			}
		})
	}
}

// TestStoppedByIsTheRunnersOwnEvidence: nothing stopped, nothing said; a
// cancelled context says so, and when.
func TestStoppedByIsTheRunnersOwnEvidence(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	stopped := stoppedBy(ctx)
	if by, _ := stopped(); by != "" {
		t.Fatalf("stopped before anything stopped it: %q", by)
	}
	before := time.Now()
	cancel()
	by, at := stopped()
	if !strings.Contains(by, "cancel") || at.Before(before.Add(-time.Second)) {
		t.Errorf("after cancel: %q at %v; want the cancellation, at about %v", by, at, before)
	}
}

// TestATallyCountsEachThingInItsOwnUnit: top-level tests, subtests and
// packages are counted apart, skipped tests not at all, and one of a
// thing is singular.
func TestATallyCountsEachThingInItsOwnUnit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tests []Test
		want  string
	}{
		{"tests with subtests in two packages", []Test{
			{Package: "m/a", Name: "TestA", Action: "pass"}, {Package: "m/a", Name: "TestA/x", Action: "pass"}, {Package: "m/a", Name: "TestA/y", Action: "pass"},
			{Package: "m/b", Name: "TestB", Action: "pass"}, {Package: "m/b", Name: "TestSkipped", Action: "skip"},
		}, "2 tests (and 2 subtests) in 2 packages"},
		{"one test in one package", []Test{{Package: "m/a", Name: "TestA", Action: "pass"}}, "1 test in 1 package"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := (&Result{Tests: tc.tests}).Tally(); got != tc.want {
				t.Errorf("Tally = %q, want %q", got, tc.want)
			}
		})
	}
}

// cancelOnRun cancels the run once the event stream says test started.
type cancelOnRun struct {
	test   string
	cancel context.CancelFunc
}

func (c cancelOnRun) Write(b []byte) (int, error) {
	if strings.Contains(string(b), `"Action":"run"`) && strings.Contains(string(b), `"Test":"`+c.test+`"`) {
		c.cancel()
	}
	return len(b), nil
}

// TestARunStoppedWhileATestRunsSaysInterruptedNotCrashed: the whole path,
// with a real go test: the run is stopped while TestSleeps runs (what
// Ctrl-C, SIGTERM or a CI timeout do through the context), the battery
// sends its test binary SIGINT, and the test comes back interrupted and
// unconfirmed, never "exited while it ran … a crash".
func TestARunStoppedWhileATestRunsSaysInterruptedNotCrashed(t *testing.T) {
	tier.Full(t, "go test of a planted module")
	dir := testmodule.Write(t, map[string]string{
		"go.mod": "module example.com/stopped\n\ngo 1.24\n",
		"slow/slow_test.go": `package slow

import (
	"testing"
	"time"
)

func TestSleeps(t *testing.T) { time.Sleep(time.Hour) }
`,
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var progress strings.Builder
	res, err := Run(ctx, Options{Dir: dir, Out: &progress, Events: cancelOnRun{"TestSleeps", cancel}, Timeout: 5 * time.Minute})
	if err == nil || res == nil {
		t.Fatalf("a stopped battery: %v, %v; want its partial result and an error", res, err)
	}
	t.Log("\n" + progress.String())
	var got *Test
	for i := range res.Tests {
		if res.Tests[i].Name == "TestSleeps" {
			got = &res.Tests[i]
		}
	}
	if got == nil {
		t.Fatalf("TestSleeps is not in the result: %+v", res.Tests)
	}
	if got.Interrupted == "" || !strings.Contains(got.Cause, "unconfirmed") || strings.Contains(got.Cause, "a crash") && !strings.Contains(got.Cause, "not a crash") {
		t.Errorf("TestSleeps: interrupted %q, cause %q; want it interrupted and unconfirmed, not a crash", got.Interrupted, got.Cause)
	}
	if strings.Contains(progress.String(), "os.Exit or a crash") {
		t.Errorf("the progress calls the stopped test a crash:\n%s", progress.String())
	}
}
