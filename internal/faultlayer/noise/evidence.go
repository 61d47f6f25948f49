package noise

import (
	"fmt"
	"strings"
	"time"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/envvar"
)

// Evidence is what one neighbour did and what a probe beside it saw.
type Evidence struct {
	Spec    Spec          `json:"spec"`
	Seed    int64         `json:"seed"`
	ArmedAt time.Time     `json:"armed_at"`
	Wall    time.Duration `json:"wall_ns"`
	// Duty is the CPU the busy threads got over the time they ran (the
	// neighbour's wall time less its quiet windows), per thread: 1 is a
	// core each, all the time; Taken is the same in cores, all threads
	// together: what the neighbour took from everything else.
	Duty  float64 `json:"duty"`
	Taken float64 `json:"taken_cores"`
	// IOBytes is what the writers wrote (and synced).
	IOBytes int64 `json:"io_bytes,omitempty"`
	// Load is the machine's load average when the neighbour stopped, the
	// busy threads included, for context.
	Load  float64 `json:"load"`
	Cores int     `json:"cores"`
	// The probe times a unit of work (5 ms of CPU) in pairs: once beside
	// the busy threads, then at once in a quiet window it opens itself,
	// the hogs paused, so that what else the machine does weighs on both
	// alike. Baseline is the median wall time of the quiet samples,
	// Loaded of the loud ones; Samples counts both (two a pair). Late is
	// how many of them were taken after the battery ended: Stop takes
	// pairs until there are MinPairs, however short the battery was.
	Baseline time.Duration `json:"baseline_ns"`
	Loaded   time.Duration `json:"loaded_ns"`
	Samples  int           `json:"samples"`
	Late     int           `json:"late_samples,omitempty"`
	// Slowdown is how much less of the CPU the probe's thread got beside
	// the hogs than in the quiet windows between them: Loaded over
	// Baseline. Wall time, not the thread's CPU time: a thread that shares
	// a core's caches or its sibling with a hog gets the CPU as often and
	// does less with it, and so do the tests. (The medians of each side,
	// not the median of each pair's ratio: a 5 ms sample either runs
	// through or loses whole scheduler slices, and a ratio of two such
	// samples is noisier than either.)
	Slowdown float64 `json:"slowdown"`
	// ThreadShare is the median share of its wall time the probe's thread
	// got the CPU beside the busy threads: what one thread of this machine
	// got while they ran (most of a core on a machine with cores to spare,
	// a sliver of one on a machine other work saturates).
	ThreadShare float64 `json:"thread_share,omitempty"`
	// Unmeasured, when set, says why the probe could not measure the
	// neighbour's effect (the run was interrupted, or the machine gave its
	// thread too little CPU to take MinPairs pairs): the neighbour is then
	// not proven to have fired, whatever its threads took.
	Unmeasured string `json:"unmeasured,omitempty"`
	// Victim, when set, is the battery's own measure of its slowdown,
	// which the caller adds (for example its packages against their last
	// recorded times).
	Victim string `json:"victim,omitempty"`
}

// The thresholds of Fired: each busy thread got at least a quarter of
// what a thread of this machine got beside them (the probe's ThreadShare:
// most of a core when the machine has cores to spare, a sliver of one
// when other work saturates it), and a probe thread got at least a tenth
// less of the CPU beside them than in their quiet windows, over at least
// MinPairs pairs of samples. (A thread's fair share is no threshold: the
// kernel shares the CPU between control groups, containers and sessions
// before threads, so the share a busy thread gets says little about what
// it took. What a thread of the same run got at the same time does.)
const (
	MinTaken    = 0.25
	MinSlowdown = 1.1
	MinPairs    = 7
)

// Fired reports whether the neighbour was observed to land: its threads
// took CPU from the machine and its writers wrote (the injector's side),
// and the machine slowed for the probe beside them, measured against a
// baseline of its own (the victim's side). A neighbour on a machine with
// cores to spare does not fire, nor one the probe could not measure, and
// its record says why.
func (e Evidence) Fired() bool { return e.measured() && e.Cause() == "" }

// measured reports whether the probe measured the neighbour: enough pairs,
// each side timed. Evidence without them (an interrupted run, or a record
// of an older contested) is never compared against a zero baseline.
func (e Evidence) measured() bool {
	return e.Unmeasured == "" && e.Samples >= 2*MinPairs && e.Baseline > 0 && e.Loaded > 0 && e.Slowdown > 0
}

// Cause says why the neighbour did not fire, with what to do, in words;
// "" when it fired.
func (e Evidence) Cause() string {
	switch {
	case e.Unmeasured != "":
		return "the probe could not measure the neighbour: " + e.Unmeasured
	case !e.measured():
		return fmt.Sprintf("the probe could not measure the neighbour: it took %d samples, and needs %d pairs of them with a baseline", e.Samples, MinPairs)
	case e.Spec.CPU > 0 && e.Taken < e.TakenNeeded():
		return fmt.Sprintf("its busy threads took %.2f cores, under the %.2f needed (a quarter of the %.2f of a core a thread got beside them, each): something kept them off the CPU (a CPU quota on this process?), and more of them would not run either", e.Taken, e.TakenNeeded(), e.ThreadShare)
	case e.Spec.IO > 0 && e.IOBytes == 0:
		return fmt.Sprintf("its %d writers wrote nothing", e.Spec.IO)
	case e.Slowdown < MinSlowdown && e.ThreadShare >= 0.9:
		return fmt.Sprintf("under %.2fx: the machine had cores to spare (a thread beside the neighbour still got %.2f of a core): give it more hogs (%s=cpu:%d)", MinSlowdown, e.ThreadShare, envvar.Noise, e.moreHogs())
	case e.Slowdown < MinSlowdown:
		return fmt.Sprintf("under %.2fx: other work already kept this machine busy (a thread beside the neighbour got %.2f of a core), so %d more threads took little more from it: give it more hogs (%s=cpu:%d)", MinSlowdown, e.ThreadShare, e.Spec.CPU, envvar.Noise, e.moreHogs())
	}
	return ""
}

// moreHogs is the neighbour to suggest when this one did not slow the
// machine: twice as many busy threads, at least two a core, at most
// maxPerCore a core.
func (e Evidence) moreHogs() int {
	cores := max(e.Cores, 1)
	return min(max(2*e.Spec.CPU, 2*cores), maxPerCore*cores)
}

// TakenNeeded is the CPU, in cores, the busy threads must have taken
// together for the neighbour to fire: MinTaken of the probe's ThreadShare
// for each of them, and MinTaken of a core in all when the probe measured
// nothing beside them.
func (e Evidence) TakenNeeded() float64 {
	if e.ThreadShare <= 0 {
		return MinTaken
	}
	return MinTaken * min(1, e.ThreadShare) * float64(max(e.Spec.CPU, 1))
}

// Injector is the neighbour's own side, in words.
func (e Evidence) Injector() string {
	wall := e.Wall.Round(time.Second)
	if e.Wall < 10*time.Second {
		wall = e.Wall.Round(100 * time.Millisecond)
	}
	s := fmt.Sprintf("neighbour %s (seed %d) for %s", e.Spec, e.Seed, wall)
	if e.Spec.CPU > 0 {
		s += fmt.Sprintf(": %d busy threads at a duty cycle of %.0f%% took %.2f of the %d cores (load %.1f)", e.Spec.CPU, 100*e.Duty, e.Taken, e.Cores, e.Load)
	}
	if e.Spec.IO > 0 {
		s += fmt.Sprintf("; %d writers wrote and synced %d MiB", e.Spec.IO, e.IOBytes>>20)
	}
	return s
}

// VictimSide is what the run saw beside it, in words, and, when it did
// not fire, why.
func (e Evidence) VictimSide() string {
	var s string
	if e.measured() {
		s = fmt.Sprintf("a probe thread got %.2fx less of the CPU beside the neighbour than in the quiet windows between (its 5 ms of work took %s against %s, medians of %d pairs of samples milliseconds apart",
			e.Slowdown, e.Loaded.Round(10*time.Microsecond), e.Baseline.Round(10*time.Microsecond), e.Samples/2)
		if e.Late > 0 {
			s += fmt.Sprintf(", %d of them after the battery ended", e.Late/2)
		}
		s += ")"
	}
	if e.Victim != "" {
		s = strings.TrimPrefix(s+"; "+e.Victim, "; ")
	}
	if cause := e.Cause(); cause != "" {
		s = strings.TrimPrefix(s+"; NOT fired: "+cause, "; ")
	}
	return s
}

// Record is the neighbour's fault record for the run (test is who armed
// it: "battery", or the test the ladder reran beside it).
func (e Evidence) Record(test, replay string) faultrecord.Record {
	r := faultrecord.Record{Schema: faultrecord.Schema, Test: test, Surface: Surface, Class: Class, Leg: Leg, Seed: e.Seed, Replay: replay,
		Armed: true, ArmedAt: e.ArmedAt, Fired: e.Fired(),
		Evidence: faultrecord.Evidence{Injector: e.Injector(), Victim: e.VictimSide()}}
	if r.Fired {
		r.FiredAt = e.ArmedAt.Add(e.Wall)
	}
	return r
}
