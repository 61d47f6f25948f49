package mutants

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/contested/contested/internal/interrupt"
)

// Reclassify marks as NOT VIABLE the mutants gremlins counted as killed
// whose mutation cannot compile: ARITHMETIC_BASE turning the `+` of a
// string concatenation into `-`. gremlins reads any failing go test as a
// kill, and go test exits 1 for a build failure as for a failing test, so
// without this a compiler error would be credited to the tests. It
// type-checks the package (with its dependencies' export data from go
// list -export) only when such a candidate exists, and returns how many it
// marked.
func Reclassify(ctx context.Context, dir string, t Target, ms []Mutant) (int, error) {
	var cands []int
	for i, m := range ms {
		if m.Status == Killed && m.Mutation == "ARITHMETIC_BASE" {
			cands = append(cands, i)
		}
	}
	if len(cands) == 0 {
		return 0, nil
	}
	strs, err := stringConcats(ctx, dir, t)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, i := range cands {
		if strs[place{ms[i].File, ms[i].Line, ms[i].Column}] {
			ms[i].Status = NotViable
			n++
		}
	}
	return n, nil
}

// place is a position in a file named from the module root.
type place struct {
	file         string
	line, column int
}

// stringConcats type-checks t and returns the places of the `+` operators
// that join strings.
func stringConcats(ctx context.Context, dir string, t Target) (map[place]bool, error) {
	exports, files, err := exportData(ctx, dir, t.ImportPath)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var syntax []*ast.File
	for _, f := range files {
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", f, err)
		}
		syntax = append(syntax, af)
	}
	lookup := func(path string) (io.ReadCloser, error) {
		if exports[path] == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(exports[path])
	}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", lookup)}
	if _, err := conf.Check(t.ImportPath, fset, syntax, info); err != nil {
		return nil, fmt.Errorf("type-check %s: %w", t.ImportPath, err)
	}
	out := map[place]bool{}
	for _, af := range syntax {
		ast.Inspect(af, func(n ast.Node) bool {
			b, ok := n.(*ast.BinaryExpr)
			if !ok || b.Op != token.ADD {
				return true
			}
			if basic, ok := info.Types[b].Type.Underlying().(*types.Basic); ok && basic.Info()&types.IsString != 0 {
				p := fset.Position(b.OpPos)
				rel, err := filepath.Rel(dir, p.Filename)
				if err == nil {
					out[place{filepath.ToSlash(rel), p.Line, p.Column}] = true
				}
			}
			return true
		})
	}
	return out, nil
}

// exportData runs go list -export -deps on pkg and returns its
// dependencies' export data files and the package's own Go files.
func exportData(ctx context.Context, dir, pkg string) (map[string]string, []string, error) {
	cmd := interrupt.Command(ctx, 2*time.Second, "go", "list", "-export", "-deps", "-json=ImportPath,Export,Dir,GoFiles,Error", "--", pkg)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	untrack, err := interrupt.Start(cmd)
	if err != nil {
		return nil, nil, err
	}
	err = cmd.Wait()
	untrack()
	if err != nil {
		return nil, nil, fmt.Errorf("go list -export %s: %v: %s", pkg, err, strings.TrimSpace(stderr.String()))
	}
	exports := map[string]string{}
	var files []string
	dec := json.NewDecoder(&stdout)
	for {
		var l struct {
			ImportPath, Export, Dir string
			GoFiles                 []string
			Error                   *struct{ Err string }
		}
		if err := dec.Decode(&l); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, nil, fmt.Errorf("go list -export %s: %w", pkg, err)
		}
		if l.Error != nil {
			return nil, nil, fmt.Errorf("go list -export %s: %s", pkg, l.Error.Err)
		}
		exports[l.ImportPath] = l.Export
		if l.ImportPath == pkg {
			for _, f := range l.GoFiles {
				files = append(files, filepath.Join(l.Dir, f))
			}
		}
	}
	return exports, files, nil
}
