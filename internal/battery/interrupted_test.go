package battery

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
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
