package battery

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/contested/contested/internal/interrupt"
)

// runPrebuilt is Run through opts.Binaries: each package's test binary
// built once for the command and run as go test runs it, its packages
// run -p at a time (GOMAXPROCS without one), as go test runs them. It returns
// errNoPrebuilt when the run must go through go test instead.
func runPrebuilt(ctx context.Context, opts Options, env, flags []string) (*Result, error) {
	inv, ok := split(flags, lastValue(env, "GOFLAGS"))
	if !ok {
		return nil, errNoPrebuilt
	}
	pkgs, ok, err := list(ctx, opts.Dir, env, inv.build, opts.Patterns)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotRun, err)
	}
	if !ok {
		return nil, errNoPrebuilt
	}
	tools, err := opts.Binaries.toolchainFor(ctx, opts.Dir, env)
	if err != nil {
		fmt.Fprintf(opts.Out, "battery: running go test itself: %v\n", err)
		return nil, errNoPrebuilt
	}
	args := append(append([]string{"test"}, flags...), opts.Patterns...)
	fmt.Fprintf(opts.Out, "battery: go %s (%s; each test binary built once for this command)\n", strings.Join(args, " "), plural(len(pkgs), "package", "packages"))
	res := &Result{Started: time.Now()}
	dirs := make(map[string]string, len(pkgs))
	for _, p := range pkgs {
		dirs[p.ImportPath] = p.Dir
	}
	f := newFollower(opts.Out, dirs)
	f.stopped = stoppedBy(ctx)
	stopBeat := f.heartbeat(opts.Heartbeat)
	var events sync.Mutex
	line := func(b []byte) { follow(f, opts.Events, &events, b) }

	var mu sync.Mutex
	res.TestLogs = map[string]string{}
	failed := false
	var firstErr error
	note := func(passed bool, err error) {
		mu.Lock()
		defer mu.Unlock()
		failed = failed || !passed
		if firstErr == nil {
			firstErr = err
		}
	}
	n := inv.p
	if n == 0 {
		n = runtime.GOMAXPROCS(0)
	}
	slots := newSlots(n, opts.Admit)
	var wg sync.WaitGroup
	for _, p := range pkgs {
		if !p.hasTests() {
			noTestFiles(p.ImportPath, line)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !slots.acquire(ctx) {
				return
			}
			defer slots.release()
			mu.Lock()
			res.Ran++
			mu.Unlock()
			viaGoTest := func() {
				// go test builds it again and reports the failure its way.
				one := append(append([]string{"test"}, flags...), p.ImportPath)
				run, err := streamGoTest(ctx, opts.Dir, env, one, func() error { return nil }, line)
				note(err == nil && run.exitCode == 0, err)
			}
			for attempt := 0; ; attempt++ {
				path, digest, err := opts.Binaries.binaryFor(ctx, opts.Dir, env, inv.build, p.ImportPath, opts.Out)
				if err != nil {
					if ctx.Err() == nil {
						viaGoTest()
					}
					return
				}
				testArgs, log := inv.test, ""
				if opts.TestLogs != "" {
					log = filepath.Join(opts.TestLogs, logName(p.ImportPath))
					testArgs = append(slices.Clip(testArgs), "-test.testlogfile="+log)
				}
				passed, err := runBinary(ctx, p, path, digest, testArgs, env, tools, line)
				if !errors.Is(err, errNotAsBuilt) {
					if log != "" {
						mu.Lock()
						res.TestLogs[p.ImportPath] = log
						mu.Unlock()
					}
					note(passed, err)
					return
				}
				// Never run: built again once, else go test runs it.
				opts.Binaries.discard(opts.Dir, env, inv.build, p.ImportPath)
				if attempt > 0 {
					fmt.Fprintf(opts.Out, "battery: %s: %v; it is never run, and %s runs through go test\n", path, err, short(p.ImportPath))
					viaGoTest()
					return
				}
				fmt.Fprintf(opts.Out, "battery: %s: %v; it is never run, and %s's test binary is built again\n", path, err, short(p.ImportPath))
			}
		}()
	}
	wg.Wait()
	stopBeat()
	res.Elapsed = time.Since(res.Started)
	res.Ceiling, res.MostAtOnce = n, slots.most
	res.Packages, res.Tests = f.results()
	if ctx.Err() != nil {
		return res, fmt.Errorf("battery cancelled: %w", ctx.Err())
	}
	if firstErr != nil {
		return res, firstErr
	}
	if failed {
		res.ExitCode = 1
	}
	f.summarize(res)
	return res, nil
}

// slots lets packages start: at most ceiling at once, and, with admit, one
// more only when admit says the machine can give it (never fewer than one
// running), at most one every spacing so that a package's own load shows
// in what admit reads before the next starts.
type slots struct {
	mu      sync.Mutex
	ceiling int
	admit   func(running int) bool
	running int
	most    int
	last    time.Time
	freed   chan struct{} // closed (and replaced) when a package ends
}

// spacing is the least time between two admissions of packages.
const spacing = 500 * time.Millisecond

func newSlots(ceiling int, admit func(int) bool) *slots {
	return &slots{ceiling: max(ceiling, 1), admit: admit, freed: make(chan struct{})}
}

// acquire waits for a slot; false when ctx ends first. A slot freed wakes
// it at once; what admit reads is asked again every 100 ms.
func (s *slots) acquire(ctx context.Context) bool {
	for {
		ok, freed := s.try()
		if ok {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-freed:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (s *slots) try() (bool, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running >= s.ceiling {
		return false, s.freed
	}
	if s.admit != nil && s.running > 0 && (time.Since(s.last) < spacing || !s.admit(s.running)) {
		return false, s.freed
	}
	s.running++
	s.most = max(s.most, s.running)
	s.last = time.Now()
	return true, s.freed
}

func (s *slots) release() {
	s.mu.Lock()
	s.running--
	close(s.freed)
	s.freed = make(chan struct{})
	s.mu.Unlock()
}

// logName is the file of a package's test log: named by a hash of its
// import path, which may hold any character.
func logName(importPath string) string {
	h := sha256.Sum256([]byte(importPath))
	return hex.EncodeToString(h[:12]) + ".log"
}

// noTestFiles is what go test -json prints for a package without tests.
func noTestFiles(pkg string, line func([]byte)) {
	for _, ev := range []Event{
		{Action: "start", Package: pkg},
		{Action: "output", Package: pkg, Output: "?   \t" + pkg + "\t[no test files]\n"},
		{Action: "skip", Package: pkg},
	} {
		ev.Time = time.Now()
		b, _ := json.Marshal(ev)
		line(b)
	}
}

// noTestsToRun is what a test binary prints when -run selects nothing.
var noTestsToRun = []byte("\ntesting: warning: no tests to run\n")

// runBinary runs one package's test binary the way go test runs it: in the
// package's directory, with GOROOT/bin first on PATH and PWD set, standard
// output and error both into test2json, then go test's own last line ("ok
// pkg 0.123s", or "FAIL pkg 0.123s" after the exit status when the binary
// printed nothing or was killed). Like go test, it kills a binary that
// outlives its own -test.timeout by a minute. It reports whether the
// package passed.
//
// It runs only the content that was built: just before it starts, it
// opens path, hashes it through that descriptor and compares with digest,
// then executes the descriptor itself (/proc/self/fd/N), so a file renamed
// into path meanwhile is never run. A content that differs is
// errNotAsBuilt, before anything runs. Once the binary runs, the kernel
// refuses every write to it (ETXTBSY), so a second hash then is the
// content that runs: one rewritten in the moment between the check and
// the start is stopped at once and the package fails, saying why.
func runBinary(ctx context.Context, p listed, path, digest string, testArgs, env []string, tools *toolchain, line func([]byte)) (bool, error) {
	exe, sum, err := openDigest(path)
	if err != nil {
		return false, fmt.Errorf("%w: %v", errNotAsBuilt, err)
	}
	defer exe.Close()
	if sum != digest {
		return false, fmt.Errorf("%w (SHA-256 %.12s…, built %.12s…: rewritten since it was built)", errNotAsBuilt, sum, digest)
	}
	conv := exec.Command(tools.test2json, "-t", "-p", p.ImportPath)
	in, err := conv.StdinPipe()
	if err != nil {
		return false, err
	}
	out, err := conv.StdoutPipe()
	if err != nil {
		return false, err
	}
	if err := conv.Start(); err != nil {
		return false, fmt.Errorf("start test2json: %w", err)
	}
	converted := make(chan struct{})
	ended := false // test2json printed the package's last event
	go func() {
		defer close(converted)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			ended = ended || packageEnd(sc.Bytes())
			line(sc.Bytes())
		}
		_, _ = io.Copy(io.Discard, out)
	}()

	runCtx := ctx
	timeout := lastTimeout(testArgs)
	if timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, timeout+time.Minute)
		defer cancel()
	}
	args := append(append([]string{"-test.paniconexit0"}, testArgs...), "-test.v=test2json")
	cmd := interrupt.Command(runCtx, StopAfter, execPath(exe), args...)
	cmd.Args[0] = path // what the test sees as its name, and re-executes
	cmd.Dir = p.Dir
	cmd.Env = append(append(env[:len(env):len(env)], "PATH="+tools.gorootBin+string(os.PathListSeparator)+lastValue(env, "PATH")), "PWD="+p.Dir)
	w := &tail{w: in}
	cmd.Stdout, cmd.Stderr = w, w
	start := time.Now()
	untrack, err := interrupt.Start(cmd)
	if err == nil {
		if ran, herr := digestOf(exe); herr != nil || ran != digest {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			fmt.Fprintf(in, "battery: %s was rewritten between its check and its start (SHA-256 %.12s…, built %.12s…): stopped\n", path, ran, digest)
		}
		err = cmd.Wait()
		untrack()
	}
	took := fmt.Sprintf("%.3fs", time.Since(start).Seconds())
	if err == nil {
		norun := ""
		if w.noTests {
			norun = " [no tests to run]"
		}
		w.endLine()
		fmt.Fprintf(in, "ok  \t%s\t%s%s\n", p.ImportPath, took, norun)
	} else {
		if ctx.Err() == nil && runCtx.Err() != nil {
			fmt.Fprintf(in, "*** Test killed: ran too long (%v).\n", timeout+time.Minute)
		}
		var exit *exec.ExitError
		if !errors.As(err, &exit) || !exit.Exited() || w.n == 0 {
			fmt.Fprintf(in, "%s\n", err)
		} else {
			w.endLine()
		}
		// The frame marker makes test2json take the line as go test's own.
		fmt.Fprintf(in, "\x16FAIL\t%s\t%s\n", p.ImportPath, took)
	}
	in.Close()
	<-converted
	convErr := conv.Wait()
	if !ended {
		// Reading a stream, test2json ends the package on the binary's own
		// PASS or FAIL line, or go test's FAIL line; a binary that exited 0
		// without a word (a TestMain that returns before m.Run) has neither,
		// and go test, which tells test2json how the binary exited, passes it.
		action := "pass"
		if err != nil {
			action = "fail"
		}
		dt := time.Since(start).Round(time.Millisecond).Seconds()
		b, _ := json.Marshal(struct {
			Time    time.Time
			Action  string
			Package string
			Elapsed float64
		}{time.Now(), action, p.ImportPath, dt})
		line(b)
	}
	if ctx.Err() != nil {
		return false, nil
	}
	var exit *exec.ExitError
	if convErr != nil && !errors.As(convErr, &exit) {
		return false, fmt.Errorf("test2json: %w", convErr)
	}
	return err == nil, nil
}

// packageEnd reports whether a test2json line is the package's last event:
// pass, fail or skip with no test named. (In an output event those words
// are inside an escaped string, so they never match.)
func packageEnd(line []byte) bool {
	if bytes.Contains(line, []byte(`"Test":`)) {
		return false
	}
	for _, a := range []string{`"Action":"pass"`, `"Action":"fail"`, `"Action":"skip"`} {
		if bytes.Contains(line, []byte(a)) {
			return true
		}
	}
	return false
}

// tail forwards a test binary's output and remembers what go test looks
// at afterwards: whether there was any, whether it ended a line, and
// whether the binary said it had no tests to run.
type tail struct {
	w       io.Writer
	n       int64
	last    byte
	window  []byte // the end of the output, as long as the marker
	noTests bool
}

func (t *tail) Write(b []byte) (int, error) {
	if len(b) > 0 {
		t.n += int64(len(b))
		t.last = b[len(b)-1]
		if !t.noTests {
			seen := append(t.window, b...)
			// The marker may also open the output, without its newline.
			t.noTests = bytes.Contains(seen, noTestsToRun) || (t.n == int64(len(b)) && bytes.HasPrefix(b, noTestsToRun[1:]))
			if k := len(noTestsToRun) - 1; len(seen) > k {
				seen = seen[len(seen)-k:]
			}
			t.window = append(t.window[:0], seen...)
		}
	}
	return t.w.Write(b)
}

// endLine ends the output's last line, as go test does before its own.
func (t *tail) endLine() {
	if t.n > 0 && t.last != '\n' {
		t.w.Write([]byte("\n"))
	}
}

// lastTimeout is the -test.timeout the binary will use (the last one).
func lastTimeout(testArgs []string) time.Duration {
	var d time.Duration
	for _, a := range testArgs {
		if v, ok := strings.CutPrefix(a, "-test.timeout="); ok {
			d, _ = time.ParseDuration(v)
		}
	}
	return d
}

// lastValue is the value of name in env, the last one winning as it does
// for a child process.
func lastValue(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}
