package doccheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/contested/contested/internal/plan"
)

// noCookbookPage are the models the cookbook has no page for, and why.
var noCookbookPage = map[string]string{
	"Accounts": "the ledger example's model; Bank is it made general and has the page",
	"Lease":    "the job runner's port-lease table's model; Lock has the page for leases",
}

// models are the model types of the package in files: the types with the
// three methods of history.Model (Name, Translate, Porcupine), their own
// or promoted from an embedded type, sorted.
func models(files map[string]*ast.File) []string {
	methods := map[string]map[string]bool{}
	embeds := map[string][]string{}
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil || len(d.Recv.List) != 1 {
					continue
				}
				if typ := baseType(d.Recv.List[0].Type); typ != "" {
					if methods[typ] == nil {
						methods[typ] = map[string]bool{}
					}
					methods[typ][d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					ts, ok := spec.(*ast.TypeSpec)
					if !ok {
						continue
					}
					st, ok := ts.Type.(*ast.StructType)
					if !ok {
						continue
					}
					for _, field := range st.Fields.List {
						if len(field.Names) == 0 {
							embeds[ts.Name.Name] = append(embeds[ts.Name.Name], baseType(field.Type))
						}
					}
				}
			}
		}
	}
	var has func(typ, method string, depth int) bool
	has = func(typ, method string, depth int) bool {
		if methods[typ][method] {
			return true
		}
		return depth < 4 && slices.ContainsFunc(embeds[typ], func(e string) bool { return has(e, method, depth+1) })
	}
	var out []string
	for typ := range methods {
		if ast.IsExported(typ) && has(typ, "Name", 0) && has(typ, "Translate", 0) && has(typ, "Porcupine", 0) {
			out = append(out, typ)
		}
	}
	slices.Sort(out)
	return out
}

// baseType is the name of the type a receiver or embedded field names
// (T or *T), or "".
func baseType(e ast.Expr) string {
	if star, ok := e.(*ast.StarExpr); ok {
		e = star.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// funcNames are the names of the package-level functions in files.
func funcNames(files map[string]*ast.File) []string {
	var out []string
	for _, f := range files {
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil {
				out = append(out, fn.Name.Name)
			}
		}
	}
	return out
}

// modelPlace is a place a reader or a tool looks for the models, with
// what it must hold for model T.
type modelPlace struct {
	name string
	text string
	has  func(text, typ string) bool
}

// unlisted says, for each model, each place that does not list it.
func unlisted(models []string, places []modelPlace) []string {
	var out []string
	for _, m := range models {
		for _, p := range places {
			if !p.has(p.text, m) {
				out = append(out, fmt.Sprintf("model %s (New%s) is not in %s", m, m, p.name))
			}
		}
	}
	return out
}

// historyPlaces are the places that list the models of contested/history.
func historyPlaces(t *testing.T, code, tests map[string]*ast.File) []modelPlace {
	funcs := strings.Join(funcNames(code), " ") + " "
	examples := strings.Join(funcNames(tests), " ") + " "
	cookbook := readPage(t, "docs/cookbook/README.md")
	return []modelPlace{
		{"contested/history (a func New<T>)", funcs, func(s, m string) bool { return strings.Contains(s, "New"+m+" ") }},
		{"contested/history's tests (an Example)", examples, func(s, m string) bool { return strings.Contains(s, "ExampleNew"+m+" ") }},
		{"contested/history/doc.go", readPage(t, "contested/history/doc.go"), func(s, m string) bool {
			return strings.Contains(s, "[New"+m+"]") || strings.Contains(s, "["+m+"]")
		}},
		{"docs/concepts/models.md", readPage(t, "docs/concepts/models.md"), func(s, m string) bool {
			return strings.Contains(s, "`history.New"+m+"`") || strings.Contains(s, "`history."+m+"`")
		}},
		{"docs/cookbook/README.md's table (or noCookbookPage here)", cookbook, func(s, m string) bool {
			_, exempt := noCookbookPage[m]
			return exempt || strings.Contains(s, "| `history.New"+m+"` |")
		}},
		{"internal/plan's skeleton models (plan.Models)", strings.Join(plan.Models(), " ") + " ", func(s, m string) bool {
			return strings.Contains(" "+s, " "+strings.ToLower(m)+" ")
		}},
	}
}

// TestEveryModelIsListedWhereAReaderLooks: each model of
// contested/history (a type with Model's methods) has its constructor and
// Example, and is named in the package doc, the models page, the
// cookbook's table and the plan's skeletons; the plan knows no model the
// package lacks. A new model that misses one of them fails here, by name.
func TestEveryModelIsListedWhereAReaderLooks(t *testing.T) {
	dir := filepath.Join(root(t), "contested", "history")
	fset := token.NewFileSet()
	code := parseFiles(t, fset, dir, func(p string) bool { return !strings.HasSuffix(p, "_test.go") })
	tests := parseFiles(t, fset, dir, func(p string) bool { return strings.HasSuffix(p, "_test.go") })
	ms := models(code)
	if len(ms) < 7 {
		t.Fatalf("found %d models (%v): the search for types with Model's methods is broken", len(ms), ms)
	}
	for _, u := range unlisted(ms, historyPlaces(t, code, tests)) {
		t.Error(u)
	}
	for _, name := range plan.Models() {
		if !slices.ContainsFunc(ms, func(m string) bool { return strings.ToLower(m) == name }) {
			t.Errorf("internal/plan builds model %q, which contested/history does not have (%v)", name, ms)
		}
	}
	// The models page says which models have no cookbook page: the ones
	// noCookbookPage exempts, no other.
	var without string
	for _, line := range strings.Split(readPage(t, "docs/concepts/models.md"), "\n") {
		if strings.Contains(line, "have none") || strings.Contains(line, "has none") {
			without = line
		}
	}
	for _, m := range ms {
		if _, exempt := noCookbookPage[m]; exempt != strings.Contains(without, "`"+m+"`") {
			t.Errorf("docs/concepts/models.md's line on models without a cookbook page (%q) and noCookbookPage disagree on %s", without, m)
		}
	}
	for m := range noCookbookPage {
		if !slices.Contains(ms, m) {
			t.Errorf("noCookbookPage names %s, which is no model", m)
		}
	}
}

// TestTheModelListCheckCanFail: a model whose constructor, Example and
// listings are missing is named once per place.
func TestTheModelListCheckCanFail(t *testing.T) {
	src := `package p

type Counter struct{}

func (c *Counter) Name() string { return "counter" }
func (c *Counter) Translate(op Op) (Translated, error) { return Translated{}, nil }
func (Counter) Porcupine() int { return 0 }

type Gauge struct{ *Counter }

func (g *Gauge) Name() string { return "gauge" }

type NotAModel struct{}

func (NotAModel) Name() string { return "" }
`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	ms := models(map[string]*ast.File{"p.go": f})
	if !slices.Equal(ms, []string{"Counter", "Gauge"}) {
		t.Fatalf("models found: %v; want [Counter Gauge] (Gauge's methods promoted from Counter)", ms)
	}
	places := []modelPlace{
		{"the package", "NewLock ", func(s, m string) bool { return strings.Contains(s, "New"+m+" ") }},
		{"the page", "`history.NewLock`", func(s, m string) bool { return strings.Contains(s, "`history.New"+m+"`") }},
	}
	got := unlisted(ms, places)
	if len(got) != 4 || !strings.Contains(got[0], "Counter") || !strings.Contains(got[1], "the page") || !strings.Contains(got[3], "Gauge") {
		t.Errorf("unlisted: %q; want Counter and Gauge missing from both places", got)
	}
}
