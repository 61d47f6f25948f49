// Package battery runs the integration battery (go test -json over the
// module) and follows it: progress as packages finish, failures as they
// happen, and a result that says which tests failed and what they printed.
package battery

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
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

// Event is one line of `go test -json` (cmd/test2json), plus the build
// events go test emits for packages that do not compile.
type Event struct {
	Time       time.Time `json:"Time"`
	Action     string    `json:"Action"`
	Package    string    `json:"Package"`
	ImportPath string    `json:"ImportPath"`
	Test       string    `json:"Test"`
	Elapsed    float64   `json:"Elapsed"`
	Output     string    `json:"Output"`
	// OutputType is "error" (and "error-continue") for what the test
	// reported through t.Error, t.Fatal and the like, "frame" for the
	// framing lines; empty for its log and its prints (Go 1.25's test2json).
	OutputType string `json:"OutputType"`
}

// Test is one test's outcome.
type Test struct {
	Package string        `json:"package"`
	Name    string        `json:"name"`
	Action  string        `json:"action"` // pass, fail, skip
	Elapsed time.Duration `json:"elapsed_ns"`
	// Started is when the test started (its run event), zero when the
	// stream did not say: with Elapsed, the window the machine's capacity
	// samples are read over for it.
	Started time.Time `json:"started,omitzero"`
	Output  string    `json:"output,omitempty"` // kept for failures
	// Failure is what the test reported as its failure: its t.Error and
	// t.Fatal messages (and its subtests'), or the panic that ended it;
	// never its log lines, which stay in Output.
	Failure string `json:"failure,omitempty"`
	// Missing are the capabilities a skipped (or failed) test said it
	// lacked, in the words of package capability ("missing capability
	// chromium: …").
	Missing []string `json:"missing_capabilities,omitempty"`
	// Cause is set for a test that never reported its end because its test
	// binary did not let it: go test's -timeout, or a panic outside the
	// test's goroutine (or os.Exit, or a crash) while it ran. Such a test
	// is that failure's, and is reported failed.
	Cause string `json:"cause,omitempty"`
	// Timeout is go test's -timeout ("10m0s") when that is what ended it.
	Timeout string `json:"timeout,omitempty"`
}

// ID is the test's package-qualified name.
func (t Test) ID() string { return t.Package + "." + t.Name }

// Package is one package's outcome.
type Package struct {
	Name    string        `json:"name"`
	Action  string        `json:"action"` // pass, fail, skip
	Elapsed time.Duration `json:"elapsed_ns"`
	// Started is when the test started (its run event), zero when the
	// stream did not say: with Elapsed, the window the machine's capacity
	// samples are read over for it.
	Started time.Time `json:"started,omitzero"`
	Output  string    `json:"output,omitempty"` // kept for failures (build errors, panics)
	// Timeout is go test's -timeout, as it printed it ("10m0s"), when the
	// package's test binary ran out of it; Running are the tests it was
	// running then, most specific only, longest-running first.
	Timeout string   `json:"timeout,omitempty"`
	Running []string `json:"running,omitempty"`
	// Reused is set when validate did not run the package but reused the
	// result of the earlier certified run it names (its inputs' digest
	// matched that run's certificate).
	Reused *Reused `json:"reused,omitempty"`
}

// Reused names the earlier certified run a result was reused from.
type Reused struct {
	RunID  string    `json:"run_id"`
	Commit string    `json:"commit,omitempty"`
	Dirty  bool      `json:"dirty,omitempty"`
	At     time.Time `json:"at"`
}

// TimedOut says how a package go test's -timeout ended: "timed out after
// 10m0s while running TestX/sub (and: TestY)"; empty when it did not.
func (p Package) TimedOut() string {
	if p.Timeout == "" {
		return ""
	}
	s := "timed out after " + p.Timeout
	if len(p.Running) > 0 {
		s += " while running " + p.Running[0]
	}
	if len(p.Running) > 1 {
		s += " (and: " + strings.Join(p.Running[1:], ", ") + ")"
	}
	return s
}

// Result is the outcome of one battery run.
type Result struct {
	Packages []Package     `json:"packages"`
	Tests    []Test        `json:"tests"`
	Started  time.Time     `json:"started"`
	Elapsed  time.Duration `json:"elapsed_ns"`
	// ExitCode is go test's exit code (0 when everything passed).
	ExitCode int `json:"exit_code"`
	// Ceiling is the most packages that might run at once (-p), and
	// MostAtOnce how many did at most: fewer when the machine had no CPU
	// to give more (Options.Admit).
	Ceiling    int `json:"ceiling,omitempty"`
	MostAtOnce int `json:"most_at_once,omitempty"`
}

// Failed returns the tests that failed, top-level and subtests alike, in
// package and name order.
func (r *Result) Failed() []Test {
	var out []Test
	for _, t := range r.Tests {
		if t.Action == "fail" {
			out = append(out, t)
		}
	}
	return out
}

// TimedOut returns the packages whose test binary go test's -timeout
// ended; their running tests are among Failed.
func (r *Result) TimedOut() []Package {
	var out []Package
	for _, p := range r.Packages {
		if p.Timeout != "" {
			out = append(out, p)
		}
	}
	return out
}

// FailedPackages returns packages that failed without a failing test to
// blame: build failures, panics outside any test, TestMain failures. A
// panic or a timeout while a test ran is that test's failure (Test.Cause).
func (r *Result) FailedPackages() []Package {
	blamed := map[string]bool{}
	for _, t := range r.Failed() {
		blamed[t.Package] = true
	}
	var out []Package
	for _, p := range r.Packages {
		if p.Action == "fail" && !blamed[p.Name] {
			out = append(out, p)
		}
	}
	return out
}

// OK reports whether the battery passed.
func (r *Result) OK() bool {
	return r.ExitCode == 0 && len(r.Failed()) == 0 && len(r.FailedPackages()) == 0
}

// Options configures Run.
type Options struct {
	Dir      string   // the module root
	Patterns []string // packages; default ./...
	Args     []string // extra go test flags (for example -run)
	Env      []string // added to this process's environment
	Out      io.Writer
	// Events, when set, receives every raw JSON line go test prints (the
	// battery's full log, for later reports).
	Events io.Writer
	// Heartbeat is how often to say what is still running when nothing
	// finished; default 30s.
	Heartbeat time.Duration
	// Timeout is go test's -timeout, which bounds each test binary; zero
	// reads CONTESTED_TEST_TIMEOUT (TimeoutFromEnv), negative means none.
	// A -timeout among Args comes later and wins.
	Timeout time.Duration
	// Binaries, when set, holds the command's test binaries: a package is
	// built once and run again without go test (see [Binaries]).
	Binaries *Binaries
	// Admit, when set, decides whether one more package may start while
	// running run (with test binaries: go test itself starts its -p):
	// what the machine can give, rather than a fixed -p, which then is
	// only the ceiling (capacity.Admission).
	Admit func(running int) bool
}

// DefaultTimeout is the battery's go test -timeout when
// CONTESTED_TEST_TIMEOUT (envvar.TestTimeout) is unset: generous for a
// whole module, unlike go test's own 10m.
const DefaultTimeout = 30 * time.Minute

// ErrBadTimeout: CONTESTED_TEST_TIMEOUT is set to something that is not a
// duration.
var ErrBadTimeout = errors.New(envvar.TestTimeout + " is not a duration")

// TimeoutFromEnv returns the battery's go test -timeout:
// CONTESTED_TEST_TIMEOUT when set (0: none), else DefaultTimeout. Commands
// check it before they start anything.
func TimeoutFromEnv() (time.Duration, error) {
	v := strings.TrimSpace(os.Getenv(envvar.TestTimeout))
	if v == "" {
		return DefaultTimeout, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%w: %q; set a duration such as 30m or 1h30m (0: no timeout)", ErrBadTimeout, v)
	}
	return d, nil
}

// StopAfter is how long a cancelled battery's process group has between
// SIGINT (test binaries end, go test reports) and SIGKILL. It fits, with
// the layer's teardown, in interrupt.Grace.
const StopAfter = 3 * time.Second

// ErrNotRun: go test could not be started or listed nothing to run.
var ErrNotRun = errors.New("battery did not run")

// Run runs go test -json -count=1 over the patterns and returns the result.
// A battery with failures is not an error; an error means it did not run
// (or was cancelled). go test runs in a process group of its own with its
// test binaries and their workers: on cancellation the whole group gets
// SIGINT, then SIGKILL after StopAfter, and a forced exit of this process
// kills it too (internal/interrupt). With opts.Binaries, the packages'
// test binaries are built once for the command and run as go test runs
// them (see [Binaries]).
func Run(ctx context.Context, opts Options) (*Result, error) {
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	if len(opts.Patterns) == 0 {
		opts.Patterns = []string{"./..."}
	}
	if opts.Heartbeat == 0 {
		opts.Heartbeat = 30 * time.Second
	}
	env := append(os.Environ(), opts.Env...)
	flags, err := goTestFlags(opts)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotRun, err)
	}
	if opts.Binaries != nil {
		res, err := runPrebuilt(ctx, opts, env, flags)
		if !errors.Is(err, errNoPrebuilt) {
			return res, err
		}
	}
	args := append(append([]string{"test"}, flags...), opts.Patterns...)
	// The packages are counted (for the progress lines) while go test
	// starts building, not before it.
	type count struct {
		dirs map[string]string
		err  error
	}
	counted := make(chan count, 1)
	go func() {
		dirs, err := listPackages(ctx, opts.Dir, env, opts.Patterns)
		counted <- count{dirs, err}
	}()
	res := &Result{Started: time.Now()}
	var f *follower
	stopBeat := func() {}
	read := false
	started := func() error {
		c := <-counted
		read = true
		if c.err != nil {
			return fmt.Errorf("%w: %v", ErrNotRun, c.err)
		}
		f = newFollower(opts.Out, c.dirs)
		fmt.Fprintf(opts.Out, "battery: go %s (%d packages)\n", strings.Join(args, " "), len(c.dirs))
		stopBeat = f.heartbeat(opts.Heartbeat)
		return nil
	}
	run, err := streamGoTest(ctx, opts.Dir, env, args, started, func(line []byte) { follow(f, opts.Events, nil, line) })
	stopBeat()
	if f == nil {
		if !read {
			<-counted
		}
		return nil, err
	}
	res.Elapsed = time.Since(res.Started)
	res.Packages, res.Tests = f.results()
	if err != nil {
		return res, err
	}
	res.ExitCode = run.exitCode
	if res.ExitCode != 0 && len(res.Failed()) == 0 && len(res.FailedPackages()) == 0 {
		// go test failed before any package reported: flags, patterns, go.mod.
		msg := strings.TrimSpace(secret.ScrubString(run.stderr) + f.strayOutput())
		res.Packages = append(res.Packages, Package{Name: "(go test)", Action: "fail", Output: msg})
	}
	f.summarize(res)
	return res, nil
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

// goTestRun is how one go test process ended.
type goTestRun struct {
	exitCode int
	stderr   string
}

// streamGoTest runs go with args in a process group of its own, calls
// started once it runs (an error from it stops go), and hands each line
// of its standard output to line. A non-zero exit is not an error; a
// cancellation is.
func streamGoTest(ctx context.Context, dir string, env, args []string, started func() error, line func([]byte)) (goTestRun, error) {
	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	cmd := interrupt.Command(runCtx, StopAfter, "go", args...)
	cmd.Dir = dir
	cmd.Env = env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return goTestRun{}, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	untrack, err := interrupt.Start(cmd)
	if err != nil {
		return goTestRun{}, fmt.Errorf("%w: start go test: %v", ErrNotRun, err)
	}
	defer untrack()
	if err := started(); err != nil {
		cancelRun()
		cmd.Wait()
		return goTestRun{}, err
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line(sc.Bytes())
	}
	waitErr := cmd.Wait()
	var exit *exec.ExitError
	switch {
	case waitErr == nil:
		return goTestRun{stderr: stderr.String()}, nil
	case ctx.Err() != nil:
		return goTestRun{}, fmt.Errorf("battery cancelled: %w", ctx.Err())
	case errors.As(waitErr, &exit):
		return goTestRun{exitCode: exit.ExitCode(), stderr: stderr.String()}, nil
	default:
		return goTestRun{}, fmt.Errorf("go test: %w", waitErr)
	}
}

// goTestFlags are the battery's go test flags: -json, -count=1, the
// timeout, the caller's flags (a -timeout among them wins).
func goTestFlags(opts Options) ([]string, error) {
	timeout := opts.Timeout
	if timeout == 0 {
		var err error
		if timeout, err = TimeoutFromEnv(); err != nil {
			return nil, err
		}
	}
	flags := []string{"-json", "-count=1", "-timeout=" + max(timeout, 0).String()}
	return append(flags, opts.Args...), nil
}

// listPackages lists the packages the patterns name: each one's directory
// by import path (a directory, unlike an import path, has no spaces
// before it on go list's line).
func listPackages(ctx context.Context, dir string, env []string, patterns []string) (map[string]string, error) {
	out, err := goOutput(ctx, dir, env, append([]string{"list", "-e", "-f", "{{.ImportPath}}\t{{.Dir}}"}, patterns...)...)
	if err != nil {
		return nil, err
	}
	dirs := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if path, d, ok := strings.Cut(l, "\t"); ok {
			dirs[path] = d
		}
	}
	return dirs, nil
}

// goOutput runs go with args in dir and returns what it printed on
// standard output; a failure says what go printed on standard error,
// scrubbed.
func goOutput(ctx context.Context, dir string, env []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir, cmd.Env = dir, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(secret.ScrubString(stderr.String())))
	}
	return out, nil
}

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
	strays   strings.Builder
	last     time.Time
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
			Cause: "the test binary exited while it ran: a panic outside the test's goroutine, os.Exit or a crash"}
		t.Failure = failureText(f.failureBuf(k).String(), t.Output+p.Output, &f.sources, f.dirs[pkg])
		if tp != nil {
			t.Timeout = tp.after
			t.Cause = "timed out: still running when go test's -timeout of " + tp.after + " ended the test binary"
			t.Failure = t.Cause // the panic go test printed is the timeout's, not the test's
		}
		delete(f.output, k)
		f.tests[k] = t
		f.failures++
		fmt.Fprintf(f.out, "battery:   FAIL %s %s (%s): %s\n", terminal.Escape(short(pkg)), terminal.Escape(name), t.Elapsed.Round(10*time.Millisecond), terminal.Escape(t.Cause))
	}
	if tp != nil {
		p.Timeout = tp.after
		p.Running = tp.leaves()
	}
	delete(f.timeouts, p.Name)
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
	var ts []Test
	for _, t := range f.tests {
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
