package mutants

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/contested/contested/internal/interrupt"
)

// Target is one package to mutate.
type Target struct {
	// Dir is the package's directory from the module root, as go test
	// takes it: "./internal/faultlayer/lease", or "." for the root.
	Dir string `json:"package"`
	// ImportPath is the package's import path.
	ImportPath string `json:"import_path"`
	// Skip are the package directory's non-test Go files that its build
	// leaves out (build constraints): mutating them would prove nothing.
	Skip []string `json:"-"`
}

// listed is what go list says about a package.
type listed struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	CgoFiles   []string
	Module     *struct{ Main bool }
	Error      *struct{ Err string }
}

// Resolve lists the packages the patterns match in the module at dir (an
// absolute path), in the order given, each once. A pattern that matches no
// package, or a package of another module, is an error wrapping
// ErrPackages.
func Resolve(ctx context.Context, dir string, patterns []string) ([]Target, error) {
	var out []Target
	for _, p := range patterns {
		pkgs, err := list(ctx, dir, p)
		if err != nil {
			return nil, err
		}
		if len(pkgs) == 0 {
			return nil, fmt.Errorf("%w: %s matches no package in %s", ErrPackages, p, dir)
		}
		for _, l := range pkgs {
			t, err := target(dir, p, l)
			if err != nil {
				return nil, err
			}
			if !slices.ContainsFunc(out, func(o Target) bool { return o.ImportPath == t.ImportPath }) {
				out = append(out, t)
			}
		}
	}
	return out, nil
}

// list runs go list -e -json on one pattern.
func list(ctx context.Context, dir, pattern string) ([]listed, error) {
	if strings.HasPrefix(pattern, "-") {
		return nil, fmt.Errorf("%w: %q is a flag, not a package pattern", ErrPackages, pattern)
	}
	cmd := interrupt.Command(ctx, 2*time.Second, "go", "list", "-e", "-json=ImportPath,Dir,GoFiles,CgoFiles,Module,Error", "--", pattern)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	untrack, err := interrupt.Start(cmd)
	if err != nil {
		return nil, fmt.Errorf("go list %s: %w", pattern, err)
	}
	err = cmd.Wait()
	untrack()
	if err != nil {
		return nil, fmt.Errorf("%w: go list %s: %v: %s", ErrPackages, pattern, err, strings.TrimSpace(stderr.String()))
	}
	var out []listed
	dec := json.NewDecoder(&stdout)
	for {
		var l listed
		if err := dec.Decode(&l); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list %s: read its output: %w", pattern, err)
		}
		out = append(out, l)
	}
	return out, nil
}

// target checks one listed package and makes it a Target.
func target(dir, pattern string, l listed) (Target, error) {
	switch {
	case l.Error != nil:
		return Target{}, fmt.Errorf("%w: %s: %s", ErrPackages, pattern, l.Error.Err)
	case l.Dir == "":
		return Target{}, fmt.Errorf("%w: %s matches no package in %s", ErrPackages, pattern, dir)
	case l.Module == nil || !l.Module.Main:
		return Target{}, fmt.Errorf("%w: %s is not a package of the module in %s (patterns name this module's packages, such as ./internal/faultlayer/lease)", ErrPackages, l.ImportPath, dir)
	}
	rel, err := filepath.Rel(dir, l.Dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return Target{}, fmt.Errorf("%w: %s lies outside %s", ErrPackages, l.ImportPath, dir)
	}
	t := Target{Dir: "./" + filepath.ToSlash(rel), ImportPath: l.ImportPath}
	if rel == "." {
		t.Dir = "."
	}
	built := append(slices.Clone(l.GoFiles), l.CgoFiles...)
	entries, err := os.ReadDir(l.Dir)
	if err != nil {
		return Target{}, fmt.Errorf("read %s: %w", l.Dir, err)
	}
	for _, e := range entries {
		n := e.Name()
		if e.Type().IsRegular() && strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") && !slices.Contains(built, n) {
			t.Skip = append(t.Skip, n)
		}
	}
	return t, nil
}
