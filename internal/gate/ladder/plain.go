package ladder

import (
	"fmt"
	"strings"

	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/seed"
)

// PlainOwner owns a failing test before the ladder has walked it, and a
// package that failed outside any test.
const PlainOwner = "test author / the package's maintainers"

// Plain is one failure of a battery, as validate.json's battery_failures
// lists it: a failing test (contract test or not) with the evidence its
// ladder walk gathered (With), or a package that failed outside any test,
// which no walk can rerun: it says what happened and how to rerun it.
type Plain struct {
	Package string `json:"package"`
	Test    string `json:"test,omitempty"` // empty for a package that failed outside any test
	// What says what happened to a package that failed outside any test
	// (PackageFailure): it does not build, its TestMain exited, ...
	What string `json:"what,omitempty"`
	// FirstLine is the failure as the test reported it (its t.Error or
	// t.Fatal message, the oracle's violation, the panic), or the line
	// that says what ended its package.
	FirstLine string `json:"first_failure_line"`
	Owner     string `json:"owner"`
	Action    string `json:"action"`
	// The ladder's evidence, once it walked the failure (With): its
	// finer verdict, the reruns alone ({ran, failed}) and their class
	// (consistent, flaky, passes), what the machine gave it, its flake
	// history, the surface's verdict when one lists it, and the seed and
	// replay of the failing run.
	Verdict        string            `json:"verdict,omitempty"`
	Reruns         *Count            `json:"reruns,omitempty"`
	Class          string            `json:"class,omitempty"`
	Capacity       *CapacityEvidence `json:"capacity,omitempty"`
	History        *History          `json:"history,omitempty"`
	Surface        string            `json:"surface,omitempty"`
	SurfaceVerdict string            `json:"surface_verdict,omitempty"`
	Seed           int64             `json:"seed,omitempty"`
	Replay         string            `json:"replay,omitempty"`
	// Arbitrated says the ladder walked it; Incomplete what it did not
	// reach.
	Arbitrated bool   `json:"arbitrated"`
	Incomplete string `json:"incomplete,omitempty"`
	// Confirming says the owner and action are the likely ones validate
	// gave before the ladder walked it (Provisional): in a validate.json
	// that still says so, the run stopped before the walk confirmed them.
	Confirming bool `json:"confirming,omitempty"`
}

// With is p with the evidence, owner and action of its ladder walk; p as it
// is when o is nil (the budget did not reach it).
func (p Plain) With(o *Outcome) Plain {
	if o == nil {
		p.Action = fmt.Sprintf("not arbitrated (the ladder's budget ended before it started): go tool mage arbitrate %s", p.Test)
		return p
	}
	p.Arbitrated, p.Incomplete = true, o.Incomplete
	d := o.Decision()
	p.Owner, p.Action, p.Verdict = d.Owner, d.Action, d.Verdict
	if o.Reruns.Runs > 0 {
		p.Reruns = &Count{Ran: o.Reruns.Runs, Failed: o.Reruns.Failures}
	}
	p.Class, p.Capacity, p.History = o.Reruns.Class, o.Capacity, o.History
	if o.Surface != nil {
		p.Surface, p.SurfaceVerdict = o.Surface.ID, string(o.Contract)
	}
	p.Seed, p.Replay = o.Seed, o.Replay
	if o.Reason != "" {
		p.FirstLine = o.Reason
	}
	return p
}

// NewPlain describes a plain failure of test in pkg (an import path;
// empty: somewhere in the module), from its output. With no test it is
// PackageFailure with the number of tests that ran unknown.
func NewPlain(pkg, test, output string) Plain {
	if test == "" {
		return PackageFailure(pkg, output, -1)
	}
	p := Plain{Package: pkg, Test: test, Owner: PlainOwner, FirstLine: contract.FirstFailureLine(output)}
	p.Action = fmt.Sprintf("run it alone with %s, or walk the ladder for it: go tool mage arbitrate %s", aloneCommand(pkg, test), test)
	return p
}

// aloneCommand runs test alone, verbosely.
func aloneCommand(pkg, test string) string {
	return fmt.Sprintf("go test %s -run '%s' -count=1 -v", where(pkg), seed.RunPattern(test))
}

// Commands are the commands p's action can name for a reader to run: its
// replay, the command that runs it alone and the one that walks it. A
// Markdown writer shows them as code (markdown.Prose).
func (p Plain) Commands() []string {
	if p.Test == "" {
		return nil
	}
	return []string{p.Replay, aloneCommand(p.Package, p.Test), "go tool mage arbitrate " + p.Test}
}

func where(pkg string) string {
	if pkg == "" {
		return "./..."
	}
	return pkg
}

// What a package that failed outside any test went through, as
// PackageFailure reads it from go test's output.
const (
	NotBuilt      = "does not build"
	NotLoaded     = "cannot be loaded"
	ExitedEarly   = "exited before running any test"
	ExitedAfter   = "exited non-zero after its tests passed"
	PanickedEarly = "panicked outside any test"
	NeverFinished = "started and never finished"
	GoTestFailed  = "go test could not run"
	// TimedOutOutside: go test's -timeout ended it while no test ran.
	TimedOutOutside = "timed out outside any test"
	// StoppedByRun: the run was interrupted and stopped its test binary.
	StoppedByRun = "stopped by the run's interruption"
)

// InterruptedOwner owns what an interrupted run left unfinished: nobody's
// code is at fault, the outcome is unknown.
const InterruptedOwner = "nobody: the run was interrupted"

// rerunAfterInterrupt is the action for a test or package an interrupted
// run stopped.
func rerunAfterInterrupt(by, alone string) string {
	return fmt.Sprintf("unconfirmed, not a crash: the run was interrupted (%s) while it ran and stopped its test binary, so nothing is known about it: run validate again, or it alone with %s", by, alone)
}

// PackageFailure describes a package that failed outside any test, from
// its go test output and the number of its tests that ran (-1: unknown):
// what happened, the line that says so, and what to do. Its tests did not
// run, or their passes do not count, so none of them proves anything in
// this battery; a contract test among them is NOT-RUN.
func PackageFailure(pkg, output string, ran int) Plain {
	p := Plain{Package: pkg, Owner: PlainOwner, FirstLine: contract.FirstFailureLine(output)}
	rerun := fmt.Sprintf("go test %s -count=1 -v", where(pkg))
	switch {
	case pkg == "(go test)":
		p.What = GoTestFailed
		p.Action = "go test stopped before any package ran (a flag, a pattern, go.mod): fix what go says above and run again"
	case strings.Contains(output, "[build failed]"):
		p.What, p.FirstLine = NotBuilt, firstWith(output, ".go:", p.FirstLine)
		p.Action = fmt.Sprintf("fix the compile error (go vet %s shows it); none of its tests ran", where(pkg))
	case strings.Contains(output, "[setup failed]"):
		p.What, p.FirstLine = NotLoaded, firstWith(output, ".go:", p.FirstLine)
		p.Action = fmt.Sprintf("fix what go reports (a syntax error, an import cycle, a missing module; go vet %s shows it); none of its tests ran", where(pkg))
	case strings.Contains(output, "never finished"):
		p.What = NeverFinished
		p.Action = fmt.Sprintf("the test binary was killed or lost: run %s and see where it stops", rerun)
	case strings.Contains(output, "panic: "):
		p.What, p.FirstLine = PanickedEarly, firstWith(output, "panic: ", p.FirstLine)
		p.Action = fmt.Sprintf("its TestMain or an init panicked: run %s and fix the panic", rerun)
	case ran > 0:
		p.What = ExitedAfter
		p.Action = fmt.Sprintf("its TestMain returned a failing code after m.Run (its tear-down failed, or it ignored m.Run's code): run %s and fix it", rerun)
	default:
		p.What = ExitedEarly
		p.Action = fmt.Sprintf("its TestMain (or an init) ended the process before m.Run ran any test, usually a set-up that needs what this machine lacks (an image, a service, a variable): run %s, and make the set-up work where validate runs, or, where it cannot, let m.Run run and have the tests that need it skip with a message (t.Skip) instead of exiting", rerun)
	}
	return p
}

// PlainTest describes a failing test no surface lists, as NewPlain does;
// when its test binary ended it (battery.Test.Cause), the first line is
// what ended it and the action says how to find where it waits: a test
// that go test's -timeout ended names the timeout and how to raise it.
func PlainTest(t battery.Test) Plain {
	p := NewPlain(t.Package, t.Name, t.Output)
	if r := contract.Reason(t.Failure, ""); r != "" {
		p.FirstLine = r
	}
	alone := fmt.Sprintf("go test %s -run '%s' -count=1 -v", t.Package, seed.RunPattern(t.Name))
	switch {
	case t.Interrupted != "":
		p.FirstLine, p.Owner = t.Cause, InterruptedOwner
		p.Action = rerunAfterInterrupt(t.Interrupted, alone)
	case t.Timeout != "":
		p.FirstLine = t.Cause
		p.Action = fmt.Sprintf("it was still running when go test's -timeout (%s) ended its test binary: run it alone with %s to see where it waits, then make it faster, or raise the battery's timeout (%s)",
			t.Timeout, alone, raiseTimeout)
	case t.Cause != "":
		p.FirstLine = t.Cause
		if line := panicLine(t.Output); line != "" {
			p.FirstLine = line
		}
		p.Action = fmt.Sprintf("its test binary exited while it ran (a panic outside the test's goroutine, os.Exit or a crash): run it alone with %s, read the panic and fix it", alone)
	}
	return p
}

// firstWith is the first line of output that contains marker, trimmed,
// else fallback.
func firstWith(output, marker, fallback string) string {
	for _, line := range strings.Split(output, "\n") {
		if l := strings.TrimSpace(line); strings.Contains(l, marker) {
			return l
		}
	}
	return fallback
}

// PlainPackage describes a package that failed outside any test, of which
// ran tests ran to an end, as PackageFailure does; one that go test's
// -timeout ended while no test ran (in TestMain or its teardown) says so.
func PlainPackage(pkg battery.Package, ran int) Plain {
	p := PackageFailure(pkg.Name, pkg.Output, ran)
	if pkg.Interrupted != "" && p.What != NotBuilt && p.What != NotLoaded {
		p.What, p.Owner = StoppedByRun, InterruptedOwner
		p.FirstLine = "interrupted by " + pkg.Interrupted + ": the run stopped its test binary"
		p.Action = rerunAfterInterrupt(pkg.Interrupted, fmt.Sprintf("go test %s -count=1 -v", pkg.Name))
	}
	if pkg.Timeout != "" {
		p.What, p.FirstLine = TimedOutOutside, pkg.TimedOut()
		p.Action = fmt.Sprintf("go test's -timeout (%s) ended its test binary outside any test (TestMain or its teardown): run go test %s -count=1 -v to see where it waits and fix it, or raise the battery's timeout (%s)",
			pkg.Timeout, pkg.Name, raiseTimeout)
	}
	return p
}

// TimeoutReason is a verdict's reason for a package go test's -timeout
// ended: what it was running and what to do.
func TimeoutReason(pkg battery.Package) string {
	return fmt.Sprintf("package %s %s: make the test faster or raise the battery's timeout (%s)", pkg.Name, pkg.TimedOut(), raiseTimeout)
}

var raiseTimeout = fmt.Sprintf("%s, go test's -timeout; default %s; for example %s=1h", envvar.TestTimeout, strings.TrimSuffix(battery.DefaultTimeout.String(), "0s"), envvar.TestTimeout)

// panicLine is the first "panic: " line of a test's output.
func panicLine(output string) string {
	for _, l := range strings.Split(output, "\n") {
		if strings.HasPrefix(l, "panic: ") {
			return strings.TrimSpace(l)
		}
	}
	return ""
}
