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
	// Baseline is the wall time of the probe's unit of work (5 ms of CPU)
	// in the neighbour's quiet windows (the hogs pause for a moment every
	// couple of seconds), its median; Loaded its median while they ran.
	// Both are taken in the same run, so that what else the machine does
	// weighs on both alike.
	Baseline time.Duration `json:"baseline_ns"`
	Loaded   time.Duration `json:"loaded_ns"`
	Samples  int           `json:"samples"`
	// Slowdown is how much less of the CPU the probe's thread got beside
	// the hogs than in their quiet windows: the median share of its wall
	// time it ran in the quiet, over the same while they ran.
	Slowdown float64 `json:"slowdown"`
	// ThreadShare is the median share of its wall time the probe's thread
	// got the CPU beside the busy threads: what one thread of this machine
	// got while they ran (most of a core on a machine with cores to spare,
	// a sliver of one on a machine other work saturates).
	ThreadShare float64 `json:"thread_share,omitempty"`
	// Victim, when set, is the battery's own measure of its slowdown,
	// which the caller adds (for example its packages against their last
	// recorded times).
	Victim string `json:"victim,omitempty"`
}

// The thresholds of Fired: each busy thread got at least a quarter of
// what a thread of this machine got beside them (the probe's ThreadShare:
// most of a core when the machine has cores to spare, a sliver of one
// when other work saturates it), and a probe thread got at least a tenth
// less of the CPU beside them than in their quiet windows. (A thread's
// fair share is no threshold: the kernel shares the CPU between control
// groups, containers and sessions before threads, so the share a busy
// thread gets says little about what it took. What a thread of the same
// run got at the same time does.)
const (
	MinTaken    = 0.25
	MinSlowdown = 1.1
)

// Fired reports whether the neighbour was observed to land: its threads
// took CPU from the machine and its writers wrote (the injector's side),
// and the machine slowed for the probe beside them (the victim's side). A
// neighbour on a machine with cores to spare does not fire, and its record
// says so.
func (e Evidence) Fired() bool {
	cpu := e.Spec.CPU == 0 || e.Taken >= e.TakenNeeded()
	io := e.Spec.IO == 0 || e.IOBytes > 0
	return cpu && io && e.Slowdown >= MinSlowdown
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
	s := fmt.Sprintf("neighbour %s (seed %d) for %s", e.Spec, e.Seed, e.Wall.Round(time.Second))
	if e.Spec.CPU > 0 {
		s += fmt.Sprintf(": %d busy threads at a duty cycle of %.0f%% took %.2f of the %d cores (load %.1f)", e.Spec.CPU, 100*e.Duty, e.Taken, e.Cores, e.Load)
	}
	if e.Spec.IO > 0 {
		s += fmt.Sprintf("; %d writers wrote and synced %d MiB", e.Spec.IO, e.IOBytes>>20)
	}
	return s
}

// VictimSide is what the run saw beside it, in words.
func (e Evidence) VictimSide() string {
	s := fmt.Sprintf("a probe thread got %.2fx less of the CPU beside the neighbour (its 5 ms of work took %s, median of %d samples, against %s in the neighbour's quiet windows)",
		e.Slowdown, e.Loaded.Round(10*time.Microsecond), e.Samples, e.Baseline.Round(10*time.Microsecond))
	if e.Victim != "" {
		s += "; " + e.Victim
	}
	if e.Slowdown < MinSlowdown {
		s += fmt.Sprintf("; under %.2fx, the neighbour did not slow this machine: give it more hogs (%s=cpu:%d)", MinSlowdown, envvar.Noise, 2*runtime.NumCPU())
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
	stop  chan struct{}
	wg    sync.WaitGroup
	procs int // GOMAXPROCS before Start raised it
	// window counts the neighbour's windows: odd while a quiet one is
	// open (the hogs pause), even while they run; hushed is how long the
	// quiet windows it opened lasted in all.
	window atomic.Int64
	hushed atomic.Int64

	cpuNanos atomic.Int64
	ioBytes  atomic.Int64
	mu       sync.Mutex
	loud     []sample
	quiet    []sample
	ioFiles  []string
}

// quietEvery and quietFor shape the quiet windows: every 1.5 to 2.5 s
// (drawn from the seed) the hogs pause for quietFor, and the probe's
// samples there are the machine without the neighbour.
const (
	quietEvery = 1500 * time.Millisecond
	quietFor   = 300 * time.Millisecond
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
	n := &Neighbour{spec: spec, seed: seed, stop: make(chan struct{})}
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
			n.Stop()
			return nil, fmt.Errorf("start the noise's writer %d: %w", i+1, err)
		}
		if _, err := os.Lstat(f.Name()); err == nil {
			n.ioFiles = append(n.ioFiles, f.Name())
		}
		n.wg.Add(1)
		go n.write(ctx, f, rand.New(rand.NewPCG(uint64(seed), uint64(1000+i))))
	}
	n.wg.Add(2)
	go n.windows(ctx, rand.New(rand.NewPCG(uint64(seed), 1<<20)))
	go n.probe(ctx)
	return n, nil
}

// windows opens a quiet window every 1.5 to 2.5 s, drawn from rng.
func (n *Neighbour) windows(ctx context.Context, rng *rand.Rand) {
	defer n.wg.Done()
	for {
		loud := quietEvery + time.Duration(rng.IntN(1000))*time.Millisecond
		for i, d := range []time.Duration{loud, quietFor} {
			opened := time.Now()
			select {
			case <-n.stop:
				if i == 1 {
					n.hushed.Add(int64(time.Since(opened)))
				}
				return
			case <-ctx.Done():
				return
			case <-time.After(d):
				if i == 1 {
					n.hushed.Add(int64(time.Since(opened)))
				}
				n.window.Add(1)
			}
		}
	}
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

// burn is one busy thread: bursts of 50 to 250 ms of hashing, pauses of
// up to 5 ms, drawn from its seed, until Stop. It adds the CPU time its
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
			for range 256 {
				buf = sha256.Sum256(buf[:])
			}
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

// probe runs the unit of work every 100 ms on a thread of its own and
// files each sample, the share of its wall time the thread got the CPU,
// as loud or quiet by the window it ran in from start to end (a sample
// across a window's edge is dropped). The first 20 ms of a quiet window
// are left to the hogs to notice it.
func (n *Neighbour) probe(ctx context.Context) {
	defer n.wg.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	var opened int64
	var openedAt time.Time
	for {
		select {
		case <-n.stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w := n.window.Load()
		if w != opened {
			opened, openedAt = w, time.Now()
		}
		if w%2 == 1 && time.Since(openedAt) < 20*time.Millisecond {
			continue
		}
		cpu, wall := n.timeUnit()
		if n.window.Load() != w || wall <= 0 {
			continue
		}
		n.mu.Lock()
		if w%2 == 1 {
			n.quiet = append(n.quiet, sample{cpu, wall})
		} else {
			n.loud = append(n.loud, sample{cpu, wall})
		}
		n.mu.Unlock()
	}
}

// sample is one run of the probe's unit of work: the CPU its thread got,
// and the wall time it took.
type sample struct{ cpu, wall time.Duration }

// timeUnit runs the unit of work on the calling (locked) thread.
func (n *Neighbour) timeUnit() (cpu, wall time.Duration) {
	c0, w0 := threadCPU(), time.Now()
	hash(n.unit)
	return threadCPU() - c0, time.Since(w0)
}

// Samples is how many of the probe's samples were taken so far, beside the
// hogs and in their quiet windows.
func (n *Neighbour) Samples() (loud, quiet int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.loud), len(n.quiet)
}

// Stop ends the hogs and the probe, removes the writers' files and says
// what they did. It may be called once.
func (n *Neighbour) Stop() Evidence {
	close(n.stop)
	n.wg.Wait()
	runtime.GOMAXPROCS(n.procs)
	for _, f := range n.ioFiles {
		_ = os.Remove(f)
	}
	wall := time.Since(n.start)
	e := Evidence{Spec: n.spec, Seed: n.seed, ArmedAt: n.start, Wall: wall, IOBytes: n.ioBytes.Load(), Load: load1(), Cores: runtime.NumCPU()}
	if ran := wall - time.Duration(n.hushed.Load()); n.spec.CPU > 0 && ran > 0 {
		e.Taken = float64(n.cpuNanos.Load()) / float64(ran)
		e.Duty = e.Taken / float64(n.spec.CPU)
	}
	n.mu.Lock()
	loud, quiet := slices.Clone(n.loud), slices.Clone(n.quiet)
	n.mu.Unlock()
	e.Samples = len(loud) + len(quiet)
	e.Loaded, e.Baseline = medianWall(loud), medianWall(quiet)
	if l, q := medianShare(loud), medianShare(quiet); l > 0 && q > 0 {
		e.Slowdown, e.ThreadShare = q/l, l
	}
	return e
}

// medianShare is the median share of its wall time the probe got the CPU.
func medianShare(ss []sample) float64 {
	if len(ss) == 0 {
		return 0
	}
	shares := make([]float64, len(ss))
	for i, s := range ss {
		shares[i] = min(1, float64(s.cpu)/float64(s.wall))
	}
	slices.Sort(shares)
	return shares[len(shares)/2]
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

// threadCPU is the CPU time the calling thread has used.
func threadCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Replay is the command that runs validate beside the same neighbour.
func Replay(spec Spec, seed int64) string {
	return fmt.Sprintf("%s=%s %s=%d go tool mage validate", envvar.Noise, spec, envvar.Seed, seed)
}
