// Package mutants runs mutation testing over a module's packages with
// go-gremlins/gremlins, pinned as a tool of the module (go.mod's tool
// directive, like Mage), and reads what it found: per package, the mutants
// killed, survived, timed out, not covered and not viable, each survivor's
// file:line:column and mutation, and the kill rate of covered mutants,
// (killed + timed out) / (killed + survived + timed out): a mutant whose
// tests do not finish within their bound is caught, as go test's own
// -timeout would fail it in CI. Survivors the registry accepts
// as equivalent ([[mutants.accepted]]) are listed apart and left out of the
// rate.
//
// gremlins runs once per package, in the package's directory, so each run
// gathers the coverage of that package's tests (and of the packages below
// it) and mutates only the package's own files; each mutant is tested with
// go test on its package, in a copy of the module, bounded by the coverage
// run's time times the timeout coefficient. The command that calls Run
// (internal/command.Mutants) brings the fault layer up first and passes its
// coordinates in Options.Env, so the tests run as in the battery.
package mutants

import "errors"

// Sentinel errors.
var (
	// ErrPackages: a package pattern matches no package of the module, or
	// a package of another module (bad input).
	ErrPackages = errors.New("bad package pattern")
	// ErrNoTool: the module does not have gremlins as a tool (it cannot
	// run until it is pinned: Install).
	ErrNoTool = errors.New("gremlins is not a tool of this module")
)
