package digest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// listed is one package as go list -json gives it.
type listed struct {
	ImportPath      string
	Dir             string
	Standard        bool
	ForTest         string
	Module          *listedModule
	GoFiles         []string
	CgoFiles        []string
	CFiles          []string
	CXXFiles        []string
	HFiles          []string
	SFiles          []string
	FFiles          []string
	SwigFiles       []string
	SwigCXXFiles    []string
	SysoFiles       []string
	EmbedFiles      []string
	TestGoFiles     []string
	XTestGoFiles    []string
	TestEmbedFiles  []string
	XTestEmbedFiles []string
	CgoCFLAGS       []string
	CgoCPPFLAGS     []string
	CgoCXXFLAGS     []string
	Deps            []string
	Error           *struct{ Err string }
}

type listedModule struct {
	Path    string
	Version string
	Sum     string
	Main    bool
	Dir     string
	GoMod   string
	Replace *listedModule
}

// fields are the fields go list is asked for.
const fields = "ImportPath,Dir,Standard,ForTest,Module,GoFiles,CgoFiles,CFiles,CXXFiles,HFiles,SFiles,FFiles,SwigFiles,SwigCXXFiles,SysoFiles,EmbedFiles," +
	"TestGoFiles,XTestGoFiles,TestEmbedFiles,XTestEmbedFiles,CgoCFLAGS,CgoCPPFLAGS,CgoCXXFLAGS,Deps,Error"

// listing is a module's go list output, by import path.
type listing struct {
	byPath map[string]*listed
}

// runList runs go list over args in root.
func runList(ctx context.Context, root string, env, args []string) (*listing, error) {
	cmd := exec.CommandContext(ctx, "go", append([]string{"list", "-e", "-deps", "-json=" + fields}, args...)...)
	cmd.Dir, cmd.Env = root, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%w: go list %s: %v: %s", ErrList, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	l := &listing{byPath: map[string]*listed{}}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("%w: go list: %v", ErrList, err)
		}
		l.byPath[p.ImportPath] = &p
	}
	return l, nil
}

// inputs is the digest of one listed package's own inputs (not its deps).
func (l *listing) inputs(p *listed, h *hasher) (string, error) {
	if p.Standard {
		return "std", nil
	}
	if p.Error != nil {
		return Sum("error", p.Error.Err), nil
	}
	if strings.HasSuffix(p.ImportPath, ".test") && p.ForTest == "" {
		return "testmain", nil // generated from its deps' test names, which are hashed
	}
	if !h.local(p) {
		m := p.Module
		if m.Replace != nil {
			m = m.Replace
		}
		return Sum("module", m.Path, m.Version, m.Sum), nil
	}
	files := p.buildFiles()
	parts := make([]string, 0, 2*len(files)+4)
	for _, f := range files {
		s, err := h.file(filepath.Join(p.Dir, f))
		if err != nil {
			return "", err
		}
		parts = append(parts, f, s)
	}
	inc, err := h.includes(p)
	if err != nil {
		return "", err
	}
	return Sum(append(parts, inc...)...), nil
}

// buildFiles are the files of p whose content its build reads: its
// sources, and its test files only where p is the package under test (a
// dependency's tests are not linked into another package's test binary).
// A file a build constraint leaves out is not among them; go list, run
// afresh for every digest, says which those are, so an edit to a
// constraint moves the file in or out however it was made.
func (p *listed) buildFiles() []string {
	all := slices.Concat(p.GoFiles, p.CgoFiles, p.CFiles, p.CXXFiles, p.HFiles, p.SFiles, p.FFiles, p.SwigFiles, p.SwigCXXFiles,
		p.SysoFiles, p.EmbedFiles)
	if p.ForTest != "" {
		name, _, _ := strings.Cut(p.ImportPath, " ")
		switch name {
		case p.ForTest:
			all = slices.Concat(all, p.TestGoFiles, p.TestEmbedFiles)
		case p.ForTest + "_test":
			all = slices.Concat(all, p.XTestGoFiles, p.XTestEmbedFiles)
		}
	}
	// A name the go command gives as a path (its generated files) is none
	// of the package's.
	all = slices.DeleteFunc(all, filepath.IsAbs)
	slices.Sort(all)
	return slices.Compact(all)
}

// testFunc finds the top-level tests a test file declares.
var testFunc = regexp.MustCompile(`(?m)^func (Test[A-Z_0-9]\w*|Test)\(\w+ \*testing\.T\)`)

// packageDigest is the digest of p's test binary (or of p and its deps
// when it has no tests) and its testdata, and the tests it declares.
func (l *listing) packageDigest(p *listed, h *hasher) (string, []string, error) {
	root := p
	if t, ok := l.byPath[p.ImportPath+".test"]; ok {
		root = t
	}
	deps := append(slices.Clone(root.Deps), root.ImportPath)
	if root != p {
		deps = append(deps, p.ImportPath)
	}
	slices.Sort(deps)
	deps = slices.Compact(deps)
	parts := make([]string, 0, 2*len(deps)+2)
	for _, d := range deps {
		dp, ok := l.byPath[d]
		if !ok {
			parts = append(parts, d, "unlisted")
			continue
		}
		s, err := l.inputs(dp, h)
		if err != nil {
			return "", nil, err
		}
		parts = append(parts, d, s)
	}
	td, err := h.path(filepath.Join(p.Dir, "testdata"))
	if err != nil {
		return "", nil, err
	}
	parts = append(parts, "testdata", td)
	var tests []string
	for _, f := range slices.Concat(p.TestGoFiles, p.XTestGoFiles) {
		b, err := os.ReadFile(filepath.Join(p.Dir, f))
		if err != nil {
			return "", nil, err
		}
		for _, m := range testFunc.FindAllSubmatch(b, -1) {
			tests = append(tests, string(m[1]))
		}
	}
	slices.Sort(tests)
	return Sum(parts...), slices.Compact(tests), nil
}

// moduleFiles are the files under root that p's test binary is built
// from, and p's testdata directory, relative to root (see Package.Files).
func (l *listing) moduleFiles(root string, p *listed) []string {
	top := p
	if t, ok := l.byPath[p.ImportPath+".test"]; ok {
		top = t
	}
	var out []string
	add := func(abs string) {
		if rel, ok := inside(root, abs); ok {
			out = append(out, rel)
		}
	}
	for _, d := range append(slices.Clone(top.Deps), top.ImportPath, p.ImportPath) {
		dp, ok := l.byPath[d]
		if !ok || dp.Standard || dp.Dir == "" || dp.ForTest == "" && strings.HasSuffix(dp.ImportPath, ".test") {
			continue // the generated test main is no file of the module
		}
		for _, f := range dp.buildFiles() {
			add(filepath.Join(dp.Dir, f))
		}
	}
	if fi, err := os.Stat(filepath.Join(p.Dir, "testdata")); err == nil && fi.IsDir() {
		if rel, ok := inside(root, filepath.Join(p.Dir, "testdata")); ok {
			out = append(out, rel+"/")
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// inside is path relative to root, slash-separated, when path is under
// root.
func inside(root, path string) (string, bool) {
	rel, err := filepath.Rel(root, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}
