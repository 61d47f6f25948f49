package capacity

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// RunQueue follows how many threads the machine has ready to run: the
// kernel's instantaneous count (the running field of /proc/loadavg),
// sampled every Every and averaged over the last Window. It is what a
// battery asks before starting another package: a run queue longer than
// the cores means the machine has no CPU to give it, whoever holds it (the
// battery's own packages, another job, a noisy neighbour).
type RunQueue struct {
	mu sync.Mutex
	// kept is every count since the start, with its time, up to keep of
	// them, oldest first: Avg reads its last n, Between a window of it.
	kept []stamped
	n    int
	stop context.CancelFunc
	done chan struct{}
}

// keep bounds the counts a RunQueue keeps: an hour of them.
const keep = int(time.Hour / Every)

type stamped struct {
	at time.Time
	n  float64
}

// Every and Window shape a RunQueue: a sample each 100 ms, averaged over
// two seconds, long enough to smooth a compile's burst and short enough to
// follow a neighbour that starts or stops.
const (
	Every  = 100 * time.Millisecond
	Window = 2 * time.Second
)

// FollowRunQueue starts following the run queue until Stop.
func FollowRunQueue(ctx context.Context) *RunQueue {
	ctx, cancel := context.WithCancel(ctx)
	q := &RunQueue{n: int(Window / Every), stop: cancel, done: make(chan struct{})}
	q.add(runnable())
	go func() {
		defer close(q.done)
		t := time.NewTicker(Every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				q.add(runnable())
			}
		}
	}()
	return q
}

func (q *RunQueue) add(v float64) {
	if v < 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.kept = append(q.kept, stamped{time.Now(), v})
	if len(q.kept) > keep {
		q.kept = q.kept[len(q.kept)-keep:]
	}
}

// Between is the average run queue from from to to, and how many counts
// it averages; a window shorter than Every averages the count nearest
// its middle.
func (q *RunQueue) Between(from, to time.Time) (float64, int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var sum float64
	var n int
	for _, s := range q.kept {
		if !s.at.Before(from) && !s.at.After(to) {
			sum += s.n
			n++
		}
	}
	if n > 0 {
		return sum / float64(n), n
	}
	mid := from.Add(to.Sub(from) / 2)
	var best *stamped
	for i, s := range q.kept {
		if best == nil || s.at.Sub(mid).Abs() < best.at.Sub(mid).Abs() {
			best = &q.kept[i]
		}
	}
	if best == nil {
		return 0, 0
	}
	return best.n, 1
}

// Avg is the average run queue over the window, and whether the kernel
// says anything (false where /proc/loadavg cannot be read).
func (q *RunQueue) Avg() (float64, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	last := q.kept[max(len(q.kept)-q.n, 0):]
	if len(last) == 0 {
		return 0, false
	}
	var sum float64
	for _, s := range last {
		sum += s.n
	}
	return sum / float64(len(last)), true
}

// Stop ends the following.
func (q *RunQueue) Stop() {
	q.stop()
	<-q.done
}

// runnable is the kernel's count of runnable threads, without the one
// reading it; -1 when it cannot be read.
func runnable() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) < 4 {
		return -1
	}
	running, _, ok := strings.Cut(f[3], "/")
	n, err := strconv.Atoi(running)
	if !ok || err != nil {
		return -1
	}
	return float64(max(n-1, 0))
}

// Admission decides when a battery may start one more package: always
// when none runs (a battery always moves), never past its ceiling, and
// otherwise only while the run queue is shorter than PerCore times the
// cores, so that the packages it starts find a CPU instead of queueing for
// one. Packages that mostly wait (on containers, databases, timeouts) do
// not count in the run queue, so more of them start; packages that compute
// do, so fewer start; and a noisy neighbour's threads count too.
type Admission struct {
	Queue   *RunQueue
	Ceiling int
	// PerCore is the run queue per core under which another package
	// starts (default 2).
	PerCore float64
	// Cores is the machine's (default runtime.NumCPU).
	Cores int
}

// Admit reports whether one more package may start while running run.
func (a Admission) Admit(running int) bool {
	if running == 0 {
		return true
	}
	if a.Ceiling > 0 && running >= a.Ceiling {
		return false
	}
	if a.Queue == nil {
		return true
	}
	avg, ok := a.Queue.Avg()
	if !ok {
		return true
	}
	per, cores := a.PerCore, a.Cores
	if per <= 0 {
		per = 2
	}
	if cores <= 0 {
		cores = runtime.NumCPU()
	}
	return avg < per*float64(cores)
}
