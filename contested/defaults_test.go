package contested

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contested/contested/internal/faultlayer/levers"
)

// TestDocumentedDefaultsAreTheCodes: every default a user of this package
// meets is stated in go doc, in the words the test looks for, and those
// words are the value the code uses: a default changed in the code and not
// in its doc comment (or the reverse) fails here.
func TestDocumentedDefaultsAreTheCodes(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, f := range pkgs["contested"].Files {
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, "github.com/contested/contested/contested")
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	for _, f := range p.Funcs {
		docs[f.Name] = f.Doc
	}
	for _, typ := range p.Types {
		for _, f := range typ.Funcs {
			docs[f.Name] = f.Doc
		}
	}
	for _, c := range p.Consts {
		for _, n := range c.Names {
			docs[n] = c.Doc
		}
	}
	number := map[int]string{1: "one", 2: "two"}
	minutes := map[time.Duration]string{time.Minute: "one minute", 2 * time.Minute: "two minutes"}
	tests := []struct {
		name, says string
	}{
		{"Span", "default is " + strconv.Itoa(levers.DefaultSpan) + " steps"},
		{"CheckTimeout", "default " + minutes[defaultCheckTimeout]},
		{"Clients", number[defaultClients] + " client by default"},
	}
	for _, tt := range tests {
		d, ok := docs[tt.name]
		if !ok {
			t.Errorf("%s has no doc comment", tt.name)
			continue
		}
		d = strings.Join(strings.Fields(d), " ")
		if !strings.Contains(d, tt.says) {
			t.Errorf("go doc %s does not say %q, the code's default:\n%s", tt.name, tt.says, d)
		}
	}
}
