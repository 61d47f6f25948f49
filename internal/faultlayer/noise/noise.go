// Package noise gives a run a noisy neighbour: seeded CPU (and optionally
// I/O) hogs on this machine, armed beside a battery as a fault of class
// capacity, with evidence from both sides: the hogs' duty cycle (the CPU
// they got) and the slowdown a probe beside them measured.
//
// A battery that passes only on a quiet machine fails on a shared CI
// runner; the neighbour lets a team find that out before CI does, and the
// ladder uses it to tell a capacity-fragile test from a flaky one.
package noise

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/envvar"
)

// The record every neighbour writes names the built-in surface of the
// battery, in class capacity, leg noise: no registry declares them.
const (
	Surface = "contested.battery"
	Class   = "capacity"
	Leg     = "noise"
)

// Spec is how much noise: CPU busy threads and I/O writers.
type Spec struct {
	CPU int `json:"cpu"`
	IO  int `json:"io,omitempty"`
}

// ErrSpec reports a noise specification that does not parse.
var ErrSpec = errors.New("bad noise specification")

// maxPerCore bounds the hogs: past a few per core they only add context
// switches, not contention.
const maxPerCore = 8

// FromEnv reads CONTESTED_NOISE, the neighbour to arm beside a battery
// ("cpu:2", "cpu:2,io:1"); set is false when it is unset, so that a
// registry's [battery] noise applies.
func FromEnv() (spec Spec, set bool, err error) {
	v := strings.TrimSpace(os.Getenv(envvar.Noise))
	if v == "" {
		return Spec{}, false, nil
	}
	if spec, err = Parse(v); err != nil {
		return Spec{}, false, fmt.Errorf("%s: %w", envvar.Noise, err)
	}
	return spec, true, nil
}

// Parse reads a specification: "" or "off" is none; "cpu" is one busy
// thread per core; "cpu:2" two; "io:1" one writer; "cpu:2,io:1" both.
func Parse(s string) (Spec, error) {
	var sp Spec
	s = strings.TrimSpace(s)
	if s == "" || s == "off" {
		return sp, nil
	}
	cores := runtime.NumCPU()
	for _, part := range strings.Split(s, ",") {
		kind, n, hasN := strings.Cut(strings.TrimSpace(part), ":")
		count := cores
		if kind == "io" {
			count = 1
		}
		if hasN {
			v, err := strconv.Atoi(n)
			if err != nil || v < 1 || v > maxPerCore*cores {
				return Spec{}, fmt.Errorf("%w: %q: %s:%s must name 1 to %d hogs (%d per core on this machine)", ErrSpec, s, kind, n, maxPerCore*cores, maxPerCore)
			}
			count = v
		}
		switch kind {
		case "cpu":
			sp.CPU = count
		case "io":
			sp.IO = count
		default:
			return Spec{}, fmt.Errorf("%w: %q: %q is not cpu or io; write cpu, cpu:N, io:N or cpu:N,io:M", ErrSpec, s, kind)
		}
	}
	return sp, nil
}

// Zero reports whether the spec asks for no noise.
func (s Spec) Zero() bool { return s.CPU == 0 && s.IO == 0 }

// String is the spec as Parse reads it.
func (s Spec) String() string {
	var parts []string
	if s.CPU > 0 {
		parts = append(parts, fmt.Sprintf("cpu:%d", s.CPU))
	}
	if s.IO > 0 {
		parts = append(parts, fmt.Sprintf("io:%d", s.IO))
	}
	if len(parts) == 0 {
		return "off"
	}
	return strings.Join(parts, ",")
}

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

// Neighbour is a running set of hogs and the probe beside them.
type Neighbour struct {
	spec  Spec
	seed  int64
	start time.Time
	unit  int // hash rounds in the probe's unit of work
	// work is one slice of a busy thread's work (hashing); a test gives a
	// neighbour that does nothing one that sleeps instead.
	work  func(*[32]byte)
	stop  chan struct{}
	wg    sync.WaitGroup
	procs int // GOMAXPROCS before Start raised it
	// closing asks the probe to finish (Stop closes it); the probe closes
	// probed once it has its pairs, or cannot take them.
	closing, probed chan struct{}
	// window counts the probe's quiet windows: odd while one is open (the
	// hogs pause), even while they run; hushed is how long the quiet
	// windows lasted in all.
	window atomic.Int64
	hushed atomic.Int64

	cpuNanos atomic.Int64
	ioBytes  atomic.Int64
	mu       sync.Mutex
	pairs    []pair
	late     int // pairs taken after Stop was called
	unread   int // pairs whose thread's CPU clock could not be read
	// interrupted says the probe stopped because ctx was done.
	interrupted atomic.Bool
	ioFiles     []string
}

// pairEvery, settle and topUp shape the probe: a pair of samples every
// 75 to 150 ms (drawn from the seed), the quiet one once the hogs have
// had settle to notice their pause (a hog that is running looks every
// few microseconds; one that is not takes nothing from the probe), and
// after the battery, pairs back to back until there are MinPairs, for at
// most topUp.
const (
	pairEvery = 75 * time.Millisecond
	settle    = 10 * time.Millisecond
	topUp     = 5 * time.Second
)

// quietNow reports whether a quiet window is open.
func (n *Neighbour) quietNow() bool { return n.window.Load()%2 == 1 }

// Start starts spec's hogs, drawing their bursts and pauses from seed, and
// a probe beside them; dir holds the I/O writers' files (removed by Stop,
// or by the kernel or the next Start or Sweep when the process is killed:
// see openScratch), and the files a killed neighbour left there are
// removed first.
// The hogs are threads of this process, so nothing outlives it; GOMAXPROCS
// grows by the busy threads so that they compete with the machine's other
// processes, not with this process's own goroutines.
func Start(ctx context.Context, spec Spec, seed int64, dir string) (*Neighbour, error) {
	return start(ctx, spec, seed, dir, hashSlice)
}

// hashSlice is a busy thread's slice of work: a few tens of microseconds
// of hashing, after which it looks whether a quiet window opened.
func hashSlice(buf *[32]byte) {
	for range 256 {
		*buf = sha256.Sum256(buf[:])
	}
}

func start(ctx context.Context, spec Spec, seed int64, dir string, work func(*[32]byte)) (*Neighbour, error) {
	n := &Neighbour{spec: spec, seed: seed, work: work, stop: make(chan struct{}), closing: make(chan struct{}), probed: make(chan struct{})}
	n.unit = calibrate()
	n.procs = runtime.GOMAXPROCS(0)
	runtime.GOMAXPROCS(n.procs + spec.CPU)
	n.start = time.Now()
	for i := range spec.CPU {
		n.wg.Add(1)
		go n.burn(ctx, rand.New(rand.NewPCG(uint64(seed), uint64(i))))
	}
	if spec.IO > 0 {
		RemoveStale(dir, io.Discard)
	}
	for i := range spec.IO {
		f, err := openScratch(dir)
		if err != nil {
			n.halt()
			return nil, fmt.Errorf("start the noise's writer %d: %w", i+1, err)
		}
		if _, err := os.Lstat(f.Name()); err == nil {
			n.ioFiles = append(n.ioFiles, f.Name())
		}
		n.wg.Add(1)
		go n.write(ctx, f, rand.New(rand.NewPCG(uint64(seed), uint64(1000+i))))
	}
	n.wg.Add(1)
	go n.probe(ctx, rand.New(rand.NewPCG(uint64(seed), 1<<20)))
	return n, nil
}

// hush waits out a quiet window; it reports false when the neighbour stops.
func (n *Neighbour) hush(ctx context.Context) bool {
	for n.quietNow() {
		select {
		case <-n.stop:
			return false
		case <-ctx.Done():
			return false
		case <-time.After(5 * time.Millisecond):
		}
	}
	return true
}

// burn is one busy thread: bursts of 50 to 250 ms of work, pauses of up
// to 5 ms, drawn from its seed, until Stop. It adds the CPU time its
// thread got.
func (n *Neighbour) burn(ctx context.Context, rng *rand.Rand) {
	defer n.wg.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := threadCPU()
	defer func() { n.cpuNanos.Add(int64(threadCPU() - before)) }()
	var buf [32]byte
	for {
		burst := 50*time.Millisecond + time.Duration(rng.IntN(200))*time.Millisecond
		end := time.Now().Add(burst)
		for time.Now().Before(end) && !n.quietNow() {
			n.work(&buf)
		}
		if !n.hush(ctx) {
			return
		}
		select {
		case <-n.stop:
			return
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(rng.IntN(5000)) * time.Microsecond):
		}
	}
}

// ioChunk and ioWrap bound a writer: 1 MiB writes, synced every 8, over
// a file that wraps at 64 MiB.
const (
	ioChunk = 1 << 20
	ioWrap  = 64 << 20
)

// write is one I/O writer: seeded 1 MiB chunks, synced every 8 MiB, into a
// file that wraps at 64 MiB, until Stop.
func (n *Neighbour) write(ctx context.Context, f *os.File, rng *rand.Rand) {
	defer n.wg.Done()
	defer f.Close()
	buf := make([]byte, ioChunk)
	var off int64
	for {
		select {
		case <-n.stop:
			return
		case <-ctx.Done():
			return
		default:
		}
		if !n.hush(ctx) {
			return
		}
		for i := range buf {
			buf[i] = byte(rng.Uint32())
		}
		if _, err := f.WriteAt(buf, off); err != nil {
			return
		}
		off = (off + ioChunk) % ioWrap
		if off%(8*ioChunk) == 0 {
			_ = f.Sync()
		}
		n.ioBytes.Add(ioChunk)
	}
}

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

// Stop lets the probe finish its pairs, ends the hogs, removes the
// writers' files and says what they did. It may be called once.
func (n *Neighbour) Stop() Evidence {
	ended := time.Since(n.start)
	close(n.closing)
	<-n.probed
	n.halt()
	wall := time.Since(n.start)
	e := Evidence{Spec: n.spec, Seed: n.seed, ArmedAt: n.start, Wall: wall, IOBytes: n.ioBytes.Load(), Load: load1(), Cores: runtime.NumCPU()}
	if ran := wall - time.Duration(n.hushed.Load()); n.spec.CPU > 0 && ran > 0 {
		e.Taken = float64(n.cpuNanos.Load()) / float64(ran)
		e.Duty = e.Taken / float64(n.spec.CPU)
	}
	n.mu.Lock()
	pairs, late, unread := slices.Clone(n.pairs), n.late, n.unread
	n.mu.Unlock()
	e.Samples, e.Late = 2*len(pairs), 2*late
	loud, quiet := make([]sample, len(pairs)), make([]sample, len(pairs))
	for i, p := range pairs {
		loud[i], quiet[i] = p.loud, p.quiet
	}
	e.Loaded, e.Baseline, e.ThreadShare = medianWall(loud), medianWall(quiet), medianShare(loud)
	if e.Baseline > 0 {
		e.Slowdown = float64(e.Loaded) / float64(e.Baseline)
	}
	if len(pairs) < MinPairs {
		e.Unmeasured = unmeasured(len(pairs), unread, n.interrupted.Load(), ended, wall-ended)
	}
	return e
}

// unmeasured says why the probe took only got of the MinPairs pairs it
// needs: the run was interrupted, or its thread's CPU clock could not be
// read, or the machine gave its thread too little CPU to take them in
// topUp after the battery ended.
func unmeasured(got, unread int, interrupted bool, battery, after time.Duration) string {
	short := fmt.Sprintf("it took %d of the %d pairs of samples it needs", got, MinPairs)
	switch {
	case interrupted:
		return fmt.Sprintf("the run was interrupted %s after the neighbour started, and %s: rerun it", battery.Round(time.Millisecond), short)
	case unread > 0:
		return fmt.Sprintf("%s: its thread's CPU clock could not be read %d times (CLOCK_THREAD_CPUTIME_ID)", short, unread)
	}
	return fmt.Sprintf("%s in the %s of the battery and %s after it: other work left its thread too little of the CPU to time 5 ms of work", short, battery.Round(10*time.Millisecond), after.Round(10*time.Millisecond))
}

// halt ends the hogs, the writers and the probe and removes the writers'
// files.
func (n *Neighbour) halt() {
	close(n.stop)
	n.wg.Wait()
	runtime.GOMAXPROCS(n.procs)
	for _, f := range n.ioFiles {
		_ = os.Remove(f)
	}
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

// Replay is the command that runs validate beside the same neighbour.
func Replay(spec Spec, seed int64) string {
	return fmt.Sprintf("%s=%s %s=%d go tool mage validate", envvar.Noise, spec, envvar.Seed, seed)
}
