// Package digest computes the input digest of each package of a module's
// battery from what the go command builds its test binary from, so that
// validate can tell a package whose outcome could have changed from one
// whose inputs are exactly those of an earlier certified run.
//
// A package's digest covers, for its test binary and every package linked
// into it, as the go command resolves them in this build environment
// (go.work above the module, replace directives, vendor/, build tags and
// constraints):
//
//   - the content of every file the go command compiles, embeds or links
//     from any directory that can change under the same module version:
//     the main module, workspace modules, modules replaced by a directory,
//     vendor/. That is every Go file (those a build constraint leaves out
//     too, so an edited constraint changes the digest however the file was
//     edited), cgo, C, C++, assembly and syso file, every embedded file,
//     and the headers a C file or cgo preamble includes from such a
//     directory or from an -I directory its flags name;
//   - for any other module, its path, version and go.sum checksum, which
//     the go command verifies;
//   - the module graph: every go.mod of those modules, go.sum, the go.work
//     in use and its go.work.sum, vendor/modules.txt;
//   - the package's testdata directory, followed through links;
//   - the build environment (Go version, GOOS, GOARCH, GOEXPERIMENT,
//     CGO_ENABLED, GOFLAGS and its build tags, CGO_CFLAGS and the like)
//     and the code that runs validate (the packages the module's magefiles
//     link).
//
// Every file is hashed by content on every Load: no entry of any cache
// stands on file times. Listing and hashing this repository takes well
// under a second warm (BenchmarkDigestOfThisRepository). What a test
// reads at run time is the other half of its inputs: package touched
// records it from the test binary's own log.
package digest

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// ErrList means go list could not list the module's packages.
var ErrList = errors.New("list the module's packages")

// Package is one package of the battery and its input digest.
type Package struct {
	ImportPath string `json:"import_path"`
	Dir        string `json:"dir"`
	// Digest is the hex SHA-256 of everything the package's test binary
	// and its testdata are made of (see the package comment).
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
	// GoDirs are the go command's own directories (GOROOT, GOMODCACHE,
	// GOCACHE): what a test reads there is the Go version's, a verified
	// module's or the build's, never a run-time input of its own.
	GoDirs []string
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
	env   []string
	reads func(dir string) []string
}

// WithEnv is the environment go list and go env run with (the battery's),
// instead of this process's.
func WithEnv(env []string) Option { return func(c *config) { c.env = env } }

// WithReads names what each package's tests read at run time beyond what
// the test binary's log records (a file a child process reads, say):
// reads gets the package's directory relative to the module root ("." or
// slash-separated, "e2e/stages") and returns paths relative to the root,
// files or directories. Their contents join the package's digest, as its
// testdata directory's do.
func WithReads(reads func(dir string) []string) Option {
	return func(c *config) { c.reads = reads }
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

// envVars are the variables of the build environment a digest covers by
// value. GOWORK is covered by the content of the file it names, and
// GOMODCACHE only decides which directories are a verified module's.
var envVars = []string{"GOVERSION", "GOOS", "GOARCH", "GOEXPERIMENT", "CGO_ENABLED", "GOFLAGS", "GOAMD64", "GOARM64", "GOARM", "GO386", "GOTOOLCHAIN",
	"CGO_CFLAGS", "CGO_CPPFLAGS", "CGO_CXXFLAGS", "CGO_LDFLAGS", "CGO_FFLAGS", "CC", "CXX"}

// Load computes the digest of every package of the module rooted at dir.
func Load(ctx context.Context, dir string, opts ...Option) (*Module, error) {
	c := config{env: os.Environ()}
	for _, o := range opts {
		o(&c)
	}
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	// The go command's three answers are asked at once: each costs a
	// process start and a load of the module, and none needs another.
	var (
		ge              buildEnv
		pkgs, tool      *listing
		envErr, listErr error
		toolErr         error
		wg              sync.WaitGroup
	)
	fi, statErr := os.Stat(filepath.Join(root, "magefiles"))
	magefiles := statErr == nil && fi.IsDir()
	wg.Add(2)
	go func() { defer wg.Done(); ge, envErr = goEnv(ctx, root, c.env) }()
	go func() { defer wg.Done(); pkgs, listErr = runList(ctx, root, c.env, []string{"-test", "./..."}) }()
	if magefiles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tool, toolErr = runList(ctx, root, c.env, []string{"-tags=mage", "./magefiles"})
		}()
	}
	wg.Wait()
	if err := cmp.Or(envErr, listErr, toolErr); err != nil {
		return nil, err
	}
	h := newHasher(ge.modCache)
	m := &Module{Root: root, Env: ge.sum, GoDirs: ge.dirs}
	if magefiles {
		var paths, sums []string
		for ip := range tool.byPath {
			paths = append(paths, ip)
		}
		slices.Sort(paths)
		for _, ip := range paths {
			s, err := tool.inputs(tool.byPath[ip], h)
			if err != nil {
				return nil, err
			}
			sums = append(sums, ip, s)
		}
		m.Tool = Sum(sums...)
	}

	graph, err := moduleGraph(root, ge.work, pkgs, h)
	if err != nil {
		return nil, err
	}
	read := map[string]string{} // path → its digest, once per Load
	for _, p := range pkgs.byPath {
		if p.ForTest != "" || strings.HasSuffix(p.ImportPath, ".test") || p.Module == nil || !p.Module.Main {
			continue
		}
		m.Path = p.Module.Path
		d, tests, err := pkgs.packageDigest(p, h)
		if err != nil {
			return nil, err
		}
		parts := []string{"contested/digest@2", ge.sum, m.Tool, graph, d}
		if c.reads != nil {
			r, err := reads(root, p.Dir, c.reads, h, read)
			if err != nil {
				return nil, err
			}
			parts = append(parts, r...)
		}
		m.Packages = append(m.Packages, Package{ImportPath: p.ImportPath, Dir: p.Dir, Tests: tests, Files: pkgs.moduleFiles(root, p), Digest: Sum(parts...)})
	}
	slices.SortFunc(m.Packages, func(a, b Package) int { return strings.Compare(a.ImportPath, b.ImportPath) })
	return m, nil
}

// moduleGraph is the digest of the module graph: go.mod and go.sum of
// the main module, the go.work in use (found above the module as the go
// command finds it) and its sum, vendor/modules.txt, and the go.mod of
// every module whose files are hashed by content.
func moduleGraph(root, work string, l *listing, h *hasher) (string, error) {
	files := []string{filepath.Join(root, "go.mod"), filepath.Join(root, "go.sum"), filepath.Join(root, "vendor", "modules.txt")}
	if work != "" && work != "off" {
		files = append(files, work, strings.TrimSuffix(work, ".work")+".work.sum")
	}
	for _, p := range l.byPath {
		if p.Module != nil && h.local(p) {
			m := p.Module
			if m.Replace != nil {
				m = m.Replace
			}
			if m.GoMod != "" && !h.inModCache(m.GoMod) {
				files = append(files, m.GoMod)
			}
		}
	}
	slices.Sort(files)
	files = slices.Compact(files)
	parts := make([]string, 0, 2*len(files))
	for _, f := range files {
		s, err := h.file(f)
		if err != nil {
			return "", err
		}
		// Named relative to the module root where it is inside it, so the
		// same tree checked out elsewhere has the same digest.
		parts = append(parts, h.name(root, f), s)
	}
	return Sum(parts...), nil
}

// reads is the digest parts of what a package in dir reads at run time
// beyond it: each path the caller names, and its contents (a directory's
// tree, a file's hash, or "absent"), followed through links. done keeps
// each path's digest for the other packages that read it.
func reads(root, dir string, of func(string) []string, h *hasher, done map[string]string) ([]string, error) {
	rel, err := filepath.Rel(root, dir)
	if err != nil {
		return nil, err
	}
	var parts []string
	for _, p := range of(filepath.ToSlash(rel)) {
		sum, ok := done[p]
		if !ok {
			sum, err = h.path(filepath.Join(root, filepath.FromSlash(p)))
			if err != nil {
				return nil, err
			}
			done[p] = sum
		}
		parts = append(parts, "reads", p, sum)
	}
	return parts, nil
}

// buildEnv is what go env says of the build environment.
type buildEnv struct {
	sum      string // the digest of envVars' values
	work     string // GOWORK: the go.work file in use, "" or "off" for none
	modCache string // GOMODCACHE
	dirs     []string
}

// flagFiles is the digest of the files GOFLAGS names, whose content the
// build reads though no listing shows them: a -modfile, and an -overlay
// with every file it puts in place of another.
func flagFiles(root, goflags string) (string, error) {
	var parts []string
	for _, f := range strings.Fields(goflags) {
		name, value, ok := strings.Cut(strings.TrimLeft(f, "-"), "=")
		if !ok || name != "modfile" && name != "overlay" {
			continue
		}
		if !filepath.IsAbs(value) {
			value = filepath.Join(root, value)
		}
		sum, err := hashFile(value)
		if err != nil {
			return "", err
		}
		parts = append(parts, name, sum)
		if name == "modfile" {
			sumFile := strings.TrimSuffix(value, ".mod") + ".sum"
			s, err := hashFile(sumFile)
			if err != nil {
				return "", err
			}
			parts = append(parts, "modfile.sum", s)
			continue
		}
		var o struct{ Replace map[string]string }
		if b, err := os.ReadFile(value); err == nil && json.Unmarshal(b, &o) == nil {
			keys := make([]string, 0, len(o.Replace))
			for k := range o.Replace {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				s := "deleted"
				if r := o.Replace[k]; r != "" {
					if !filepath.IsAbs(r) {
						r = filepath.Join(filepath.Dir(value), r)
					}
					if s, err = hashFile(r); err != nil {
						return "", err
					}
				}
				parts = append(parts, "overlay", k, s)
			}
		}
	}
	if len(parts) == 0 {
		return "", nil
	}
	return "files " + Sum(parts...) + "\n", nil
}

// goEnv asks the go command for the build environment.
func goEnv(ctx context.Context, root string, env []string) (buildEnv, error) {
	cmd := exec.CommandContext(ctx, "go", append([]string{"env", "-json", "GOWORK", "GOMODCACHE", "GOROOT", "GOCACHE"}, envVars...)...)
	cmd.Dir, cmd.Env = root, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return buildEnv{}, fmt.Errorf("%w: go env: %v: %s", ErrList, err, strings.TrimSpace(stderr.String()))
	}
	var vars map[string]string
	if err := json.Unmarshal(out, &vars); err != nil {
		return buildEnv{}, fmt.Errorf("%w: go env: %v", ErrList, err)
	}
	var b strings.Builder
	for _, k := range envVars {
		fmt.Fprintf(&b, "%s=%s\n", k, vars[k])
	}
	files, err := flagFiles(root, vars["GOFLAGS"])
	if err != nil {
		return buildEnv{}, err
	}
	b.WriteString(files)
	var dirs []string
	for _, k := range []string{"GOROOT", "GOMODCACHE", "GOCACHE"} {
		if vars[k] != "" && vars[k] != "off" {
			dirs = append(dirs, vars[k])
		}
	}
	return buildEnv{sum: Sum(b.String()), work: vars["GOWORK"], modCache: vars["GOMODCACHE"], dirs: dirs}, nil
}
