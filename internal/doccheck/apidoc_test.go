package doccheck

import (
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// publicPackages are the packages a team's tests import: go doc is their
// manual, so every exported name in them says what it is.
var publicPackages = []string{"contested", "contested/history", "cluster", "cluster/clustertest"}

// mainExamples are the Example functions the main names must keep, by
// package: the calls a contract is made of.
var mainExamples = map[string][]string{
	"contested":         {"ExampleStart", "ExampleMain", "ExampleRun", "ExampleDatabase", "ExampleLeg_Check", "ExampleLeg_Committed", "ExampleLeg_Rand", "ExampleLeg_StartWorker", "ExampleRole", "ExampleAmbiguous"},
	"contested/history": {"Example"}, // and one per model: TestEveryModelIsListedWhereAReaderLooks
	"cluster":           {"ExampleService"},
}

// undocumented lists every exported name of the package in dir (its
// non-test files) that has no doc comment: constants, variables,
// functions, types, methods, struct fields and interface methods. A field
// or interface method counts as documented by a comment of its own, or
// when its type's doc or the doc of the field just before it names it
// (one comment for a group).
func undocumented(fset *token.FileSet, files map[string]*ast.File, dir string) []string {
	pkg := &ast.Package{Name: "p", Files: files}
	d := doc.New(pkg, dir, 0)
	var out []string
	say := func(pos token.Pos, what string) {
		p := fset.Position(pos)
		out = append(out, fmt.Sprintf("%s:%d: %s has no doc comment", filepath.Base(p.Filename), p.Line, what))
	}
	values := func(vs []*doc.Value, kind string) {
		for _, v := range vs {
			if v.Doc != "" {
				continue
			}
			for _, s := range v.Decl.Specs {
				s := s.(*ast.ValueSpec)
				if s.Doc != nil || s.Comment != nil {
					continue
				}
				for _, n := range s.Names {
					if n.IsExported() {
						say(n.Pos(), kind+" "+n.Name)
					}
				}
			}
		}
	}
	funcs := func(fs []*doc.Func, kind string) {
		for _, f := range fs {
			if f.Doc == "" {
				say(f.Decl.Pos(), kind+f.Name)
			}
		}
	}
	values(d.Consts, "const")
	values(d.Vars, "var")
	funcs(d.Funcs, "func ")
	for _, typ := range d.Types {
		if typ.Doc == "" {
			say(typ.Decl.Pos(), "type "+typ.Name)
		}
		values(typ.Consts, "const")
		values(typ.Vars, "var")
		funcs(typ.Funcs, "func ")
		funcs(typ.Methods, "method "+typ.Name+".")
		spec := typ.Decl.Specs[0].(*ast.TypeSpec)
		var list *ast.FieldList
		switch t := spec.Type.(type) {
		case *ast.StructType:
			list = t.Fields
		case *ast.InterfaceType:
			list = t.Methods
		}
		if list == nil {
			continue
		}
		prevDoc := ""
		for _, f := range list.List {
			own := ""
			if f.Doc != nil {
				own = f.Doc.Text()
			}
			if f.Comment != nil {
				own += f.Comment.Text()
			}
			for _, n := range f.Names {
				if !n.IsExported() || own != "" || names(typ.Doc, n.Name) || names(prevDoc, n.Name) {
					continue
				}
				say(n.Pos(), typ.Name+"."+n.Name)
			}
			if own != "" {
				prevDoc = own
			}
		}
	}
	return out
}

// names reports whether text names name as a word.
func names(text, name string) bool {
	return regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\b`).MatchString(text)
}

// parseFiles parses the Go files of dir that keep says to keep.
func parseFiles(t testing.TB, fset *token.FileSet, dir string, keep func(string) bool) map[string]*ast.File {
	t.Helper()
	files := map[string]*ast.File{}
	paths, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, p := range paths {
		if !keep(p) {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files[p] = f
	}
	return files
}

// TestEveryExportedNameIsDocumented: every exported name of the public
// packages has a doc comment, and the main ones keep their Example.
func TestEveryExportedNameIsDocumented(t *testing.T) {
	for _, rel := range publicPackages {
		dir := filepath.Join(root(t), rel)
		fset := token.NewFileSet()
		src := parseFiles(t, fset, dir, func(p string) bool { return !strings.HasSuffix(p, "_test.go") })
		for _, u := range undocumented(fset, src, dir) {
			t.Errorf("%s/%s", rel, u)
		}
		var examples []string
		for _, f := range parseFiles(t, fset, dir, func(p string) bool { return strings.HasSuffix(p, "_test.go") }) {
			for _, d := range f.Decls {
				if fn, ok := d.(*ast.FuncDecl); ok && strings.HasPrefix(fn.Name.Name, "Example") && fn.Recv == nil {
					examples = append(examples, fn.Name.Name)
				}
			}
		}
		for _, want := range mainExamples[rel] {
			if !slices.Contains(examples, want) {
				t.Errorf("%s has no %s", rel, want)
			}
		}
	}
}

// TestTheDocCheckCanFail: an exported function, field and interface method
// without a comment are each named; a field its type's doc names is not.
func TestTheDocCheckCanFail(t *testing.T) {
	src := `package p

// T is a thing; Named is named here.
type T struct {
	Named int
	Bare  int
}

// I does things.
type I interface {
	Do()
}

func F() {}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	got := undocumented(fset, map[string]*ast.File{"p.go": f}, ".")
	want := []string{"p.go:14: func F has no doc comment", "p.go:11: I.Do has no doc comment", "p.go:6: T.Bare has no doc comment"}
	if !slices.Equal(got, want) {
		t.Errorf("undocumented:\n got  %q\n want %q", got, want)
	}
}
