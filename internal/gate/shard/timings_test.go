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
