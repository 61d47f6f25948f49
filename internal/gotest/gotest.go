// Package gotest gives the test inventory of a Go module: the names of its tests, read from the
// source of the test files `go list` selects, the list that the gate's self-test phase and the
// registry check compare names against.
package gotest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/contested/contested/internal/interrupt"
)

// ErrList means the inventory could not be read whole: `go list` failed (a pattern that names no
// package, a go.mod go cannot read) or a test file does not parse. The error is a [*ListError].
var ErrList = errors.New("list tests failed")

// ErrPattern means a pattern names no package of the module (a directory that does not exist,
// an import path outside it): bad input, not a broken module. It comes with [ErrList].
var ErrPattern = errors.New("no such package")

// ErrUnparsed means some test files do not parse. It comes with [ErrList] and with the names
// List could read: every other file's, and those the parser recovered from the broken file up
// to its error; the names declared after the error are missing.
var ErrUnparsed = errors.New("test files do not parse")

// ListError is returned when the inventory cannot be read. Output is what go printed, or the
// parser's file:line message.
type ListError struct {
	Dir    string
	Args   []string
	Output string
	Err    error // the exec or parse error
}

var _ error = (*ListError)(nil)

// Error includes go's output: a failure is useless without it.
func (e *ListError) Error() string {
	return fmt.Sprintf("go %s in %s: %v\n%s", strings.Join(e.Args, " "), e.Dir, e.Err, strings.TrimRight(e.Output, "\n"))
}

// Unwrap returns both the sentinel and the underlying error, so callers can test for [ErrList]
// or inspect the exit status.
func (e *ListError) Unwrap() []error { return []error{ErrList, e.Err} }

// List returns the names of the tests, benchmarks, examples and fuzz targets of the packages
// matched by patterns (default "./..."), sorted and de-duplicated across packages.
//
// The names are read from the source: `go list` says which test files the current build
// selects (build tags and GOOS honoured), and go/parser reads their top-level functions with
// the signatures `go test` runs. Nothing is compiled and no test binary runs, so a package whose
// TestMain needs something this machine lacks, or a package that does not build, neither hides
// the other packages' tests nor stalls the inventory: the battery reports those packages as the
// failures they are. Subtests are not listed (their names are only known when they run).
//
// A test file that does not parse does not hide the others either: List returns every name it
// could read together with an error that wraps [ErrUnparsed] and names each file and line, so a
// caller may use the names (a test found is declared) and must not take a name's absence as
// proof (it may sit after the syntax error).
func List(ctx context.Context, dir string, patterns ...string) ([]string, error) {
	pkgs, err := Packages(ctx, dir, patterns...)
	if pkgs == nil && err != nil {
		return nil, err
	}
	var names []string
	for _, p := range pkgs {
		names = append(names, p.Tests...)
	}
	slices.Sort(names)
	return slices.Compact(names), err
}

// Package is one package's part of the inventory: its import path and the
// names of its tests, benchmarks, examples and fuzz targets, sorted.
type Package struct {
	ImportPath string   `json:"package"`
	Tests      []string `json:"tests"`
}

// Packages is [List] package by package: the packages matched by patterns
// that have test files, in import path order, each with its names (the
// same names List returns, and the same errors: a file that does not parse
// gives the names read with an error wrapping [ErrUnparsed]). A package
// whose test files declare nothing go test runs has no names.
func Packages(ctx context.Context, dir string, patterns ...string) ([]Package, error) {
	listed, err := golist(ctx, dir, patterns)
	if err != nil {
		return nil, err
	}
	pkgs := []Package{}
	var unparsed []string
	for _, p := range listed {
		pkg := Package{ImportPath: p.ImportPath, Tests: []string{}}
		for _, f := range p.Files {
			found, err := testFuncs(f)
			if err != nil {
				unparsed = append(unparsed, err.Error())
			}
			for _, d := range found {
				pkg.Tests = append(pkg.Tests, d.Name)
			}
		}
		slices.Sort(pkg.Tests)
		pkg.Tests = slices.Compact(pkg.Tests)
		pkgs = append(pkgs, pkg)
	}
	slices.SortFunc(pkgs, func(a, b Package) int { return strings.Compare(a.ImportPath, b.ImportPath) })
	if len(unparsed) > 0 {
		msg := strings.Join(unparsed, "\n")
		return pkgs, &ListError{Dir: dir, Args: listArgs(patterns), Output: msg, Err: fmt.Errorf("%w (%d)", ErrUnparsed, len(unparsed))}
	}
	return pkgs, nil
}

// Declaration is where a test function is declared: its file (absolute)
// and the line of its name.
type Declaration struct {
	File string
	Line int
}

// Declarations says where the tests, benchmarks, examples and fuzz targets
// of the packages matched by patterns are declared, keyed by import path
// and name ("example.com/m/store.TestStoreContract"), read from the source
// of the test files go list selects, as [Packages] reads them. A test file
// that does not parse gives what the parser recovered before its error.
func Declarations(ctx context.Context, dir string, patterns ...string) (map[string]Declaration, error) {
	listed, err := golist(ctx, dir, patterns)
	if err != nil {
		return nil, err
	}
	out := map[string]Declaration{}
	for _, p := range listed {
		for _, f := range p.Files {
			found, _ := testFuncs(f)
			for _, d := range found {
				out[p.ImportPath+"."+d.Name] = Declaration{File: f, Line: d.Line}
			}
		}
	}
	return out, nil
}

// listed is one package go list matched that has test files: its import
// path and the test files' paths.
type listed struct {
	ImportPath string
	Files      []string
}

func listArgs(patterns []string) []string {
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	return append([]string{"list", "-e", "-json=Dir,ImportPath,TestGoFiles,XTestGoFiles,Error"}, patterns...)
}

// golist lists the packages patterns match in the module in dir (default
// ./...) that have test files, with those files' paths.
func golist(ctx context.Context, dir string, patterns []string) ([]listed, error) {
	args := listArgs(patterns)
	// In a process group of its own, so that a cancel stops go and what it started.
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
	var out []listed
	dec := json.NewDecoder(&stdout)
	for {
		var p struct {
			Dir, ImportPath           string
			TestGoFiles, XTestGoFiles []string
			Error                     *struct{ Err string }
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, &ListError{Dir: dir, Args: args, Output: stderr.String(), Err: fmt.Errorf("decode go list output: %w", err)}
		}
		if p.Error != nil && p.Dir == "" {
			// A pattern that names no directory, or a directory outside the module: not a package
			// that fails to build (those have a directory and are the battery's to report).
			return nil, &ListError{Dir: dir, Args: args, Output: p.Error.Err, Err: fmt.Errorf("%w: pattern %s: %s", ErrPattern, p.ImportPath, p.Error.Err)}
		}
		files := append(p.TestGoFiles, p.XTestGoFiles...)
		if len(files) == 0 {
			continue
		}
		l := listed{ImportPath: p.ImportPath}
		for _, f := range files {
			l.Files = append(l.Files, filepath.Join(p.Dir, f))
		}
		out = append(out, l)
	}
	return out, nil
}

// testFuncs returns the functions of one test file that `go test` runs or lists: TestXxx(*testing.T),
// BenchmarkXxx(*testing.B), FuzzXxx(*testing.F) and ExampleXxx(), Xxx not starting with a
// lower-case letter, each with the line of its name. A file that does not parse gives the
// functions the parser recovered before its error, with the error.
func testFuncs(path string) ([]testFunc, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		err = fmt.Errorf("parse %s (fix the syntax error; the test inventory is read from source): %w", path, err)
	}
	if f == nil {
		return nil, err
	}
	var found []testFunc
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv != nil || fn.Type.TypeParams != nil {
			continue
		}
		if kind, ok := testKind(fn.Name.Name); ok && signature(fn.Type, kind) {
			found = append(found, testFunc{Name: fn.Name.Name, Line: fset.Position(fn.Name.Pos()).Line})
		}
	}
	return found, err
}

// testFunc is a test function of a file: its name and the line of it.
type testFunc struct {
	Name string
	Line int
}

// testKinds maps a name prefix to the parameter type go test passes ("" for examples).
var testKinds = []struct{ prefix, param string }{
	{"Test", "T"}, {"Benchmark", "B"}, {"Fuzz", "F"}, {"Example", ""},
}

func testKind(name string) (param string, ok bool) {
	for _, k := range testKinds {
		rest, found := strings.CutPrefix(name, k.prefix)
		if !found {
			continue
		}
		if r, _ := utf8.DecodeRuneInString(rest); rest != "" && unicode.IsLower(r) {
			return "", false
		}
		if k.prefix == "Test" && rest == "Main" {
			return "", false
		}
		return k.param, true
	}
	return "", false
}

// signature reports whether ft is func() for examples, or func(*testing.<param>) with no
// results otherwise. The testing package's local name is not checked: a dot-import or a rename
// of "testing" in a test file is rare enough that a false positive there is harmless.
func signature(ft *ast.FuncType, param string) bool {
	if ft.Results != nil && len(ft.Results.List) > 0 {
		return false
	}
	params := ft.Params.List
	if param == "" {
		return len(params) == 0
	}
	if len(params) != 1 || len(params[0].Names) > 1 {
		return false
	}
	star, ok := params[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == param
}
