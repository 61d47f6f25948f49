package doccheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// parseDir parses the non-test Go files of dir, from the module root.
func parseDir(t testing.TB, dir string) []*ast.File {
	t.Helper()
	fset := token.NewFileSet()
	paths, err := filepath.Glob(filepath.Join(root(t), dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// stringValues are the string constants and the string-slice literals of
// package-level declarations whose name matches name.
func stringValues(files []*ast.File, name *regexp.Regexp) []string {
	var out []string
	for _, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, s := range g.Specs {
				vs, ok := s.(*ast.ValueSpec)
				if !ok {
					continue
				}
				for i, n := range vs.Names {
					if !name.MatchString(n.Name) || i >= len(vs.Values) {
						continue
					}
					ast.Inspect(vs.Values[i], func(x ast.Node) bool {
						if lit, ok := x.(*ast.BasicLit); ok && lit.Kind == token.STRING {
							if v, err := strconv.Unquote(lit.Value); err == nil {
								out = append(out, v)
							}
						}
						return true
					})
				}
			}
		}
	}
	return out
}

// missing are the names the page's text does not hold as code: `name`,
// or as a table's header, `[name]`, `[[name]]`, `[table.name]`.
func missing(pageText string, names []string) []string {
	var out []string
	for _, n := range names {
		asCode := regexp.MustCompile("`\\[{0,2}(?:\\w+\\.)?" + regexp.QuoteMeta(n) + "\\]{0,2}`")
		if !asCode.MatchString(pageText) {
			out = append(out, n)
		}
	}
	return out
}

func readPage(t testing.TB, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestTheEnvironmentPageNamesEveryVariable: every variable internal/envvar
// defines is in the environment reference, as code.
func TestTheEnvironmentPageNamesEveryVariable(t *testing.T) {
	vars := stringValues(parseDir(t, "internal/envvar"), regexp.MustCompile(`.`))
	if len(vars) < 20 {
		t.Fatalf("%d variables read from internal/envvar: %v", len(vars), vars)
	}
	page := readPage(t, "docs/reference/environment.md")
	for _, v := range missing(page, vars) {
		t.Errorf("docs/reference/environment.md does not name %s, which internal/envvar defines", v)
	}
	if got := missing(strings.ReplaceAll(page, "`CONTESTED_NOISE`", "noise"), vars); len(got) != 1 || got[0] != "CONTESTED_NOISE" {
		t.Errorf("a page without CONTESTED_NOISE: missing %v, want it alone", got)
	}
}

// TestTheRegistryPageNamesEveryKey: every key the registry package accepts
// (its *Keys lists, which its strict loader checks every table against)
// is in the registry reference, as code.
func TestTheRegistryPageNamesEveryKey(t *testing.T) {
	files := parseDir(t, "internal/registry")
	keys := stringValues(files, regexp.MustCompile(`Keys$`))
	for _, want := range []string{"recording_classes", "canonical_databases", "packages_per_core", "revisit_when", "accepted", "dsn_env"} {
		if !strings.Contains(fmt.Sprint(keys), want) {
			t.Fatalf("the keys read from registry/ lack %q: %v", want, keys)
		}
	}
	// Every list the loader checks a table against is one of those read.
	lists := map[string]bool{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				if s, ok := c.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == "knownKeys" && len(c.Args) == 3 {
					if id, ok := c.Args[1].(*ast.Ident); ok {
						lists[id.Name] = true
					}
				}
			}
			return true
		})
	}
	for l := range lists {
		if l != "known" && !strings.HasSuffix(l, "Keys") {
			t.Errorf("the registry checks a table against %s, which this test does not read (name it …Keys)", l)
		}
	}
	page := readPage(t, "docs/reference/registry.md")
	for _, k := range missing(page, keys) {
		t.Errorf("docs/reference/registry.md does not name the key %s, which the registry accepts", k)
	}
	if got := missing("`schema` `gate`", []string{"schema", "gate", "self_tests"}); len(got) != 1 {
		t.Errorf("missing %v; want self_tests alone", got)
	}
}
