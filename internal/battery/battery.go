// Package battery runs the integration battery (go test -json over the
// module) and follows it: progress as packages finish, failures as they
// happen, and a result that says which tests failed and what they printed.
package battery

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/interrupt"
	"github.com/contested/contested/internal/secret"
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
	// Interrupted names what stopped the run while the test ran ("SIGINT",
	// or the run's own cancellation) when the runner knows it stopped it:
	// then its test binary was stopped too, which is not a crash of the
	// code under test, and the test's outcome is unconfirmed.
	Interrupted string `json:"interrupted,omitempty"`
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
	// Interrupted is Test.Interrupted for a package that failed while the
	// run was being stopped.
	Interrupted string `json:"interrupted,omitempty"`
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
	// TestLogs are, by import path, the test logs (-test.testlogfile) of
	// the packages whose test binary ran with one (Options.TestLogs): what
	// each package's tests touched.
	TestLogs map[string]string `json:"-"`
	// Ceiling is the most packages that might run at once (-p), and
	// MostAtOnce how many did at most: fewer when the machine had no CPU
	// to give more (Options.Admit). Ran is how many packages' test
	// binaries ran (packages without tests run none).
	Ceiling    int `json:"ceiling,omitempty"`
	MostAtOnce int `json:"most_at_once,omitempty"`
	Ran        int `json:"packages_ran,omitempty"`
}

// AtOnce says how many packages ran and how many at once, for people:
// "3 packages ran, at most 2 at once (-p 4)"; empty when at most one ran,
// where there is nothing to say, or the battery did not count them (go
// test ran the packages itself).
func (r *Result) AtOnce() string {
	if r == nil || r.Ran <= 1 || r.MostAtOnce == 0 {
		return ""
	}
	return fmt.Sprintf("%d packages ran, at most %d at once (-p %d)", r.Ran, r.MostAtOnce, r.Ceiling)
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
// Tally says what the result counts, each count with its unit: "12
// tests (and 30 subtests) in 5 packages". Tests are top-level tests that
// ran (skipped ones are not counted), subtests the rest that ran, and
// packages those that ran at least one test: a go test package is not a
// test, and a subtest is not a test of its own.
func (r *Result) Tally() string {
	tests, subtests := 0, 0
	pkgs := map[string]bool{}
	for _, t := range r.Tests {
		if t.Action == "skip" {
			continue
		}
		pkgs[t.Package] = true
		if strings.Contains(t.Name, "/") {
			subtests++
		} else {
			tests++
		}
	}
	s := plural(tests, "test", "tests")
	if subtests > 0 {
		s += " (and " + plural(subtests, "subtest", "subtests") + ")"
	}
	return s + " in " + plural(len(pkgs), "package", "packages")
}

// plural is n with its unit, singular or plural.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

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
	// TestLogs, when set, is a private directory where each package's test
	// binary writes the testing package's log of what its tests touched
	// (-test.testlogfile; see package touched). Only a binary run through
	// Binaries has one: a package go test runs itself has none.
	TestLogs string
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
		f.stopped = stoppedBy(ctx)
		fmt.Fprintf(opts.Out, "battery: go %s (%s)\n", strings.Join(args, " "), plural(len(c.dirs), "package", "packages"))
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
