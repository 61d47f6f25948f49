// Package gotest lists the tests of a Go module through `go test -list`, the test inventory
// that the gate's self-test phase and the registry check compare names against.
package gotest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/contested/contested/internal/interrupt"
)

// ErrList means `go test -list` failed, typically because a package does not build. The error
// is a [*ListError] carrying go's output.
var ErrList = errors.New("go test -list failed")

// ListError is returned when `go test -list` fails. Output is what go printed (stdout then
// stderr), which names the package and the compile error.
type ListError struct {
	Dir    string
	Args   []string
	Output string
	Err    error // the exec error (usually *exec.ExitError)
}

var _ error = (*ListError)(nil)

// Error includes go's output: a build failure is useless without it.
func (e *ListError) Error() string {
	return fmt.Sprintf("go %s in %s: %v\n%s", strings.Join(e.Args, " "), e.Dir, e.Err, strings.TrimRight(e.Output, "\n"))
}

// Unwrap returns both the sentinel and the exec error, so callers can test for [ErrList] or
// inspect the exit status.
func (e *ListError) Unwrap() []error { return []error{ErrList, e.Err} }

// List returns the names of the tests, benchmarks, examples and fuzz targets of the packages
// matched by patterns (default "./..."), as `go test -list . <patterns>` run in dir prints them.
// Names are top-level only (subtests are not listed by go), sorted and de-duplicated across
// packages.
//
// Vet is turned off: the inventory answers "does this test exist", not "is this code clean", and
// a vet finding must not hide every test name. A package that does not build makes List fail
// with a [*ListError]: a partial inventory would report tests as missing when they are only
// unbuildable, so the error is the honest answer.
func List(ctx context.Context, dir string, patterns ...string) ([]string, error) {
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	args := append([]string{"test", "-vet=off", "-list", "."}, patterns...)
	// In a process group of its own, so that a cancel stops the compiler
	// and linker go test -list started, not only go itself.
	cmd := interrupt.Command(ctx, 2*time.Second, "go", args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	untrack, err := interrupt.Start(cmd)
	if err == nil {
		err = cmd.Wait()
		untrack()
	}
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("list tests in %s: %w", dir, ctxErr)
		}
		return nil, &ListError{Dir: dir, Args: args, Output: stdout.String() + stderr.String(), Err: err}
	}
	return parse(stdout.Bytes()), nil
}

// testPrefixes are the kinds of name `go test -list` prints.
var testPrefixes = []string{"Test", "Benchmark", "Example", "Fuzz"}

// parse extracts test names from `go test -list` output: one bare identifier per line. Package
// summary lines ("ok  \tpkg\t0.01s", "?   \tpkg\t[no test files]", "FAIL\tpkg") contain blanks
// or are not identifiers with a test prefix, so they drop out.
func parse(out []byte) []string {
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.ContainsAny(line, " \t") || !isIdent(line) {
			continue
		}
		for _, p := range testPrefixes {
			if strings.HasPrefix(line, p) {
				names = append(names, line)
				break
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

func isIdent(s string) bool {
	for i, r := range s {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r > 0x7f:
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
