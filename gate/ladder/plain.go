package ladder

import (
	"fmt"

	"github.com/contested/contested/contested"
	"github.com/contested/contested/gate/contract"
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
