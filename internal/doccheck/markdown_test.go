package doccheck

import (
	"bytes"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"
)

// page is one Markdown file of the manual, as the checks read it.
type page struct {
	path    string // relative to the module root, with slashes
	src     []byte
	blocks  []block
	spans   []string // inline code
	links   []link
	anchors map[string]bool // the headings' anchors, by both slug rules
}

// resolve is the path from the module root that a link from p to file
// (a relative path, without its anchor) reaches.
func (p *page) resolve(file string) string { return path.Clean(path.Join(path.Dir(p.path), file)) }

// block is a fenced code block.
type block struct {
	lang     string
	code     string // without the final newline
	line     int
	fragment string // the reason of a preceding <!-- fragment: reason -->, or ""
	marked   bool   // a fragment marker precedes it
}

// link is a link's destination and where it is.
type link struct {
	dest string
	line int
}

var markdown = goldmark.New(goldmark.WithExtensions(extension.GFM))

// fragmentMark marks a Go block that is deliberately not compiled.
var fragmentMark = regexp.MustCompile(`^<!--\s*fragment:?\s*(.*?)\s*-->\s*$`)

// parse reads a page's code blocks, code spans, links and headings.
func parse(path string, src []byte) *page {
	p := &page{path: path, src: src, anchors: map[string]bool{}}
	doc := markdown.Parser().Parse(text.NewReader(src))
	lineOf := func(offset int) int { return bytes.Count(src[:offset], []byte("\n")) + 1 }
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.FencedCodeBlock:
			var code strings.Builder
			lines := n.Lines()
			for i := 0; i < lines.Len(); i++ {
				seg := lines.At(i)
				code.Write(seg.Value(src))
			}
			b := block{lang: string(n.Language(src)), code: strings.TrimSuffix(code.String(), "\n")}
			if lines.Len() > 0 {
				b.line = lineOf(lines.At(0).Start) - 1
			}
			if h, ok := n.PreviousSibling().(*ast.HTMLBlock); ok {
				var raw strings.Builder
				for i := 0; i < h.Lines().Len(); i++ {
					seg := h.Lines().At(i)
					raw.Write(seg.Value(src))
				}
				if m := fragmentMark.FindStringSubmatch(strings.TrimSpace(raw.String())); m != nil {
					b.marked, b.fragment = true, m[1]
				}
			}
			p.blocks = append(p.blocks, b)
		case *ast.CodeSpan:
			p.spans = append(p.spans, string(spanText(n, src)))
		case *ast.Link:
			line := 0
			if t, ok := n.FirstChild().(*ast.Text); ok {
				line = lineOf(t.Segment.Start)
			}
			p.links = append(p.links, link{dest: string(n.Destination), line: line})
		case *ast.Heading:
			t := headingText(n, src)
			p.anchors[githubSlug(t)] = true
			p.anchors[mkdocsSlug(t)] = true
		}
		return ast.WalkContinue, nil
	})
	return p
}

// spanText is a code span's text, with its line breaks as spaces.
func spanText(n ast.Node, src []byte) []byte {
	var b bytes.Buffer
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if t, ok := c.(*ast.Text); ok {
			b.Write(t.Segment.Value(src))
			if t.SoftLineBreak() {
				b.WriteByte(' ')
			}
		}
	}
	return b.Bytes()
}

// headingText is a heading's text as both renderers slug it: its text and
// its code spans' text, without the markup.
func headingText(n ast.Node, src []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if t, ok := c.(*ast.Text); entering && ok {
			b.Write(t.Segment.Value(src))
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

// githubSlug is a heading's anchor on GitHub: lower case, punctuation
// other than - and _ dropped, each space a hyphen.
func githubSlug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(s)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// mkdocsSlug is a heading's anchor under MkDocs (Python-Markdown's toc
// slugify): ASCII word characters, spaces and hyphens kept, runs of them
// one hyphen.
func mkdocsSlug(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 128 && (r == '_' || r == '-' || r == ' ' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(r)
		}
	}
	out := strings.ToLower(strings.TrimSpace(b.String()))
	return regexp.MustCompile(`[-\s]+`).ReplaceAllString(out, "-")
}

// root is the module root, two directories up.
func root(t testing.TB) string {
	t.Helper()
	r, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// manual is the README and every page under docs/.
func manual(t testing.TB) []*page {
	t.Helper()
	r := root(t)
	paths := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(r, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, _ := filepath.Rel(r, path)
			paths = append(paths, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) < 30 {
		t.Fatalf("%d pages in the manual; docs/ is missing", len(paths))
	}
	var pages []*page
	for _, p := range paths {
		src, err := os.ReadFile(filepath.Join(r, p))
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, parse(p, src))
	}
	return pages
}
