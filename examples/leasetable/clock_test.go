package leasetable_test

import (
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

// crossClock maps CLOCK_MONOTONIC readings onto a history.Recorder's clock. The recorder's
// base was taken between lo and hi, so a reading m is at least m-hi and at most m-lo on the
// recorder's clock: invokes take the earlier bound and completes the later one, so an
// interval is only ever widened, never narrowed (a wider interval cannot make a correct
// history look illegal).
type crossClock struct{ lo, hi int64 }

func (c crossClock) invoke(m int64) int64   { return max(m-c.hi, 0) }
func (c crossClock) complete(m int64) int64 { return m - c.lo }
