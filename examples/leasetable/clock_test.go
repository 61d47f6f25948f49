package leasetable_test

import (
	"math"
	"testing"

	"golang.org/x/sys/unix"
)

// monoNow reads CLOCK_MONOTONIC, the clock Go's own monotonic readings come from. Unlike the
// wall clock it is shared by every process on the host and never steps, so a child process
// can stamp ops on the parent's history clock (see crossClock).
func monoNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}

// crossClock maps CLOCK_MONOTONIC readings onto a history.Recorder's clock: a reading m is
// m-off on the recorder's clock for an offset off known to lie in [lo, hi]. Invokes take the
// earlier bound (m-hi) and completes the later one (m-lo), so an interval is only ever widened,
// never narrowed (a wider interval cannot make a correct history look illegal).
//
// The bounds must be tight: a holder's consecutive ops are microseconds apart, and a bracket
// wider than that gap widens them into each other, which breaks the history's rule that a
// process is sequential (seen once under load, with a 1.3 ms bracket; the check came out
// Unknown and failed the leg).
type crossClock struct{ lo, hi int64 }

func (c crossClock) invoke(m int64) int64   { return max(m-c.hi, 0) }
func (c crossClock) complete(m int64) int64 { return m - c.lo }

// clockSamples is how many brackets newCrossClock intersects: a preemption widens one sample,
// not all of them.
const clockSamples = 16

// newCrossClock measures the offset between CLOCK_MONOTONIC (mono) and a recorder's clock
// (rec): each sample brackets one reading of rec between two of mono, and the samples' bounds
// are intersected, so the result is as tight as the tightest sample.
func newCrossClock(rec, mono func() int64) crossClock {
	c := crossClock{lo: math.MinInt64, hi: math.MaxInt64}
	for range clockSamples {
		before := mono()
		r := rec()
		after := mono()
		c.lo, c.hi = max(c.lo, before-r), min(c.hi, after-r)
	}
	return c
}

// TestCrossClockStaysTightWhenASampleIsPreempted: one sample whose bracket a preemption
// widened to 1.3 ms must not widen the clock, or a holder's back-to-back ops (5 µs apart
// here) overlap once mapped and the history stops being sequential.
func TestCrossClockStaysTightWhenASampleIsPreempted(t *testing.T) {
	const offset = 1_000_000_000 // the recorder's base on CLOCK_MONOTONIC
	tests := []struct {
		name    string
		stalled int // which sample's bracket is 1.3 ms wide; -1 for none
	}{
		{"no sample stalls", -1},
		{"the first sample stalls", 0},
		{"the last sample stalls", clockSamples - 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mono := int64(offset + 5_000_000)
			readings, sample := 0, 0
			c := newCrossClock(func() int64 { return mono - offset }, func() int64 {
				readings++
				if readings%2 == 1 { // before the recorder's reading
					mono += 100
					return mono - 100
				}
				if sample == tt.stalled {
					mono += 1_300_000
				}
				sample++
				mono += 100
				return mono
			})
			if w := c.hi - c.lo; w > 1_000 {
				t.Errorf("the clock's bounds are %d ns apart, want under 1 µs", w)
			}
			if c.lo > offset || c.hi < offset {
				t.Errorf("bounds [%d, %d] exclude the true offset %d", c.lo, c.hi, offset)
			}
			complete, next := int64(offset+2_000_000), int64(offset+2_005_000)
			if c.invoke(next) < c.complete(complete) {
				t.Errorf("an op invoked 5 µs after the last one completed maps to %d, before that completion's %d", c.invoke(next), c.complete(complete))
			}
		})
	}
}
