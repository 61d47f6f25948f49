package ladder

import (
	"fmt"
	"strings"

	"github.com/contested/contested/contested"
	"github.com/contested/contested/gate/contract"
	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/envvar"
)

// PlainOwner owns a failing test that is not a contract test.
const PlainOwner = "test author / the package's maintainers"

// Plain is a failure that is not a contract test's: a test no surface in
// the registry lists (a test of the project's machinery, such as its
// providers, images, sweep or signal handling, or an ordinary unit test),
// or a package that failed outside any test. It is not arbitrated: it has
// no surface, no legs and no owning team to choose between, so it gets no
// ladder walk and no issue body, only what failed and how to rerun it.
type Plain struct {
	Package   string `json:"package"`
	Test      string `json:"test,omitempty"` // empty for a package that failed outside any test
	FirstLine string `json:"first_failure_line"`
	Owner     string `json:"owner"`
	Action    string `json:"action"`
}

// NewPlain describes a plain failure of test (empty: the package itself)
// in pkg (an import path; empty: somewhere in the module), from its output.
func NewPlain(pkg, test, output string) Plain {
	p := Plain{Package: pkg, Test: test, Owner: PlainOwner, FirstLine: contract.FirstFailureLine(output)}
	where := pkg
	if where == "" {
		where = "./..."
	}
	if test == "" {
		p.Action = fmt.Sprintf("the package failed outside any test (a build error, a panic, TestMain): run go test %s -count=1 and fix it", where)
		return p
	}
	p.Action = fmt.Sprintf("not a contract test: run it alone with go test %s -run '%s' -count=1 and fix it like any unit test", where, contested.RunPattern(test))
	return p
}

// PlainTest describes a failing test no surface lists, as NewPlain does;
// when its test binary ended it (battery.Test.Cause), the first line is
// what ended it and the action says how to find where it waits: a test
// that go test's -timeout ended names the timeout and how to raise it.
func PlainTest(t battery.Test) Plain {
	p := NewPlain(t.Package, t.Name, t.Output)
	alone := fmt.Sprintf("go test %s -run '%s' -count=1 -v", t.Package, contested.RunPattern(t.Name))
	switch {
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

// PlainPackage describes a package that failed outside any test, as
// NewPlain does; one that go test's -timeout ended while no test ran (in
// TestMain or its teardown) says so.
func PlainPackage(pkg battery.Package) Plain {
	p := NewPlain(pkg.Name, "", pkg.Output)
	if pkg.Timeout != "" {
		p.FirstLine = pkg.TimedOut()
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
