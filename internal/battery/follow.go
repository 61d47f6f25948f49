package battery

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/interrupt"
	"github.com/contested/contested/internal/secret"
	"github.com/contested/contested/internal/terminal"
)

// follower turns events into progress lines and the result.
type follower struct {
	mu       sync.Mutex
	out      io.Writer
	total    int
	done     int
	failures int
	running  map[string]time.Time
	pkgs     map[string]*Package
	tests    map[string]*Test
	output   map[string]*strings.Builder // per package or test, while running
	reported map[string]*strings.Builder // per test, its failure messages (t.Error, t.Fatal), while running
	open     map[string]*openTest        // tests started and not ended, by key
	timeouts map[string]*timeoutPanic    // per package whose binary timed out
	// stopped says what stopped the run ("SIGINT"), "" while nothing has:
	// the runner's evidence that a test binary's exit was its doing.
	stopped func() (string, time.Time)
	strays  strings.Builder
	last    time.Time
	// dirs are the packages' directories, by import path, and sources
	// their test files' lines: what tells a failure from a log line.
	dirs    map[string]string
	sources sourceLines
}

// openTest is a test that started and has not reported its end.
type openTest struct {
	started time.Time
	paused  bool // a parallel test waiting for its turn: not running
}

// timeoutPanic is what a test binary prints when go test's -timeout ends
// it: "panic: test timed out after 10m0s", then "running tests:" and one
// "\t\tName (duration)" line per running test.
type timeoutPanic struct {
	after   string
	listing bool
	running map[string]time.Duration
}

func newFollower(out io.Writer, dirs map[string]string) *follower {
	return &follower{out: out, total: len(dirs), dirs: dirs, running: map[string]time.Time{}, pkgs: map[string]*Package{},
		tests: map[string]*Test{}, output: map[string]*strings.Builder{}, reported: map[string]*strings.Builder{}, open: map[string]*openTest{},
		timeouts: map[string]*timeoutPanic{}, last: time.Now()}
}

func key(pkg, test string) string { return pkg + "\x00" + test }

// failureBuf is the failure messages test k reported so far.
func (f *follower) failureBuf(k string) *strings.Builder {
	b, ok := f.reported[k]
	if !ok {
		b = &strings.Builder{}
		f.reported[k] = b
	}
	return b
}

func (f *follower) buf(k string) *strings.Builder {
	b, ok := f.output[k]
	if !ok {
		b = &strings.Builder{}
		f.output[k] = b
	}
	return b
}

func (f *follower) event(ev Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pkg := ev.Package
	if pkg == "" {
		pkg = ev.ImportPath
	}
	switch ev.Action {
	case "start":
		f.running[pkg] = ev.Time
	case "build-output":
		// The package's fail event follows.
		f.buf(key(buildPackage(pkg), "")).WriteString(ev.Output)
	case "run":
		f.open[key(pkg, ev.Test)] = &openTest{started: ev.Time}
	case "pause", "cont":
		if o := f.open[key(pkg, ev.Test)]; o != nil {
			o.paused = ev.Action == "pause"
		}
	case "output":
		f.scanTimeout(pkg, ev.Output)
		failure := ev.Test != "" && strings.HasPrefix(ev.OutputType, "error")
		// A subtest's output also belongs to its parents.
		for t := ev.Test; ; t = t[:strings.LastIndexByte(t, '/')] {
			if b := f.buf(key(pkg, t)); b.Len() < 256<<10 {
				b.WriteString(ev.Output)
			}
			if b := f.failureBuf(key(pkg, t)); failure && b.Len() < 64<<10 {
				b.WriteString(ev.Output)
			}
			if !strings.Contains(t, "/") {
				break
			}
		}
	case "pass", "fail", "skip":
		el := time.Duration(ev.Elapsed * float64(time.Second))
		if ev.Test != "" {
			t := &Test{Package: pkg, Name: ev.Test, Action: ev.Action, Elapsed: el}
			if o := f.open[key(pkg, ev.Test)]; o != nil {
				t.Started = o.started
			}
			out := f.buf(key(pkg, ev.Test)).String()
			if ev.Action != "pass" {
				t.Missing = missingCapabilities(out)
			}
			if ev.Action == "fail" {
				t.Output = out
				t.Failure = failureText(f.failureBuf(key(pkg, ev.Test)).String(), out, &f.sources, f.dirs[pkg])
				f.failures++
				fmt.Fprintf(f.out, "battery:   FAIL %s %s (%s)\n", terminal.Escape(short(pkg)), terminal.Escape(ev.Test), el.Round(10*time.Millisecond))
			}
			delete(f.output, key(pkg, ev.Test))
			delete(f.reported, key(pkg, ev.Test))
			delete(f.open, key(pkg, ev.Test))
			f.tests[key(pkg, ev.Test)] = t
			return
		}
		p := &Package{Name: pkg, Action: ev.Action, Elapsed: el}
		if ev.Action == "fail" {
			p.Output = f.buf(key(pkg, "")).String()
			f.blameUnfinished(p, ev.Time)
			if by, _ := f.stoppedNow(); by != "" && p.Timeout == "" {
				p.Interrupted = by
			}
		}
		delete(f.output, key(pkg, ""))
		delete(f.running, pkg)
		f.pkgs[pkg] = p
		f.done++
		f.last = time.Now()
		word := map[string]string{"pass": "ok  ", "fail": "FAIL", "skip": "----"}[ev.Action]
		how := ""
		if p.Timeout != "" {
			how = ": " + p.TimedOut() + " (go test -timeout; " + envvar.TestTimeout + " sets it)"
		}
		fmt.Fprintf(f.out, "battery: [%*d/%d] %s %s (%s)%s\n", len(fmt.Sprint(f.total)), f.done, f.total, word, terminal.Escape(short(pkg)), el.Round(100*time.Millisecond), how)
	}
}

// buildPackage is the package a build event's ImportPath is about: "p [p.test]"
// (p's test build), "p_test [p.test]" (its external tests) and "p.test" (its
// test main, as a test file that does not parse reports it) are all p's.
func buildPackage(importPath string) string {
	f := strings.Fields(importPath)
	if len(f) == 0 {
		return importPath
	}
	p := strings.TrimSuffix(strings.TrimPrefix(f[len(f)-1], "["), "]")
	return strings.TrimSuffix(p, ".test")
}

// scanTimeout follows the panic a test binary prints when go test's
// -timeout ends it. test2json attributes those lines to whichever test
// printed last, so they are read whatever test they carry.
func (f *follower) scanTimeout(pkg, line string) {
	if after, ok := strings.CutPrefix(line, "panic: test timed out after "); ok {
		f.timeouts[pkg] = &timeoutPanic{after: strings.TrimSpace(after), running: map[string]time.Duration{}}
		return
	}
	tp := f.timeouts[pkg]
	switch {
	case tp == nil:
	case line == "\trunning tests:\n":
		tp.listing = true
	case tp.listing:
		name, dur, ok := strings.Cut(strings.TrimSpace(line), " (")
		if !ok || !strings.HasPrefix(line, "\t\t") {
			tp.listing = false
			return
		}
		d, _ := time.ParseDuration(strings.TrimSuffix(dur, ")"))
		tp.running[name] = d
	}
}

// blameUnfinished fails the tests of a failed package that were running
// when its test binary ended without letting them finish: the ones go
// test's -timeout listed, or else every test started and not paused (a
// panic outside the test's goroutine, os.Exit, a crash). A parent fails
// with its subtest, as go test fails it. The package records the timeout.
func (f *follower) blameUnfinished(p *Package, end time.Time) {
	tp := f.timeouts[p.Name]
	var keys []string
	for k := range f.open {
		if strings.HasPrefix(k, p.Name+"\x00") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		o := f.open[k]
		pkg, name, _ := strings.Cut(k, "\x00")
		delete(f.open, k)
		if !tp.wasRunning(name, o) {
			continue
		}
		t := &Test{Package: pkg, Name: name, Action: "fail", Elapsed: end.Sub(o.started), Started: o.started, Output: f.buf(k).String(),
			Cause: crashCause}
		t.Failure = failureText(f.failureBuf(k).String(), t.Output+p.Output, &f.sources, f.dirs[pkg])
		if tp != nil {
			t.Timeout = tp.after
			t.Cause = "timed out: still running when go test's -timeout of " + tp.after + " ended the test binary"
			t.Failure = t.Cause // the panic go test printed is the timeout's, not the test's
		} else if by, _ := f.stoppedNow(); by != "" {
			markInterrupted(t, by)
		}
		delete(f.output, k)
		f.tests[k] = t
		f.failures++
		word := "FAIL"
		if t.Interrupted != "" {
			word = "STOPPED"
		}
		fmt.Fprintf(f.out, "battery:   %s %s %s (%s): %s\n", word, terminal.Escape(short(pkg)), terminal.Escape(name), t.Elapsed.Round(10*time.Millisecond), terminal.Escape(t.Cause))
	}
	if tp != nil {
		p.Timeout = tp.after
		p.Running = tp.leaves()
	}
	delete(f.timeouts, p.Name)
}

// crashCause is the cause of a test whose binary exited while it ran, when
// nothing says the run stopped it.
const crashCause = "the test binary exited while it ran: a panic outside the test's goroutine, os.Exit or a crash"

// stoppedBy returns what says whether, and since when, the runner stopped
// the run: the signal this process received (internal/interrupt), else
// ctx's end (a deadline, a cancelled command). That is the runner's own
// evidence: it sends its go test process group SIGINT itself
// (interrupt.Command), so a test binary that exited then did not crash.
func stoppedBy(ctx context.Context) func() (string, time.Time) {
	var mu sync.Mutex
	var ended time.Time
	context.AfterFunc(ctx, func() {
		mu.Lock()
		ended = time.Now()
		mu.Unlock()
	})
	return func() (string, time.Time) {
		if sig, at := interrupt.ReceivedAt(); sig != nil {
			return interrupt.Name(sig), at
		}
		if err := ctx.Err(); err != nil {
			mu.Lock()
			defer mu.Unlock()
			if ended.IsZero() {
				ended = time.Now()
			}
			return "the run's cancellation (" + err.Error() + ")", ended
		}
		return "", time.Time{}
	}
}

// stopSlack is how long before this process learned of a stop a test
// binary may have been stopped by the same request: a CI runner or a
// terminal signals the whole tree at once.
const stopSlack = 2 * time.Second

// stoppedNow is what stopped the run and when, "" when nothing has (or f
// has no way to tell).
func (f *follower) stoppedNow() (string, time.Time) {
	if f.stopped == nil {
		return "", time.Time{}
	}
	return f.stopped()
}

// markInterrupted says of t, failed because its binary exited while it
// ran, that the run was stopped by by: not a crash, and unconfirmed.
func markInterrupted(t *Test, by string) {
	t.Interrupted = by
	t.Cause = "interrupted by " + by + " while it ran: the run stopped its test binary, which is not a crash; the test's outcome is unconfirmed"
	t.Failure = t.Cause // what the binary printed as it was stopped is the stop's, not the test's
}

// wasRunning reports whether an unfinished test ran when its binary
// ended: the timeout's list says so; without one (nil), every test not
// paused did.
func (tp *timeoutPanic) wasRunning(name string, o *openTest) bool {
	if tp == nil {
		return !o.paused
	}
	_, listed := tp.running[name]
	return listed
}

// leaves returns the running tests that have no running subtest, the
// longest-running first.
func (tp *timeoutPanic) leaves() []string {
	var out []string
	for name := range tp.running {
		leaf := true
		for other := range tp.running {
			if strings.HasPrefix(other, name+"/") {
				leaf = false
				break
			}
		}
		if leaf {
			out = append(out, name)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		di, dj := tp.running[out[i]], tp.running[out[j]]
		if di != dj {
			return di > dj
		}
		return out[i] < out[j]
	})
	return out
}

func (f *follower) stray(line string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.strays.WriteString(line + "\n")
}

func (f *follower) strayOutput() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.strays.String()
}

// heartbeat says what is still running when nothing has finished for a
// while, so a long battery never looks hung.
func (f *follower) heartbeat(every time.Duration) func() {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				f.mu.Lock()
				if time.Since(f.last) >= every && len(f.running) > 0 {
					var names []string
					for p, since := range f.running {
						names = append(names, fmt.Sprintf("%s (%s)", short(p), time.Since(since).Round(time.Second)))
					}
					sort.Strings(names)
					fmt.Fprintf(f.out, "battery: %d/%d done, %d failing; still running: %s\n", f.done, f.total, f.failures, strings.Join(names, ", "))
				}
				f.mu.Unlock()
			}
		}
	}()
	return func() { close(stop); wg.Wait() }
}

func (f *follower) results() ([]Package, []Test) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ps []Package
	for _, p := range f.pkgs {
		ps = append(ps, *p)
	}
	// Packages that never reported an end (killed, or a build failure
	// reported only through build events) count as failed.
	for k, b := range f.output {
		pkg, test, _ := strings.Cut(k, "\x00")
		if test == "" && f.pkgs[pkg] == nil && b.Len() > 0 {
			ps = append(ps, Package{Name: pkg, Action: "fail", Output: b.String()})
		}
	}
	for pkg := range f.running {
		if f.pkgs[pkg] == nil {
			ps = append(ps, Package{Name: pkg, Action: "fail", Output: "the package started and never finished"})
		}
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].Name < ps[j].Name })
	// A signal can reach a test binary before this process learns of it
	// (a CI runner signals the whole tree at once): once the run is over,
	// a test whose binary exited just before the stop was its too.
	by, at := f.stoppedNow()
	var ts []Test
	for _, t := range f.tests {
		if by != "" && t.Cause == crashCause && !t.Started.Add(t.Elapsed).Before(at.Add(-stopSlack)) {
			markInterrupted(t, by)
		}
		ts = append(ts, *t)
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].ID() < ts[j].ID() })
	return dedupe(ps), ts
}

func dedupe(ps []Package) []Package {
	var out []Package
	for i, p := range ps {
		if i > 0 && ps[i-1].Name == p.Name {
			continue
		}
		out = append(out, p)
	}
	return out
}

func (f *follower) summarize(r *Result) {
	var pass, fail, skip int
	for _, t := range r.Tests {
		switch t.Action {
		case "pass":
			pass++
		case "fail":
			fail++
		case "skip":
			skip++
		}
	}
	fmt.Fprintf(f.out, "battery: %d tests passed, %d failed, %d skipped in %s\n", pass, fail, skip, r.Elapsed.Round(100*time.Millisecond))
}

// short trims the module path off a package name for progress lines.
func short(pkg string) string {
	if i := strings.Index(pkg, "/"); i >= 0 && strings.Contains(pkg[:i], ".") {
		parts := strings.SplitN(pkg, "/", 4)
		if len(parts) == 4 {
			return parts[3]
		}
	}
	return filepath.Base(pkg)
}

// follow hands one line of go test -json to the follower: scrubbed before
// anything reads it, so that the event log, the progress lines and the
// failures' output (which reach validate.json, the ladder and issue
// bodies) never see a secret; written to events (under mu, when several
// streams share it); a line that is not an event is stray output.
func follow(f *follower, events io.Writer, mu *sync.Mutex, raw []byte) {
	line := secret.Scrub(raw)
	if events != nil {
		if mu != nil {
			mu.Lock()
		}
		events.Write(append(line, '\n'))
		if mu != nil {
			mu.Unlock()
		}
	}
	var ev Event
	if err := json.Unmarshal(line, &ev); err != nil {
		f.stray(string(line))
		return
	}
	f.event(ev)
}
