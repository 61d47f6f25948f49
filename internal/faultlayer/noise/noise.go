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

// Replay is the command that runs validate beside the same neighbour.
func Replay(spec Spec, seed int64) string {
	return fmt.Sprintf("%s=%s %s=%d go tool mage validate", envvar.Noise, spec, envvar.Seed, seed)
}
