package cookbook_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/contested/contested/examples/internal/planted"
)

// TestCookbookQuotesCompiledCode: every Go code block of the cookbook pages (docs/cookbook) is
// quoted verbatim from a Go file of this module, which go vet and go test compile, so no page
// shows code that does not build; a page whose quote drifted from its source fails here,
// naming the page and the block's first line.
func TestCookbookQuotesCompiledCode(t *testing.T) {
	root := planted.ModuleRoot(t)
	var sources []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "test-results"):
			return filepath.SkipDir
		case strings.HasSuffix(path, ".go"):
			b, err := os.ReadFile(path)
			sources = append(sources, string(b))
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	pages, _ := filepath.Glob(filepath.Join(root, "docs", "cookbook", "*.md"))
	if len(pages) < 6 {
		t.Fatalf("%d cookbook pages, want the index and one per model", len(pages))
	}
	block := regexp.MustCompile("(?s)```go\n(.*?)\n```")
	blocks := 0
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range block.FindAllStringSubmatch(string(b), -1) {
			blocks++
			found := false
			for _, src := range sources {
				found = found || strings.Contains(src, m[1])
			}
			if !found {
				first, _, _ := strings.Cut(m[1], "\n")
				t.Errorf("%s: a Go block quoted from no Go file of the module (it may not compile): it begins %q", filepath.Base(page), first)
			}
		}
	}
	if blocks == 0 {
		t.Error("the cookbook has no Go code blocks")
	}
}
