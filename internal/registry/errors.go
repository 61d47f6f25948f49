package registry

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Sentinel errors. Every problem this package reports wraps exactly one of
// them, so a caller can decide what to do (exit code, gate verdict) with
// errors.Is instead of matching messages.
var (
	// ErrInvalid: the registry file is not a registry this package can trust
	// (bad TOML, unknown keys, missing fields, bad budgets, ...). Callers
	// treat it as bad input (exit code 2); nothing downstream should run on
	// a registry that failed to load.
	ErrInvalid = errors.New("invalid surface registry")

	// ErrMissingTest: the registry names a test (a surface's test or a gate
	// self-test) that the test inventory does not contain. It wraps
	// ErrInvalid: a registry that points at tests which do not exist is as
	// untrustworthy as one that does not parse.
	ErrMissingTest = fmt.Errorf("%w: test not in the test inventory", ErrInvalid)

	// ErrUnknownSurface: a fault record names a surface the registry does not
	// have. It does not wrap ErrInvalid because the registry may be fine and
	// the record wrong; either way the gate must refuse to count the record.
	ErrUnknownSurface = errors.New("surface not in the registry")

	// ErrRecordMismatch: a fault record names a registered surface but
	// disagrees with it on class or leg, so counting it per class would
	// credit the wrong class.
	ErrRecordMismatch = errors.New("record disagrees with the registry")
)

// Error is one problem, at a position in the registry file. Its message
// says what happened and what to do about it.
type Error struct {
	File   string // the registry path as given to Load or Parse
	Line   int    // 1-based; 0 when the problem has no single place in the file
	Column int    // 1-based; 0 when unknown
	Msg    string
	Kind   error // one of the sentinels above
}

// Error formats the problem the way compilers do (file:line:col: message),
// so editors and CI annotations can jump to it.
func (e *Error) Error() string {
	switch {
	case e.Line > 0 && e.Column > 0:
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Msg)
	case e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	default:
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
}

// Unwrap returns the sentinel, so errors.Is(err, ErrInvalid) works on a
// single problem as well as on a list.
func (e *Error) Unwrap() error { return e.Kind }

// ErrorList is every problem found in one pass, sorted by position. A
// registry author fixes them all in one edit instead of one per run.
type ErrorList []*Error

// Error prints one problem per line.
func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap exposes the problems to errors.Is and errors.As.
func (l ErrorList) Unwrap() []error {
	errs := make([]error, len(l))
	for i, e := range l {
		errs[i] = e
	}
	return errs
}

// sorted orders problems by position, keeping the order of discovery for
// problems at the same place.
func (l ErrorList) sorted() ErrorList {
	slices.SortStableFunc(l, func(a, b *Error) int {
		if c := cmp.Compare(a.Line, b.Line); c != 0 {
			return c
		}
		return cmp.Compare(a.Column, b.Column)
	})
	return l
}

// err returns the list as an error, or nil when it is empty: a nil
// ErrorList stored in an error interface would not compare equal to nil.
func (l ErrorList) err() error {
	if len(l) == 0 {
		return nil
	}
	return l.sorted()
}
