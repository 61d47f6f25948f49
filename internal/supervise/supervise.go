// Package supervise runs a command in a worker process of its own and
// reports its end honestly.
//
// A Go program that crashes (an unrecovered panic in any goroutine, or a
// fatal runtime error such as running out of memory) exits with status 2,
// which contested's exit codes reserve for usage errors (docs/reference/targets.md). Only
// another process can tell the two apart, so each target runs in a worker:
// the same executable, started again with EnvWorker naming the target. The
// worker sends the runtime's crash report to the supervisor through a pipe
// (runtime/debug.SetCrashOutput); a worker that crashed, or that was
// killed by a signal it did not ask for (the kernel's out-of-memory killer
// sends SIGKILL), ends the supervisor with exit 1 and a line that says
// "internal error".
//
// Signals: the worker runs in a process group of its own, so a terminal's
// Ctrl-C reaches the supervisor only, which relays what it receives to the
// worker: the first SIGINT, SIGTERM or SIGHUP stops the worker (it tears
// down), a second SIGINT or SIGTERM forces it. (The worker never runs
// Mage's main, so Mage's own 5-second limit after Ctrl-C does not apply.) One request often
// arrives twice (GNU timeout signals its child and then its whole process
// group; the parent's death follows its own SIGTERM), so a repeat within
// Repeat of the previous one, and any SIGHUP after the first signal, count
// as the same request. A worker whose supervisor dies gets SIGHUP (Linux
// parent-death signal) and tears down too, even under nohup: a worker
// stops on SIGHUP whatever disposition it inherited.
package supervise

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contested/contested/internal/interrupt"
)

// EnvWorker is set in a worker's environment; its value is the target the
// worker runs. Worker removes it, so that the worker's own children (a
// nested go tool mage in an end-to-end test) are supervisors again.
const EnvWorker = "CONTESTED_WORKER"

// ExitInternal is the exit code of a crash: 1, with a message that says
// "internal error". 2 stays what it means: bad input.
const ExitInternal = 1

// Repeat is how close together two signals must come to be taken for one
// request delivered twice rather than a second request.
const Repeat = 250 * time.Millisecond

// The worker's file descriptors of the crash pipe and of the outcome pipe
// (ExtraFiles[0] and [1]).
const (
	crashFD   = 3
	outcomeFD = 4
)

// outcome is the worker's end of the outcome pipe; Report writes to it.
var (
	outcomeMu   sync.Mutex
	outcomeFile *os.File
)

// Worker reports whether this process is a worker and which target it
// runs. In a worker it also sends the runtime's crash report to the
// supervisor and takes EnvWorker out of the environment. Call it before
// anything else.
func Worker() (target string, ok bool) {
	target, ok = os.LookupEnv(EnvWorker)
	if !ok {
		return "", false
	}
	os.Unsetenv(EnvWorker)
	// Before anything is printed: a worker whose stdout is a pipe whose
	// reader is gone (tee, killed by the same Ctrl-C) must still tear down.
	interrupt.SurviveBrokenPipe()
	interrupt.StopOnHangup()
	if f := os.NewFile(crashFD, "crash"); f != nil {
		// SetCrashOutput keeps a close-on-exec duplicate; the inherited
		// descriptor is closed so that no child holds the pipe open.
		if err := debug.SetCrashOutput(f, debug.CrashOptions{}); err == nil {
			f.Close()
		}
	}
	syscall.CloseOnExec(outcomeFD)
	outcomeFile = os.NewFile(outcomeFD, "outcome")
	return target, true
}

// Report tells the supervisor the exit code the worker is about to exit
// with. A worker that exits without reporting (it crashed in a way the
// crash pipe did not catch, or the executable is not a contested worker at
// all) is an internal error to the supervisor.
func Report(code int) {
	outcomeMu.Lock()
	defer outcomeMu.Unlock()
	if outcomeFile != nil {
		fmt.Fprintf(outcomeFile, "exit %d\n", code)
		outcomeFile.Close()
		outcomeFile = nil
	}
}

// BlockOpened tells the supervisor that the worker's output opened a
// stop-commands block with token (terminal.Guard), BlockClosed that it
// ended it: a worker killed inside one would leave a CI runner deaf to
// every later command, the supervisor's own annotations among them, so
// the supervisor ends it. Outside a worker they do nothing.
func BlockOpened(token string) { tell("open " + token) }

// Summarized tells the supervisor that the worker wrote the CI's summary
// of its end (a verdict, or why it gave none), so that the supervisor
// writes none of its own.
func Summarized() { tell("summary") }

// BlockClosed: see BlockOpened.
func BlockClosed(token string) { tell("close " + token) }

// tell writes one line to the outcome pipe.
func tell(line string) {
	outcomeMu.Lock()
	defer outcomeMu.Unlock()
	if outcomeFile != nil {
		fmt.Fprintf(outcomeFile, "%s\n", line)
	}
}

// Options configures Run.
type Options struct {
	// Target names what the worker runs (EnvWorker's value, and messages).
	Target string
	// Argv is the worker's command line; Argv[0] is the executable.
	Argv []string
	// Env is added to this process's environment for the worker.
	Env []string
	// Stderr receives the supervisor's own messages; default os.Stderr.
	Stderr io.Writer
	// Stdout is the worker's standard output, where the supervisor ends a
	// stop-commands block the worker left open; default os.Stdout.
	Stdout io.Writer
	// Ended, when set, is called once the worker is gone with the exit
	// code Run returns, what the supervisor said about the worker's end
	// ("" when the worker ended on its own and reported it), and whether
	// the worker wrote the CI's summary itself (Summarized).
	Ended func(code int, why string, summarized bool)
	// ForceAfter is how long after relaying a second signal the
	// supervisor waits before killing the worker's group; default 3s.
	ForceAfter time.Duration
}

// Run starts the worker, relays signals to it, waits for it, and returns
// the exit code to exit with: the worker's own, or ExitInternal (with a
// message on Stderr) when it crashed or was killed. ctx ending (Mage's -t
// timeout) stops the worker like a first signal.
func Run(ctx context.Context, opts Options) int {
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	if opts.ForceAfter == 0 {
		opts.ForceAfter = 3 * time.Second
	}
	// The supervisor outlives its worker to say how it ended, and ends a
	// stop-commands block it left open: a broken stdout must not kill it
	// first (tee gone with the same Ctrl-C).
	interrupt.SurviveBrokenPipe()
	// Learn of our own parent's death (Mage killed by SIGTERM, which it
	// does not catch) as a signal to relay.
	_ = unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGHUP), 0, 0, 0)

	// Take SIGINT away from anyone else in this process (Mage's generated
	// main gives a target 5 seconds after Ctrl-C, then exits and would
	// leave the worker's teardown unfinished): the worker's grace governs.
	watched := interrupt.Signals()
	signal.Reset(os.Interrupt)
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, watched...)
	defer signal.Stop(sigs)

	// The parent-death signal follows the thread that started the child:
	// keep this goroutine on it until the worker is gone.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	w, err := start(opts)
	if err != nil {
		fmt.Fprintf(opts.Stderr, "contested: internal error: %v\n", err)
		return ExitInternal
	}
	killed := w.relay(ctx, sigs, opts.ForceAfter)
	told := <-w.reported
	if told.open != "" {
		// The worker ended inside a stop-commands block: end it, or
		// the runner reads no command of this step again.
		fmt.Fprintf(opts.Stdout, "\n::%s::\n", told.open)
	}
	code, why := outcome(opts, w.err, <-w.crash, told.exit, killed)
	if opts.Ended != nil {
		opts.Ended(code, why, told.summarized)
	}
	return code
}

// child is a started worker process: its pid, and what its crash and
// outcome pipes and its wait say once it is gone.
type child struct {
	pid      int
	crash    chan []byte
	reported chan told
	done     chan error
	err      error // the wait's, once done
}

// start starts the worker in a process group of its own, with the crash
// pipe (fd 3) and the outcome pipe (fd 4), and reads both as it runs.
func start(opts Options) (*child, error) {
	crashR, crashW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("make the crash pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		crashR.Close()
		crashW.Close()
		return nil, fmt.Errorf("make the outcome pipe: %w", err)
	}
	cmd := exec.Command(opts.Argv[0], opts.Argv[1:]...)
	cmd.Env = append(append(withoutTimeout(os.Environ()), opts.Env...), EnvWorker+"="+opts.Target)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{crashW, outW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGHUP}
	err = cmd.Start()
	crashW.Close()
	outW.Close()
	if err != nil {
		crashR.Close()
		outR.Close()
		return nil, fmt.Errorf("start the %s worker: %w", opts.Target, err)
	}
	w := &child{pid: cmd.Process.Pid, crash: make(chan []byte, 1), reported: make(chan told, 1), done: make(chan error, 1)}
	go func() { w.crash <- readCapped(crashR, 16<<10); crashR.Close() }()
	go func() { w.reported <- readTold(outR); outR.Close() }()
	go func() { w.done <- cmd.Wait() }()
	return w, nil
}

// relay relays signals to the worker until it is gone: each request to
// stop (a signal, or ctx ending) goes to the worker; forceAfter after a
// second one, SIGKILL goes to its whole group. It reports whether it had to
// kill.
func (w *child) relay(ctx context.Context, sigs <-chan os.Signal, forceAfter time.Duration) (killed bool) {
	signalled := 0
	var last time.Time
	var kill, hup <-chan time.Time
	relay := func(sig syscall.Signal) {
		signalled++
		last = time.Now()
		_ = syscall.Kill(w.pid, sig)
		if signalled >= 2 && kill == nil {
			kill = time.After(forceAfter)
		}
	}
	ctxDone := ctx.Done()
	for {
		select {
		case sig := <-sigs:
			switch {
			case signalled > 0 && (sig == syscall.SIGHUP || time.Since(last) < Repeat):
				// The same request again.
			case sig == syscall.SIGHUP:
				// Our parent died, most often of the SIGTERM that is on
				// its way to us too: relay that one if it comes soon, so
				// the worker names the signal the user sent.
				if hup == nil {
					hup = time.After(Repeat / 2)
				}
			default:
				hup = nil
				relay(sig.(syscall.Signal))
			}
		case <-hup:
			hup = nil
			if signalled == 0 {
				relay(syscall.SIGHUP)
			}
		case <-ctxDone:
			ctxDone = nil
			if signalled == 0 {
				signalled = 1
				_ = syscall.Kill(w.pid, syscall.SIGTERM)
			}
		case <-kill:
			killed = true
			_ = syscall.Kill(-w.pid, syscall.SIGKILL)
		case w.err = <-w.done:
			return killed
		}
	}
}

// outcome maps the worker's end to an exit code, and says why when the
// worker did not end on its own terms (the message it printed).
func outcome(opts Options, waitErr error, crash, reported []byte, killed bool) (int, string) {
	say := func(format string, a ...any) (int, string) {
		msg := fmt.Sprintf(format, a...)
		fmt.Fprintf(opts.Stderr, "contested: %s\n", msg)
		return ExitInternal, msg
	}
	if len(bytes.TrimSpace(crash)) > 0 {
		return say("internal error: the %s target crashed (%s); exit %d, not 2, which means bad input. This is a bug in contested: please report it with the output above.",
			opts.Target, crashLine(crash), ExitInternal)
	}
	code := 0
	var exit *exec.ExitError
	switch {
	case waitErr == nil:
	case errors.As(waitErr, &exit):
		code = exit.ExitCode()
	default:
		return say("internal error: wait for the %s worker: %v", opts.Target, waitErr)
	}
	if ws, ok := waitStatus(exit); ok && ws.Signaled() {
		if killed {
			return say("the %s target did not stop after a second signal and was killed", opts.Target)
		}
		return say("internal error: the %s target was killed by %s (the kernel's out-of-memory killer sends SIGKILL); exit %d", opts.Target, unix.SignalName(ws.Signal()), ExitInternal)
	}
	if want := fmt.Sprintf("exit %d\n", code); string(reported) != want {
		return say("internal error: the %s worker exited %d without reporting that outcome (reported %q); exit %d", opts.Target, code, strings.TrimSpace(string(reported)), ExitInternal)
	}
	return code, ""
}

func waitStatus(exit *exec.ExitError) (syscall.WaitStatus, bool) {
	if exit == nil {
		return 0, false
	}
	ws, ok := exit.Sys().(syscall.WaitStatus)
	return ws, ok
}

// withoutTimeout drops MAGEFILE_TIMEOUT: the supervisor's context carries
// Mage's -t timeout and stops the worker with a signal, so that it tears
// down; Mage in the worker would abandon the target at once.
func withoutTimeout(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "MAGEFILE_TIMEOUT=") {
			out = append(out, kv)
		}
	}
	return out
}

// told is what a worker told its supervisor through the outcome pipe: the
// exit line it reported ("exit 1\n"), and the token of a stop-commands
// block it opened and did not close.
type told struct {
	exit       []byte
	open       string
	summarized bool
}

// readTold reads the outcome pipe to its end: lines "open TOKEN" and
// "close TOKEN" (BlockOpened, BlockClosed) and the last "exit N" (Report).
// A line longer than a token's is not the worker's and is dropped.
func readTold(r io.Reader) told {
	var t told
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 256), 256)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "open "):
			t.open = strings.TrimPrefix(line, "open ")
		case strings.HasPrefix(line, "close ") && strings.TrimPrefix(line, "close ") == t.open:
			t.open = ""
		case line == "summary":
			t.summarized = true
		default:
			t.exit = append([]byte(line), '\n')
		}
	}
	_, _ = io.Copy(io.Discard, r)
	return t
}

// readCapped reads r to its end, keeping at most n bytes.
func readCapped(r io.Reader, n int64) []byte {
	var b bytes.Buffer
	_, _ = io.Copy(&b, io.LimitReader(r, n))
	_, _ = io.Copy(io.Discard, r)
	return b.Bytes()
}

// crashLine picks the line of a crash report that says what happened:
// "panic: …" or "fatal error: …", else what kind of crash it was.
func crashLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") {
			return strings.TrimSpace(l)
		}
	}
	for _, l := range lines {
		// A throw's report starts at its goroutine; its "fatal error:"
		// line (out of memory, a concurrent map write) went to stderr.
		if strings.HasPrefix(l, "runtime.throw(") {
			return "a fatal runtime error; its \"fatal error:\" line is above"
		}
	}
	return strings.TrimSpace(lines[0])
}
