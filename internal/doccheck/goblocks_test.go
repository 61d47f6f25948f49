package doccheck

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/contested/contested/internal/tier"
)

// maxFragments bounds the Go blocks marked <!-- fragment: why -->: a
// fragment is not compiled, so they stay few, each with its reason.
const maxFragments = 4

// goSources are the Go files a block may quote: the module's own, and the
// adopter fixture's (a module of its own that the e2e tests build and
// run); no other testdata, which holds files broken on purpose.
func goSources(t testing.TB) []string {
	t.Helper()
	r := root(t)
	var srcs []string
	err := filepath.WalkDir(r, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && path != r && (strings.HasPrefix(d.Name(), ".") || d.Name() == "test-results"):
			return filepath.SkipDir
		case d.IsDir() && d.Name() == "testdata" && path != filepath.Join(r, "testdata"):
			return filepath.SkipDir
		case d.IsDir() && filepath.Dir(path) == filepath.Join(r, "testdata") && d.Name() != "adopter":
			return filepath.SkipDir
		case strings.HasSuffix(path, ".go"):
			b, err := os.ReadFile(path)
			srcs = append(srcs, string(b))
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return srcs
}

// goFile is a Go block that is a whole file, to be built.
type goFile struct {
	page  string
	line  int
	code  string
	pkg   string
	tests bool // it imports testing: a _test.go file
}

var packageClause = regexp.MustCompile(`(?m)^package (\w+)\s*$`)

// checkGoBlocks sorts a page's Go blocks: each must be quoted verbatim from
// a Go source, or be a whole file (returned, to be built), or be marked a
// fragment with a reason. It returns the problems and the files.
func checkGoBlocks(p *page, sources []string) (problems []string, files []goFile, fragments int) {
	for _, b := range p.blocks {
		if b.lang != "go" {
			continue
		}
		if b.marked {
			fragments++
			if b.fragment == "" {
				problems = append(problems, fmt.Sprintf("%s:%d: a Go block marked a fragment without a reason (<!-- fragment: why it cannot compile -->)", p.path, b.line))
			}
			continue
		}
		quoted := false
		for _, s := range sources {
			if strings.Contains(s, b.code) {
				quoted = true
				break
			}
		}
		if quoted {
			continue
		}
		if m := packageClause.FindStringSubmatch(b.code); m != nil && !strings.Contains(b.code, "//go:build") {
			files = append(files, goFile{page: p.path, line: b.line, code: b.code + "\n", pkg: m[1], tests: strings.Contains(b.code, `"testing"`)})
			continue
		}
		first, _, _ := strings.Cut(b.code, "\n")
		problems = append(problems, fmt.Sprintf("%s:%d: a Go block that is not quoted verbatim from a Go file of the module, not a whole file to build, and not marked <!-- fragment: why -->: it begins %q", p.path, b.line, first))
	}
	return problems, files, fragments
}

// buildFiles compiles the whole-file blocks, each page's files of one
// package together, as packages of the module (through go build's overlay,
// so nothing is written into the tree) with their tests, and returns the
// compiler's complaints, each naming the page and the block's line.
func buildFiles(t testing.TB, files []goFile) []string {
	t.Helper()
	r := root(t)
	tmp := t.TempDir()
	overlay := map[string]string{}
	where := map[string]string{} // overlay file name → page:line
	var pkgs []string
	groups := map[string]int{}
	for i, f := range files {
		key := f.page + "\x00" + f.pkg
		n, ok := groups[key]
		if !ok {
			n = len(groups)
			groups[key] = n
			pkgs = append(pkgs, fmt.Sprintf("./internal/doccheck/blocks/b%d", n))
		}
		name := fmt.Sprintf("block%d.go", i)
		if f.tests {
			name = fmt.Sprintf("block%d_test.go", i)
		}
		real := filepath.Join(tmp, name)
		if err := os.WriteFile(real, []byte(f.code), 0o644); err != nil {
			t.Fatal(err)
		}
		overlay[filepath.Join(r, "internal", "doccheck", "blocks", fmt.Sprintf("b%d", n), name)] = real
		where[name] = fmt.Sprintf("%s:%d", f.page, f.line)
	}
	if len(pkgs) == 0 {
		return nil
	}
	o, _ := json.Marshal(map[string]any{"Replace": overlay})
	ov := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(ov, o, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "bin")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", append([]string{"test", "-vet=off", "-c", "-o", out, "-overlay", ov}, pkgs...)...)
	cmd.Dir = r
	msg, err := cmd.CombinedOutput()
	if err == nil {
		return nil
	}
	var problems []string
	for _, l := range strings.Split(string(msg), "\n") {
		for name, at := range where {
			if i := strings.Index(l, name+":"); i >= 0 {
				problems = append(problems, fmt.Sprintf("%s (a whole-file Go block): does not compile: %s", at, l[i:]))
			}
		}
	}
	if len(problems) == 0 {
		problems = append(problems, fmt.Sprintf("building the whole-file Go blocks: %v\n%s", err, msg))
	}
	return problems
}

// TestEveryGoBlockCompiles: every Go code block of the README and docs/ is
// quoted verbatim from a Go file of the module (which go vet and go test
// compile), or is a whole file that this test builds with its package, or
// is one of a few fragments marked with their reason.
func TestEveryGoBlockCompiles(t *testing.T) {
	tier.Full(t, "go build of every Go block of the docs")
	sources := goSources(t)
	var files []goFile
	fragments, blocks := 0, 0
	for _, p := range manual(t) {
		problems, f, n := checkGoBlocks(p, sources)
		for _, pr := range problems {
			t.Error(pr)
		}
		files, fragments = append(files, f...), fragments+n
		for _, b := range p.blocks {
			if b.lang == "go" {
				blocks++
			}
		}
	}
	if blocks < 20 {
		t.Errorf("%d Go blocks in the manual; the walk-through and the cookbook alone have more", blocks)
	}
	if fragments > maxFragments {
		t.Errorf("%d Go blocks are marked fragments; at most %d: quote the code from a file the module compiles instead", fragments, maxFragments)
	}
	if len(files) == 0 {
		t.Error("no whole-file Go block was built; the walk-through has three")
	}
	for _, p := range buildFiles(t, files) {
		t.Error(p)
	}
}

// TestTheGoBlockCheckCanFail: a block quoted from nowhere, a fragment
// without a reason, and a whole file that does not compile are each
// refused, naming the page and line.
func TestTheGoBlockCheckCanFail(t *testing.T) {
	src := []byte("# x\n\n```go\nfunc nowhere() { /* in no file */ }\n```\n\n<!-- fragment -->\n```go\nx := 1\n```\n\n```go\npackage broken\n\nfunc f() int { return \"not an int\" }\n```\n")
	problems, files, fragments := checkGoBlocks(parse("bad.md", src), []string{"package x"})
	if len(problems) != 2 || !strings.Contains(problems[0], "bad.md:3: a Go block that is not quoted") || !strings.Contains(problems[1], "without a reason") || fragments != 1 {
		t.Errorf("problems %q (fragments %d); want the unquoted block and the fragment without a reason", problems, fragments)
	}
	if len(files) != 1 {
		t.Fatalf("files %v; want the whole file", files)
	}
	built := buildFiles(t, files)
	if len(built) != 1 || !strings.Contains(built[0], "bad.md:12") || !strings.Contains(built[0], "does not compile") {
		t.Errorf("build problems %q; want the broken file, at bad.md:12", built)
	}
}
