package shard

import (
	"testing"
	"time"

	"github.com/contested/contested/internal/battery"
)

func TestSlowdownComparesTheTestsBothRan(t *testing.T) {
	prev := Timings{key("m", "TestA"): time.Second, key("m", "TestB"): 2 * time.Second, key("m", "TestGone"): time.Hour}
	res := &battery.Result{Tests: []battery.Test{
		{Package: "m", Name: "TestA", Action: "pass", Elapsed: 3 * time.Second},
		{Package: "m", Name: "TestB", Action: "fail", Elapsed: 3 * time.Second},
		{Package: "m", Name: "TestB/leg", Action: "fail", Elapsed: time.Hour},
		{Package: "m", Name: "TestNew", Action: "pass", Elapsed: time.Hour},
	}}
	if ratio, n := prev.Slowdown(res); n != 2 || ratio != 2 {
		t.Errorf("Slowdown = %.2f over %d tests, want 2.00 over 2 (TestA and TestB; a subtest, a new test and a gone one do not count)", ratio, n)
	}
	if ratio, n := (Timings{}).Slowdown(res); n != 0 || ratio != 0 {
		t.Errorf("no timings: Slowdown = %.2f over %d", ratio, n)
	}
}

// TestTheSlowdownSaysItsUnitsAndWhatItCompares: the sentence counts
// top-level tests and the packages they are in, never calls either the
// other, and says what the ratio compares with both sums.
func TestTheSlowdownSaysItsUnitsAndWhatItCompares(t *testing.T) {
	prev := Timings{key("m/a", "TestA"): time.Second, key("m/b", "TestB"): 2 * time.Second, key("m/b", "TestC"): time.Second}
	res := &battery.Result{Tests: []battery.Test{
		{Package: "m/a", Name: "TestA", Action: "pass", Elapsed: 2 * time.Second},
		{Package: "m/b", Name: "TestB", Action: "pass", Elapsed: 4 * time.Second},
		{Package: "m/b", Name: "TestB/leg", Action: "pass", Elapsed: time.Hour},
		{Package: "m/b", Name: "TestC", Action: "pass", Elapsed: 2 * time.Second},
	}}
	for _, tc := range []struct {
		name string
		prev Timings
		res  *battery.Result
		want string
	}{
		{"three tests in two packages", prev, res, "3 top-level tests (in 2 packages) that also ran in the last whole run took 2.00x the time they took there (8s now against 4s)"},
		{"one test in one package", Timings{key("m/a", "TestA"): time.Second}, res, "1 top-level test (in 1 package) that also ran in the last whole run took 2.00x the time they took there (2s now against 1s)"},
		{"no test in common says nothing", Timings{}, res, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.prev.SaySlowdown(tc.res); got != tc.want {
				t.Errorf("SaySlowdown =\n  %q\nwant\n  %q", got, tc.want)
			}
		})
	}
}
