// Package command implements the project's commands (fault-preflight,
// validate, program-gate, contested, arbitrate, cluster-tests, images,
// sweep, bench): each is one function that a Mage target calls, writing
// human-readable progress to an io.Writer and returning an error that
// ExitCode maps to the process exit code.
//
// A Mage target runs its command in a worker process (Supervise and
// Serve, see internal/supervise), so that a crash is reported as an
// internal error (exit 1) rather than Go's exit 2, and so that SIGINT and
// SIGTERM reach the command the same way whether Mage was started by go
// tool mage, an installed mage, or a CI runner: the first stops the
// command, which tears down what it started (internal/interrupt); a
// second, or a teardown longer than interrupt.Grace, ends it at once.
package command

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/faultlayer"
	"github.com/contested/contested/internal/faultlayer/noise"
	"github.com/contested/contested/internal/images"
	"github.com/contested/contested/internal/interrupt"
	"github.com/contested/contested/internal/registry"
	"github.com/contested/contested/internal/runenv"
	"github.com/contested/contested/internal/secret"
	seedpkg "github.com/contested/contested/internal/seed"
	"github.com/contested/contested/internal/supervise"
	"github.com/contested/contested/internal/terminal"
)

// Exit codes (a contract: docs/reference/targets.md). There is no fifth code: a command
// stopped by a signal, and an internal error (a crash, an out-of-memory
// kill), exit 1 with a message that says which; 2 is only ever bad input.
const (
	ExitGreen     = 0 // green
	ExitRed       = 1 // red, or refused; also interrupted, and internal errors
	ExitUsage     = 2 // usage or bad input
	ExitCannotRun = 3 // the fault layer is unhealthy
)

// Sentinel errors of the commands themselves.
var (
	// ErrUsage: bad arguments or input (exit 2).
	ErrUsage = errors.New("usage")
	// ErrCannotRun: the fault layer failed preflight (exit 3).
	ErrCannotRun = errors.New("cannot run")
	// ErrRed: the command ran and the answer is no (exit 1).
	ErrRed = errors.New("red")
	// ErrInterrupted: a signal stopped the command before it finished
	// (exit 1: nothing about an unfinished run is green).
	ErrInterrupted = errors.New("interrupted")
)

// ExitCode maps an error from a command to its exit code.
func ExitCode(err error) int {
	switch {
	case err == nil:
		return ExitGreen
	case errors.Is(err, ErrInterrupted):
		return ExitRed
	case exitStatus(err) >= 0:
		return exitStatus(err)
	case errors.Is(err, ErrUsage), errors.Is(err, faultlayer.ErrConfig), errors.Is(err, registry.ErrInvalid), errors.Is(err, runenv.ErrInvalid), errors.Is(err, seedpkg.ErrInvalid), errors.Is(err, images.ErrServiceName), errors.Is(err, noise.ErrSpec):
		return ExitUsage
	case errors.Is(err, ErrCannotRun), errors.Is(err, faultlayer.ErrCannotRun):
		return ExitCannotRun
	default:
		return ExitRed
	}
}

// exitStatus is the status an error carries itself (Mage's mg.Fatal, as
// the targets' run returns it), -1 when it carries none.
func exitStatus(err error) int {
	var st interface{ ExitStatus() int }
	if errors.As(err, &st) {
		return st.ExitStatus()
	}
	return -1
}

// NotBuilt answers for a target whose command does not exist yet: a usage
// error, never a green.
func NotBuilt(target string) error {
	return fmt.Errorf("%w: mage %s is not built yet in this version of contested", ErrUsage, target)
}

// Variables a command reads, for checkVariables. Each names a check; the
// layer's covers CONTESTED_LAYER, CONTESTED_TOXIPROXY_URL,
// CONTESTED_PG_DSN, CONTESTED_PROXY_PORTS, CONTESTED_PROXY_LISTEN_HOST,
// CONTESTED_PG_BIN and CONTESTED_RUN_ID.
const (
	varLayer   = "layer"
	varLevel   = envvar.Level
	varSeed    = envvar.Seed
	varSeeds   = envvar.Seeds
	varBudget  = envvar.LadderBudget
	varTimeout = envvar.TestTimeout
	varNoise   = envvar.Noise
	varSignKey = envvar.SigningKey
)

// checkVariables refuses the variables a command reads that cannot work,
// all of them at once, with exit 2 (ErrUsage), before the command starts
// anything: a layer, a battery, a rerun, a build. A command checks them
// first, so that a bad CONTESTED_SEEDS is never found three reruns into an
// arbitration.
func checkVariables(names ...string) error {
	var problems []string
	for _, n := range names {
		var err error
		switch n {
		case varLayer:
			_, err = faultlayer.ConfigFromEnv()
		case varLevel:
			_, err = runenv.Level()
		case varSeed:
			_, err = seedpkg.FromEnv()
		case varSeeds:
			_, err = runenv.Seeds()
		case varBudget:
			_, err = ladderBudget()
		case varTimeout:
			_, err = battery.TimeoutFromEnv()
		case varNoise:
			_, _, err = noise.FromEnv()
		case varSignKey:
			_, err = signingKey()
		default:
			err = fmt.Errorf("internal error: no check for %s", n)
		}
		if err != nil {
			problems = append(problems, trimSentinels(err.Error(), ErrUsage, faultlayer.ErrConfig, runenv.ErrInvalid, seedpkg.ErrInvalid))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrUsage, strings.Join(problems, "; "))
	}
	return nil
}

// trimSentinels drops the sentinels' texts that lead msg, so that a list of
// problems names each variable first.
func trimSentinels(msg string, sentinels ...error) string {
	for _, s := range sentinels {
		msg = strings.TrimPrefix(msg, s.Error()+": ")
	}
	return msg
}

// withSignals returns ctx cancelled on the first SIGINT, SIGTERM or SIGHUP
// (internal/interrupt), so that a command stopped by Ctrl-C or by a CI
// runner tears down what it started.
func withSignals(ctx context.Context) (context.Context, context.CancelFunc) {
	return interrupt.Context(ctx)
}

// interrupted marks the outcome of a command that a signal stopped, so
// that it exits 1 and says so, whatever the cancellation looked like
// inside: a layer that "cannot run" because its bring-up was cancelled is
// not a fault-layer failure, and a report-only preflight that gave up is
// not a pass.
func interrupted(err error) error {
	sig := interrupt.Received()
	switch {
	case sig == nil || errors.Is(err, ErrInterrupted):
		return err
	case err == nil:
		return fmt.Errorf("%w by %s before it finished", ErrInterrupted, interrupt.Name(sig))
	default:
		return fmt.Errorf("%w by %s: %v", ErrInterrupted, interrupt.Name(sig), err)
	}
}

// Serve runs the command this process is a worker for, with the options
// its Mage target gave Supervise, and exits with its exit code, printing
// its error as Mage does ("Error: …"). In any other process it returns at
// once. Call it from an init function of the package that defines the
// Mage targets, before Mage's main runs.
//
// Everything the command prints goes through secret.Writer, line by line,
// so no password reaches the terminal or a CI log, whichever code printed
// it; under GitHub Actions it also goes through Output's guard, inside
// stop-commands blocks, so that nothing a test printed is read as a
// workflow command.
func Serve() {
	name, ok := supervise.Worker()
	if !ok {
		return
	}
	j, ok := jobs[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "contested: internal error: this binary has no target %q\n", name)
		supervise.Report(supervise.ExitInternal)
		os.Exit(supervise.ExitInternal)
	}
	options := []byte("{}")
	if len(os.Args) > 1 {
		options = []byte(os.Args[1])
	}
	// A forced exit (a second signal) still says how the run ended: to
	// the CI, and its exit code to the supervisor.
	interrupt.OnForce(func(why string) {
		endCI(name, interrupt.ExitForced, fmt.Errorf("%w: %s: the run was forced to exit before it finished", ErrInterrupted, why))
		supervise.Report(interrupt.ExitForced)
	})
	ctx, stop := interrupt.Context(context.Background())
	err := interrupted(guarded(os.Stdout, func(out io.Writer) error { return j(ctx, options, out) }))
	stop()
	if code := ExitCode(err); code != ExitGreen {
		endCI(name, code, err)
	}
	if err != nil {
		// One line, outside any stop-commands block: it may carry a name
		// from the registry or a test, so it is made inert.
		fmt.Fprintf(os.Stderr, "Error: %s\n", terminal.Inert(secret.ScrubString(err.Error())))
	}
	code := ExitCode(err)
	supervise.Report(code)
	os.Exit(code)
}

// guarded runs cmd with its output going to w through secret.Writer and
// Output's guard, and returns its error with every secret masked in its
// message (errors.Is still sees through it).
func guarded(w io.Writer, cmd func(out io.Writer) error) error {
	sw := secret.NewWriter(w)
	out := Output(sw)
	err := cmd(out)
	out.Close()
	sw.Flush()
	if err == nil {
		return nil
	}
	return scrubbed{err}
}

// scrubbed is an error whose message has its secrets masked.
type scrubbed struct{ err error }

func (s scrubbed) Error() string { return secret.ScrubString(s.err.Error()) }
func (s scrubbed) Unwrap() error { return s.err }

// Supervise runs target in a worker process (this executable again, with
// the target's options as one JSON value: nil for none), relays signals to
// it and waits. It returns nil when the worker
// succeeded; otherwise it exits the process with the worker's exit code
// (the worker has printed why), or 1 when the worker crashed.
func Supervise(ctx context.Context, target string, options any) error {
	opts, err := json.Marshal(options)
	if err != nil {
		return fmt.Errorf("internal error: the %s worker's options: %w", target, err)
	}
	// This very executable, even if its path now names another build (Mage
	// writes every build of a magefile to one cache path).
	exe := "/proc/self/exe"
	if _, err := os.Stat(exe); err != nil {
		if exe, err = os.Executable(); err != nil {
			return fmt.Errorf("internal error: find this executable to start the %s worker: %w", target, err)
		}
	}
	code := supervise.Run(ctx, supervise.Options{Target: target, Argv: []string{exe, string(opts)},
		Ended: func(code int, why string, summarized bool) {
			// The worker was killed, crashed or left without a word: the
			// CI hears it from here.
			if !summarized && code != ExitGreen {
				if why == "" {
					why = fmt.Sprintf("the %s worker exited %d", target, code)
				}
				endCI(target, code, errors.New(why))
			}
		}})
	if code == ExitGreen {
		return nil
	}
	os.Exit(code)
	return nil
}
