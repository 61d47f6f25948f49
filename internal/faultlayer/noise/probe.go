package noise

import (
	"context"
	"crypto/sha256"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// probe takes a pair of samples every 75 to 150 ms, drawn from rng, on a
// thread of its own, until Stop asks it to finish; then it takes pairs
// back to back until it has MinPairs, for at most topUp, so that a battery
// of any length is measured. It stops at once when ctx is done.
func (n *Neighbour) probe(ctx context.Context, rng *rand.Rand) {
	defer n.wg.Done()
	defer close(n.probed)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	next := time.NewTimer(2 * settle) // the hogs get going first
	defer next.Stop()
	for {
		select {
		case <-ctx.Done():
			n.interrupted.Store(true)
			return
		case <-n.closing:
			for deadline := time.Now().Add(topUp); n.pairCount() < MinPairs && time.Now().Before(deadline); {
				if ctx.Err() != nil {
					n.interrupted.Store(true)
					return
				}
				time.Sleep(2 * settle) // the hogs resume after the last quiet window
				n.pair(true)
			}
			return
		case <-next.C:
		}
		n.pair(false)
		next.Reset(pairEvery + time.Duration(rng.IntN(75))*time.Millisecond)
	}
}

// pair times the unit of work beside the hogs, then opens a quiet window,
// gives the hogs settle to pause, times it again and closes the window:
// two samples a few milliseconds apart, one with the neighbour and one
// without, under the same other work. late says Stop was called.
func (n *Neighbour) pair(late bool) {
	loud := n.timeUnit()
	n.window.Add(1)
	opened := time.Now()
	time.Sleep(settle)
	quiet := n.timeUnit()
	n.window.Add(1)
	n.hushed.Add(int64(time.Since(opened)))
	n.mu.Lock()
	defer n.mu.Unlock()
	if loud.cpu <= 0 || quiet.cpu <= 0 || loud.wall <= 0 || quiet.wall <= 0 {
		n.unread++
		return
	}
	n.pairs = append(n.pairs, pair{loud, quiet})
	if late {
		n.late++
	}
}

// sample is one run of the probe's unit of work: the CPU its thread got,
// and the wall time it took.
type sample struct{ cpu, wall time.Duration }

// share is the share of its wall time the probe's thread got the CPU.
func (s sample) share() float64 { return min(1, float64(s.cpu)/float64(s.wall)) }

// pair is a sample beside the hogs and the one in the quiet window after it.
type pair struct{ loud, quiet sample }

// timeUnit runs the unit of work on the calling (locked) thread.
func (n *Neighbour) timeUnit() sample {
	c0, w0 := threadCPU(), time.Now()
	hash(n.unit)
	return sample{threadCPU() - c0, time.Since(w0)}
}

// Pairs is how many pairs of samples the probe took so far.
func (n *Neighbour) Pairs() int { return n.pairCount() }

func (n *Neighbour) pairCount() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.pairs)
}

// medianShare is the median share of its wall time the probe got the CPU.
func medianShare(ss []sample) float64 {
	shares := make([]float64, len(ss))
	for i, s := range ss {
		shares[i] = s.share()
	}
	return median(shares)
}

func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	vs = slices.Clone(vs)
	slices.Sort(vs)
	return vs[len(vs)/2]
}

func medianWall(ss []sample) time.Duration {
	if len(ss) == 0 {
		return 0
	}
	walls := make([]time.Duration, len(ss))
	for i, s := range ss {
		walls[i] = s.wall
	}
	slices.Sort(walls)
	return walls[len(walls)/2]
}

// load1 is the machine's one-minute load average.
func load1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// unitCPU is the CPU time the probe's unit of work takes: long enough to
// span several of the scheduler's slices, so that the wall time it takes
// on a busy machine shows how much of the CPU a thread gets.
const unitCPU = 5 * time.Millisecond

// calibrate finds how many hash rounds take about unitCPU of CPU time
// here, by the thread's own clock, which a busy machine does not inflate.
func calibrate() int {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rounds := 64
	for {
		c0 := threadCPU()
		hash(rounds)
		if d := threadCPU() - c0; d >= unitCPU || rounds >= 1<<24 {
			return max(1, int(float64(rounds)*float64(unitCPU)/float64(max(d, time.Microsecond))))
		}
		rounds *= 4
	}
}

func hash(rounds int) {
	var buf [32]byte
	for range rounds {
		buf = sha256.Sum256(buf[:])
	}
	sink.Store(uint32(buf[0]))
}

// sink keeps the compiler from dropping the probe's work.
var sink atomic.Uint32

// threadCPU is the CPU time the calling thread has used, to the
// nanosecond. (getrusage's RUSAGE_THREAD splits it by clock ticks and
// holds each part from going back, so that a few milliseconds of work
// read as a few microseconds, or as many more.)
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
