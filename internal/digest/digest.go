// Package digest computes the input digest of each package of a module's
// battery: what its test binary is built from and what its tests read, so
// that validate can tell a package whose outcome could have changed from
// one whose inputs are exactly those of an earlier certified run.
//
// A package's digest covers, for its test binary and every package linked
// into it: the content of every Go, cgo, assembly, syso and embedded file
// of the module's own packages and of any module replaced by a local
// directory; the path, version and checksum of every other module; the
// module graph (go.mod and go.sum); the package's testdata directory; the
// build environment (Go version, GOOS, GOARCH, GOEXPERIMENT, CGO_ENABLED,
// GOFLAGS and its build tags); and the code that runs validate itself (the
// packages the module's magefiles link). It does not see what a test reads
// outside its own directory at run time (files elsewhere on disk, the
// network, environment variables other than those above), nor the
// standard library's sources beyond the Go version that names them.
//
// Listing a module's packages costs seconds, so the listing is cached,
// keyed by the identity (size, modification and change time, inode) of
// every file and directory it came from; and so are file hashes, keyed by
// the same identity. Both live in the user's cache directory, outside the
// module, so a warm digest of an unchanged module reads no file contents.
package digest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/contested/contested/internal/private"
)

// ErrList means go list could not list the module's packages.
var ErrList = errors.New("list the module's packages")

// Package is one package of the battery and its input digest.
type Package struct {
	ImportPath string `json:"import_path"`
	Dir        string `json:"dir"`
	// Digest is the hex SHA-256 of everything the package's test binary
	// and its tests' own files are made of (see the package comment).
	Digest string `json:"digest"`
	// Tests are the top-level test functions its test files declare.
	Tests []string `json:"tests,omitempty"`
	// Files are the module's own files its outcome stands on: every
	// source file of the module its test binary is built from, and its
	// testdata directory (ending in "/"), slash-separated and relative to
	// the module root, sorted. A change to one of them reaches the package.
	Files []string `json:"files,omitempty"`
}

// Module is the digest of every package of a module.
type Module struct {
	Path string
	Root string
	// Packages are the module's packages (./...), sorted by import path.
	Packages []Package
	// Env is the digest of the build environment alone.
	Env string
	// Tool is the digest of the code that runs validate: the packages the
	// module's magefiles link (empty when it has none).
	Tool string
	// Relisted says the package listing was not in the cache (or was
	// stale) and go list ran.
	Relisted bool
	// CacheRefused says why the caches were not used, when they were not:
	// their directory is not this user's own (another user could have
	// written what the digests would then trust).
	CacheRefused string
}

// Package returns the package with the import path, if the module has it.
func (m *Module) Package(importPath string) (Package, bool) {
	i, ok := slices.BinarySearchFunc(m.Packages, importPath, func(p Package, s string) int { return strings.Compare(p.ImportPath, s) })
	if !ok {
		return Package{}, false
	}
	return m.Packages[i], true
}

// Option configures Load.
type Option func(*config)

type config struct {
	cacheDir string
	env      []string
	reads    func(dir string) []string
}

// WithCacheDir keeps the caches in dir instead of the user's cache
// directory (os.UserCacheDir()/contested/digest); "" keeps none.
func WithCacheDir(dir string) Option { return func(c *config) { c.cacheDir = dir } }

// WithEnv is the environment go list and go env run with (the battery's),
// instead of this process's.
func WithEnv(env []string) Option { return func(c *config) { c.env = env } }

// WithReads names what each package's tests read at run time beyond its
// own directory: reads gets the package's directory relative to the
// module root ("." or slash-separated, "e2e/stages") and returns paths
// relative to the root, files or directories. Their contents join the
// package's digest, as its testdata directory's do.
func WithReads(reads func(dir string) []string) Option {
	return func(c *config) { c.reads = reads }
}

// DefaultCacheDir is where the caches live unless WithCacheDir says
// otherwise: under the user's cache directory, never in the module.
func DefaultCacheDir() string {
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "contested", "digest")
}

// Sum folds parts into one hex SHA-256, each part length-prefixed so that
// no two different lists of parts fold alike.
func Sum(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s\n", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// envVars are the variables of the build environment a digest covers.
var envVars = []string{"GOVERSION", "GOOS", "GOARCH", "GOEXPERIMENT", "CGO_ENABLED", "GOFLAGS", "GOAMD64", "GOARM64", "GOARM", "GO386", "GOWORK", "GOTOOLCHAIN"}

// Load computes the digest of every package of the module rooted at dir.
func Load(ctx context.Context, dir string, opts ...Option) (*Module, error) {
	c := config{cacheDir: DefaultCacheDir(), env: os.Environ()}
	for _, o := range opts {
		o(&c)
	}
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	var refused string
	if c.cacheDir != "" {
		if err := private.MkdirAll(c.cacheDir); err != nil {
			refused, c.cacheDir = err.Error(), ""
		}
	}
	goEnv, err := goEnv(ctx, root, c.env)
	if err != nil {
		return nil, err
	}
	envSum := Sum(goEnv)
	hashes := openHashes(c.cacheDir)
	defer hashes.save()
	m := &Module{Root: root, Env: envSum, CacheRefused: refused}

	pkgs, relisted, err := cachedList(ctx, c, root, envSum, hashes, []string{"-test", "./..."})
	if err != nil {
		return nil, err
	}
	m.Relisted = relisted
	if fi, err := os.Stat(filepath.Join(root, "magefiles")); err == nil && fi.IsDir() {
		tool, relisted, err := cachedList(ctx, c, root, envSum, hashes, []string{"-tags=mage", "./magefiles"})
		if err != nil {
			return nil, err
		}
		m.Relisted = m.Relisted || relisted
		var parts []string
		for _, p := range tool.byPath {
			parts = append(parts, p.ImportPath)
		}
		slices.Sort(parts)
		var sums []string
		for _, ip := range parts {
			s, err := tool.inputs(tool.byPath[ip], hashes)
			if err != nil {
				return nil, err
			}
			sums = append(sums, ip, s)
		}
		m.Tool = Sum(sums...)
	}

	graph, err := hashes.files(root, []string{"go.mod", "go.sum", "go.work", "go.work.sum"})
	if err != nil {
		return nil, err
	}
	read := map[string]string{} // path → its digest, once per Load
	for _, p := range pkgs.byPath {
		if p.ForTest != "" || strings.HasSuffix(p.ImportPath, ".test") || p.Module == nil || !p.Module.Main {
			continue
		}
		m.Path = p.Module.Path
		d, tests, err := pkgs.packageDigest(p, hashes)
		if err != nil {
			return nil, err
		}
		files := pkgs.moduleFiles(root, p)
		parts := []string{"contested/digest@1", envSum, m.Tool, graph, d}
		if c.reads != nil {
			r, err := reads(root, p.Dir, c.reads, hashes, read)
			if err != nil {
				return nil, err
			}
			parts = append(parts, r...)
		}
		m.Packages = append(m.Packages, Package{ImportPath: p.ImportPath, Dir: p.Dir, Tests: tests, Files: files, Digest: Sum(parts...)})
	}
	slices.SortFunc(m.Packages, func(a, b Package) int { return strings.Compare(a.ImportPath, b.ImportPath) })
	return m, nil
}

// reads is the digest parts of what a package in dir reads at run time
// beyond it: each path the caller names, and its contents (a directory's
// tree, a file's hash, or "absent"). done keeps each path's digest for
// the other packages that read it.
func reads(root, dir string, of func(string) []string, h *hashes, done map[string]string) ([]string, error) {
	rel, err := filepath.Rel(root, dir)
	if err != nil {
		return nil, err
	}
	var parts []string
	for _, p := range of(filepath.ToSlash(rel)) {
		sum, ok := done[p]
		if !ok {
			abs := filepath.Join(root, filepath.FromSlash(p))
			fi, err := os.Lstat(abs)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				sum, err = "absent", nil
			case err != nil:
				return nil, err
			case fi.IsDir():
				sum, err = h.tree(abs)
			default:
				sum, err = h.hash(abs)
			}
			if err != nil {
				return nil, err
			}
			done[p] = sum
		}
		parts = append(parts, "reads", p, sum)
	}
	return parts, nil
}

// goEnv is the build environment the digest covers, as one string.
func goEnv(ctx context.Context, root string, env []string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", append([]string{"env", "-json"}, envVars...)...)
	cmd.Dir, cmd.Env = root, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%w: go env: %v: %s", ErrList, err, strings.TrimSpace(stderr.String()))
	}
	var vars map[string]string
	if err := json.Unmarshal(out, &vars); err != nil {
		return "", fmt.Errorf("%w: go env: %v", ErrList, err)
	}
	var b strings.Builder
	for _, k := range envVars {
		fmt.Fprintf(&b, "%s=%s\n", k, vars[k])
	}
	return b.String(), nil
}

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
	SysoFiles       []string
	EmbedFiles      []string
	TestGoFiles     []string
	XTestGoFiles    []string
	TestEmbedFiles  []string
	XTestEmbedFiles []string
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
const fields = "ImportPath,Dir,Standard,ForTest,Module,GoFiles,CgoFiles,CFiles,CXXFiles,HFiles,SFiles,SysoFiles,EmbedFiles,TestGoFiles,XTestGoFiles,TestEmbedFiles,XTestEmbedFiles,Deps,Error"

// listing is a module's go list output, by import path.
type listing struct {
	byPath map[string]*listed
}

// local reports whether p's files are read from a directory that can
// change under the same version: the main module, a module replaced by a
// directory, or no module at all. Any other module is named by its
// version and checksum.
func (p *listed) local() bool {
	if p.Standard {
		return false
	}
	m := p.Module
	if m == nil || m.Main {
		return true
	}
	if m.Replace != nil {
		return m.Replace.Version == ""
	}
	return m.Version == ""
}

// sourceFiles are every file of p a build or its tests read.
func (p *listed) sourceFiles() []string {
	var all []string
	for _, l := range [][]string{p.GoFiles, p.CgoFiles, p.CFiles, p.CXXFiles, p.HFiles, p.SFiles, p.SysoFiles, p.EmbedFiles, p.TestGoFiles, p.XTestGoFiles, p.TestEmbedFiles, p.XTestEmbedFiles} {
		all = append(all, l...)
	}
	slices.Sort(all)
	return slices.Compact(all)
}

// inputs is the digest of one listed package's own inputs (not its deps).
func (l *listing) inputs(p *listed, h *hashes) (string, error) {
	if p.Standard {
		return "std", nil
	}
	if p.Error != nil {
		return Sum("error", p.Error.Err), nil
	}
	if !p.local() {
		m := p.Module
		if m.Replace != nil {
			m = m.Replace
		}
		return Sum("module", m.Path, m.Version, m.Sum), nil
	}
	if strings.HasSuffix(p.ImportPath, ".test") && p.ForTest == "" {
		return "testmain", nil // generated from its deps' test names, which are hashed
	}
	return h.files(p.Dir, p.buildFiles())
}

// buildFiles are the files of p that its build in this listing reads: its
// sources, and its test files only where p is the package under test (a
// dependency's tests are not linked into another package's test binary).
func (p *listed) buildFiles() []string {
	all := slices.Concat(p.GoFiles, p.CgoFiles, p.CFiles, p.CXXFiles, p.HFiles, p.SFiles, p.SysoFiles, p.EmbedFiles)
	if p.ForTest != "" {
		name, _, _ := strings.Cut(p.ImportPath, " ")
		switch name {
		case p.ForTest:
			all = slices.Concat(all, p.TestGoFiles, p.TestEmbedFiles)
		case p.ForTest + "_test":
			all = slices.Concat(all, p.XTestGoFiles, p.XTestEmbedFiles)
		}
	}
	slices.Sort(all)
	return slices.Compact(all)
}

// testFunc finds the top-level tests a test file declares.
var testFunc = regexp.MustCompile(`(?m)^func (Test[A-Z_0-9]\w*|Test)\(\w+ \*testing\.T\)`)

// packageDigest is the digest of p's test binary (or of p and its deps
// when it has no tests) and its testdata, and the tests it declares.
func (l *listing) packageDigest(p *listed, h *hashes) (string, []string, error) {
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
	parts := make([]string, 0, 2*len(deps)+1)
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
	td, err := h.tree(filepath.Join(p.Dir, "testdata"))
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
		if rel, err := filepath.Rel(root, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			out = append(out, filepath.ToSlash(rel))
		}
	}
	for _, d := range append(slices.Clone(top.Deps), top.ImportPath, p.ImportPath) {
		dp, ok := l.byPath[d]
		if !ok || !dp.local() || dp.Dir == "" || dp.ForTest == "" && strings.HasSuffix(dp.ImportPath, ".test") {
			continue // the generated test main is no file of the module
		}
		for _, f := range dp.buildFiles() {
			add(filepath.Join(dp.Dir, f))
		}
	}
	if fi, err := os.Stat(filepath.Join(p.Dir, "testdata")); err == nil && fi.IsDir() {
		add(filepath.Join(p.Dir, "testdata"))
		out[len(out)-1] += "/"
	}
	slices.Sort(out)
	return slices.Compact(out)
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
