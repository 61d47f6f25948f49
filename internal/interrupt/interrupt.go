// Package interrupt is how a contested command stops when asked to. The
// first SIGINT, SIGTERM or SIGHUP cancels every context made by Context, so
// that the command tears down what it started and returns. A second SIGINT
// or SIGTERM, or a teardown that outlasts the grace period, ends the
// process at once (exit 1), after killing the process groups of the
// children it tracks: a hung read or a stuck teardown never keeps a
// stopped command alive.
//
// SIGHUP never forces: it is what a worker gets when its supervisor dies
// (see internal/supervise), which can come right after the supervisor
// relayed the first signal, and must not cut that teardown short. Nor
// does a repeat within Repeat of the first: one request delivered twice
// (GNU timeout signals its child, then its process group).
package interrupt

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// Grace is how long a stopped command may take to tear down before the
// process ends anyway.
const Grace = 10 * time.Second

// Repeat is how close after the first signal a second one is taken for
// the same request delivered twice.
const Repeat = 250 * time.Millisecond

// ExitForced is the exit code of a forced exit: 1, red or refused (DESIGN
// §4.1): the run did not finish, and nothing about it is green.
const ExitForced = 1

var (
	mu       sync.Mutex
	started  bool
	first    os.Signal
	firstAt  time.Time
	nextID   int
	cancels            = map[int]context.CancelFunc{}
	groups             = map[int]int{} // pgid → trackers
	grace              = Grace
	exitFunc           = os.Exit
	stderr   io.Writer = os.Stderr
	// hangup is set in a worker: SIGHUP is watched even when it was
	// ignored at start.
	hangup bool
	// onForce are called, in order, before a forced exit.
	onForce []func(why string)
)

// OnForce registers f to be called before a forced exit, with why the
// process is forced (a second signal, a teardown past the grace period),
// so that the process can still say how it ended (a worker reports its
// exit code to its supervisor, a CI summary says it was stopped). f must
// be quick: the process exits when it returns.
func OnForce(f func(why string)) {
	mu.Lock()
	defer mu.Unlock()
	onForce = append(onForce, f)
}

// Context returns a copy of parent that is cancelled on the first signal
// (at once, if one was already received), and a function that releases
// it. The first call installs the process's signal handling, and keeps
// the process alive when its stdout or stderr is a broken pipe
// (SurviveBrokenPipe): the teardown a signal starts must not die of the
// first line it prints.
func Context(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	mu.Lock()
	defer mu.Unlock()
	if !started {
		started = true
		SurviveBrokenPipe()
		ch := make(chan os.Signal, 8)
		signal.Notify(ch, signals(hangup)...)
		go watch(ch)
	}
	if first != nil {
		cancel()
		return ctx, cancel
	}
	id := nextID
	nextID++
	cancels[id] = cancel
	return ctx, func() {
		mu.Lock()
		delete(cancels, id)
		mu.Unlock()
		cancel()
	}
}

// Signals are the signals a command stops on: SIGINT, SIGTERM and SIGHUP,
// less those this process was started with ignored (nohup ignores SIGHUP,
// a shell's background job SIGINT): handling one would undo that choice.
// After StopOnHangup, SIGHUP is among them whatever its disposition.
func Signals() []os.Signal {
	mu.Lock()
	defer mu.Unlock()
	return signals(hangup)
}

// signals is Signals for a caller that holds mu.
func signals(always bool) []os.Signal {
	var out []os.Signal
	for _, s := range []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		if !signal.Ignored(s) || (always && s == syscall.SIGHUP) {
			out = append(out, s)
		}
	}
	return out
}

// StopOnHangup makes SIGHUP a request to stop even when the process was
// started with it ignored. A supervised worker calls it before Context: it
// runs in a process group of its own, so no terminal's hangup reaches it,
// and its SIGHUP is the parent-death signal, its supervisor gone. Under
// nohup, the ignored disposition it inherits would otherwise leave it
// running with nobody to stop it.
func StopOnHangup() {
	mu.Lock()
	defer mu.Unlock()
	hangup = true
}

// Received returns the first signal the process received, nil if none.
func Received() os.Signal {
	mu.Lock()
	defer mu.Unlock()
	return first
}

// ReceivedAt returns the first signal the process received and when it
// came, nil and the zero time if none: what tells a child stopped by this
// run's interruption from one that ended on its own before it.
func ReceivedAt() (os.Signal, time.Time) {
	mu.Lock()
	defer mu.Unlock()
	return first, firstAt
}

// Track registers the process group pgid, to be killed if the process is
// forced to exit; the returned function forgets it.
func Track(pgid int) (untrack func()) {
	mu.Lock()
	groups[pgid]++
	mu.Unlock()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		if groups[pgid]--; groups[pgid] <= 0 {
			delete(groups, pgid)
		}
	}
}

func tracked(pgid int) bool {
	mu.Lock()
	defer mu.Unlock()
	return groups[pgid] > 0
}

// Command returns a command that runs in a process group of its own, so
// that a terminal's Ctrl-C reaches this process only and the command's
// whole tree (go test, its test binaries, their workers) is stopped
// together: when ctx ends, the group gets SIGINT, and SIGKILL if it is
// still there after stopAfter. Start it with Start, which tracks the group
// for a forced exit.
func Command(ctx context.Context, stopAfter time.Duration, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		pgid := cmd.Process.Pid
		err := syscall.Kill(-pgid, syscall.SIGINT)
		time.AfterFunc(stopAfter, func() {
			// Only while Start's tracking lasts: once Wait has returned
			// and the caller untracked, the group id may be reused.
			if tracked(pgid) {
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
			}
		})
		return err
	}
	// Wait returns once the group leader is gone and stopAfter more has
	// passed for its output pipes; the group's SIGKILL comes first.
	cmd.WaitDelay = stopAfter + time.Second
	return cmd
}

// Start starts a command made by Command and tracks its process group
// until the returned function is called (after Wait).
func Start(cmd *exec.Cmd) (untrack func(), err error) {
	if err := cmd.Start(); err != nil {
		return func() {}, err
	}
	return Track(cmd.Process.Pid), nil
}

func watch(ch <-chan os.Signal) {
	var deadline <-chan time.Time
	var at time.Time
	for {
		select {
		case sig := <-ch:
			mu.Lock()
			isFirst := first == nil
			if isFirst {
				first, firstAt = sig, time.Now()
			}
			fs := make([]context.CancelFunc, 0, len(cancels))
			for _, c := range cancels {
				fs = append(fs, c)
			}
			mu.Unlock()
			switch {
			case isFirst:
				at = time.Now()
				fmt.Fprintf(stderr, "\ncontested: %s: stopping; tearing down what this run started (at most %s; a second Ctrl-C or SIGTERM ends it at once)\n", Name(sig), grace)
				for _, c := range fs {
					c()
				}
				deadline = time.After(grace)
			case sig == syscall.SIGHUP, time.Since(at) < Repeat:
				// The supervisor is gone, or the first request again:
				// the teardown goes on.
			default:
				force(fmt.Sprintf("a second signal (%s)", Name(sig)))
			}
		case <-deadline:
			force(fmt.Sprintf("the teardown did not finish within %s", grace))
		}
	}
}

// force kills the tracked process groups and exits.
func force(why string) {
	mu.Lock()
	var pgids []int
	for g := range groups {
		pgids = append(pgids, g)
	}
	mu.Unlock()
	for _, g := range pgids {
		_ = syscall.Kill(-g, syscall.SIGKILL)
	}
	fmt.Fprintf(stderr, "contested: %s: exiting now (exit %d); what is left is reaped by the next run's sweep (go tool mage sweep)\n", why, ExitForced)
	mu.Lock()
	hooks := append([]func(string){}, onForce...)
	mu.Unlock()
	for _, f := range hooks {
		f(why)
	}
	exitFunc(ExitForced)
}

// Name names a signal the way people type it: SIGINT, SIGTERM, SIGHUP.
func Name(sig os.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGKILL:
		return "SIGKILL"
	case nil:
		return ""
	default:
		return sig.String()
	}
}
