package doccheck

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// checkLinks holds every relative link of p to a file of the repository
// (docs pages and repository files alike) and, for a link into a page, to
// one of its headings, by GitHub's anchors and MkDocs' both. exists says
// whether a path from the module root is there; pageOf parses a page.
func checkLinks(p *page, exists func(string) bool, pageOf func(string) *page) []string {
	var problems []string
	for _, l := range p.links {
		d := l.dest
		if d == "" || strings.Contains(d, "://") || strings.HasPrefix(d, "mailto:") {
			continue
		}
		file, anchor, _ := strings.Cut(d, "#")
		target := p
		if file != "" {
			rel := p.resolve(file)
			if rel == ".." || strings.HasPrefix(rel, "../") {
				problems = append(problems, fmt.Sprintf("%s:%d: link %q leaves the repository", p.path, l.line, d))
				continue
			}
			if strings.HasPrefix(p.path, "docs/") && !strings.HasPrefix(rel, "docs/") {
				problems = append(problems, fmt.Sprintf("%s:%d: link %q leaves docs/, which MkDocs builds alone, so the site cannot follow it: name the file in code (`%s`) instead", p.path, l.line, d, rel))
				continue
			}
			if !exists(rel) {
				problems = append(problems, fmt.Sprintf("%s:%d: link %q: %s does not exist", p.path, l.line, d, rel))
				continue
			}
			target = nil
			if strings.HasSuffix(rel, ".md") {
				target = pageOf(rel)
			}
		}
		if anchor != "" && target != nil && !target.anchors[anchor] {
			problems = append(problems, fmt.Sprintf("%s:%d: link %q: %s has no heading with the anchor #%s", p.path, l.line, d, target.path, anchor))
		}
	}
	return problems
}

// TestEveryLinkResolves: every relative link of the README and docs/
// reaches a file of the repository, and every anchor a heading there.
func TestEveryLinkResolves(t *testing.T) {
	r := root(t)
	pages := manual(t)
	byPath := map[string]*page{}
	for _, p := range pages {
		byPath[p.path] = p
	}
	exists := func(rel string) bool { _, err := os.Stat(filepath.Join(r, filepath.FromSlash(rel))); return err == nil }
	pageOf := func(rel string) *page {
		if p, ok := byPath[rel]; ok {
			return p
		}
		src, err := os.ReadFile(filepath.Join(r, filepath.FromSlash(rel)))
		if err != nil {
			return nil
		}
		return parse(rel, src)
	}
	links := 0
	for _, p := range pages {
		links += len(p.links)
		for _, pr := range checkLinks(p, exists, pageOf) {
			t.Error(pr)
		}
	}
	if links < 100 {
		t.Errorf("%d links in the manual; the README alone links every page", links)
	}
}

// TestTheLinkCheckCanFail: a link to a page that does not exist, to a
// heading that does not exist, out of the repository, and from docs/ to a
// file beside it are refused.
func TestTheLinkCheckCanFail(t *testing.T) {
	target := parse("docs/a.md", []byte("# A page\n\n## The six phases\n"))
	src := []byte("[ok](a.md#the-six-phases) [gone](b.md) [no heading](a.md#the-seven-phases) [out](../../etc/passwd) [beside](../examples/README.md) [here](#nowhere)\n")
	got := checkLinks(parse("docs/x.md", src), func(rel string) bool { return rel == "docs/a.md" || rel == "etc/passwd" || rel == "examples/README.md" }, func(string) *page { return target })
	want := []string{"docs/b.md does not exist", "no heading with the anchor #the-seven-phases", "leaves the repository", "leaves docs/", "docs/x.md has no heading with the anchor #nowhere"}
	if len(got) != len(want) {
		t.Fatalf("problems %q; want %d", got, len(want))
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("problem %d: %q, want it to say %q", i, got[i], want[i])
		}
	}
}

// navFiles are the pages mkdocs.yml's nav lists, in order.
func navFiles(t testing.TB, src []byte) []string {
	t.Helper()
	var cfg struct {
		DocsDir string `yaml:"docs_dir"`
		Nav     []any  `yaml:"nav"`
	}
	if err := yaml.Unmarshal(src, &cfg); err != nil {
		t.Fatalf("mkdocs.yml: %v", err)
	}
	if cfg.DocsDir != "docs" {
		t.Errorf("mkdocs.yml's docs_dir is %q, want docs", cfg.DocsDir)
	}
	var files []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			files = append(files, v)
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(cfg.Nav)
	return files
}

// checkNav holds the nav to the pages: each entry a page that exists,
// listed once, and every page listed.
func checkNav(nav, pages []string) []string {
	var problems []string
	seen := map[string]bool{}
	for _, f := range nav {
		switch {
		case seen[f]:
			problems = append(problems, fmt.Sprintf("mkdocs.yml lists %s twice", f))
		case !slices.Contains(pages, f):
			problems = append(problems, fmt.Sprintf("mkdocs.yml lists %s, which is no page of docs/", f))
		}
		seen[f] = true
	}
	for _, p := range pages {
		if !seen[p] {
			problems = append(problems, fmt.Sprintf("docs/%s is in no entry of mkdocs.yml's nav", p))
		}
	}
	return problems
}

// TestTheNavListsEveryPage: mkdocs.yml's nav names pages that exist, and
// every page of docs/ is in it.
func TestTheNavListsEveryPage(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(root(t), "mkdocs.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var pages []string
	for _, p := range manual(t) {
		if rel, ok := strings.CutPrefix(p.path, "docs/"); ok {
			pages = append(pages, rel)
		}
	}
	for _, pr := range checkNav(navFiles(t, src), pages) {
		t.Error(pr)
	}
	broken := checkNav([]string{"index.md", "gone.md", "index.md"}, []string{"index.md", "new.md"})
	if len(broken) != 3 {
		t.Errorf("a nav with a missing page, a page listed twice and a page left out gave %q; want three problems", broken)
	}
}
