package touched

import (
	"errors"
	"fmt"
	"go/scanner"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// ErrTooWide means a package's source names more paths than MaxSourcePaths:
// its inputs cannot be written down, and it is not reusable.
var ErrTooWide = errors.New("its source names more paths than a record holds")

// MaxSourcePaths bounds the paths one package's source record holds (the
// files and directories under every directory its literals name).
const MaxSourcePaths = 20000

// Source is the half of a package's run-time inputs the test log cannot
// see. The testing package starts its log inside m.Run, so what a package
// reads in an init function, a package-level variable's initializer or
// TestMain before it calls m.Run is not in it; neither is anything a
// process started from the test binary reads (a worker role). Source
// records, from the module's own Go files a test binary is built from,
// every environment variable and every path of the module that a string
// literal names: what such code could read, found without running it.
//
// It is a superset, never a guess: a literal that happens to look like a
// variable's name or a path costs a value or a file's content in the
// digest, never a missed input. What it cannot see is a name the code
// builds at run time ("SHOP_" + key, a path joined from a variable), which
// docs/concepts/reuse.md lists with the other limits.
//
// A Source reads each file once, however many packages it is in.
type Source struct {
	mu    sync.Mutex
	lits  map[string][]string        // file → its string literals
	trees map[string][]string        // a package's directory, a base and a literal → the names under the path it names
	walks map[string][]string        // an absolute path → the names of it and everything under it
	dirs  map[string]map[string]bool // a directory → its entries' names
}

// NewSource returns an empty Source. Its memory of paths is for one run:
// it never looks at a path twice.
func NewSource() *Source {
	return &Source{lits: map[string][]string{}, trees: map[string][]string{}, walks: map[string][]string{}, dirs: map[string]map[string]bool{}}
}

// Record is what the Go files among files (relative to p.Root,
// slash-separated, as digest.Package.Files lists them; other files are
// skipped) could read outside the test log, for a test binary that runs in
// p.Dir: each variable a literal names but the runner gives (p.Given), and
// each path a literal names relative to p.Dir or to p.Root that exists
// inside the module (not the module root itself, nor a directory holding
// p.Dir): a file as opened, a directory as every directory and file under
// it, each opened, through links inside the module and never into .git.
func (s *Source) Record(p Paths, files []string) (Record, error) {
	env, open := map[string]bool{}, map[string]bool{}
	seen := map[string]bool{}
	for _, f := range files {
		if !strings.HasSuffix(f, ".go") {
			continue
		}
		lits, err := s.literals(filepath.Join(p.Root, filepath.FromSlash(f)))
		if err != nil {
			return Record{}, err
		}
		for _, l := range lits {
			if seen[l] {
				continue
			}
			seen[l] = true
			if envName(l) && !slices.Contains(p.Given, l) {
				env[l] = true
			}
			for _, base := range []string{p.Dir, p.Root} {
				names, err := s.tree(p, base, l)
				if err != nil {
					return Record{}, err
				}
				for _, n := range names {
					open[n] = true
				}
				if len(open) > MaxSourcePaths {
					return Record{}, fmt.Errorf("%w (%d)", ErrTooWide, MaxSourcePaths)
				}
			}
		}
	}
	return Record{Env: sorted(env), Open: sorted(open)}, nil
}

// literals are the string literals of the Go file at path, unquoted.
func (s *Source) literals(path string) ([]string, error) {
	s.mu.Lock()
	lits, ok := s.lits[path]
	s.mu.Unlock()
	if ok {
		return lits, nil
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the literals of %s: %w", path, err)
	}
	fset := token.NewFileSet()
	var sc scanner.Scanner
	sc.Init(fset.AddFile(path, -1, len(src)), src, nil, 0)
	for {
		_, tok, lit := sc.Scan()
		if tok == token.EOF {
			break
		}
		if tok != token.STRING {
			continue
		}
		if v, err := strconv.Unquote(lit); err == nil && v != "" && len(v) < 4096 && !strings.ContainsAny(v, "\x00\n") {
			lits = append(lits, v)
		}
	}
	s.mu.Lock()
	s.lits[path] = lits
	s.mu.Unlock()
	return lits, nil
}

// envName reports whether s could be an environment variable's name as
// code spells one: upper-case letters, digits and underscores, starting
// with a letter.
func envName(s string) bool {
	if len(s) < 2 || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for _, r := range s {
		if !(r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// tree is the names of the path lit names relative to base, when it is
// one of the module's own: the file, or the directory and everything
// under it.
func (s *Source) tree(p Paths, base, lit string) ([]string, error) {
	if base == "" || filepath.IsAbs(lit) || strings.HasPrefix(lit, "~") {
		return nil, nil
	}
	// Most literals are no path: their first element is no entry of base.
	if first, _, _ := strings.Cut(lit, "/"); first != "." && first != ".." && !s.entry(base, first) {
		return nil, nil
	}
	key := p.Dir + "\x00" + base + "\x00" + lit
	s.mu.Lock()
	names, ok := s.trees[key]
	s.mu.Unlock()
	if ok {
		return names, nil
	}
	abs := filepath.Join(base, filepath.FromSlash(lit))
	if abs == p.Root || within(abs, p.Dir) || !within(p.Root, abs) || gitPath(p.Root, abs) {
		abs = ""
	}
	if abs != "" {
		var err error
		if names, err = s.walk(p, abs); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	s.trees[key] = names
	s.mu.Unlock()
	return names, nil
}

// entry reports whether dir has an entry called name, reading each
// directory once.
func (s *Source) entry(dir, name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	names, ok := s.dirs[dir]
	if !ok {
		names = map[string]bool{}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			names[e.Name()] = true
		}
		s.dirs[dir] = names
	}
	return names[name]
}

// walk is the names of abs and everything under it, once per path.
func (s *Source) walk(p Paths, abs string) ([]string, error) {
	s.mu.Lock()
	names, ok := s.walks[abs]
	s.mu.Unlock()
	if ok {
		return names, nil
	}
	if _, err := os.Lstat(abs); err == nil {
		open := map[string]bool{}
		if err := p.walk(abs, open, map[string]bool{}); err != nil {
			return nil, err
		}
		names = sorted(open)
	}
	s.mu.Lock()
	s.walks[abs] = names
	s.mu.Unlock()
	return names, nil
}

// walk adds abs to open, and everything under it when it is a directory,
// following links whose targets are inside the module, each real
// directory once.
func (p Paths) walk(abs string, open map[string]bool, dirs map[string]bool) error {
	n, ok := p.name(abs)
	if !ok || open[n] {
		return nil
	}
	if len(open) >= MaxSourcePaths {
		return fmt.Errorf("%w (%d, under %s)", ErrTooWide, MaxSourcePaths, n)
	}
	open[n] = true
	fi, err := os.Stat(abs)
	if err != nil || !fi.IsDir() {
		return nil
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil || dirs[real] || !within(p.Root, real) || gitPath(p.Root, real) {
		return nil
	}
	dirs[real] = true
	entries, err := os.ReadDir(abs)
	if err != nil {
		return nil
	}
	for _, e := range entries {
		if e.Name() == ".git" {
			continue
		}
		if err := p.walk(filepath.Join(abs, e.Name()), open, dirs); err != nil {
			return err
		}
	}
	return nil
}

// gitPath reports whether abs is the repository's own .git directory or
// under it: the history of the code, never an input of a test.
func gitPath(root, abs string) bool {
	r, ok := rel(root, abs)
	return ok && (r == ".git" || strings.HasPrefix(r, ".git/"))
}

// Merge is the union of two records.
func (r Record) Merge(o Record) Record {
	union := func(a, b []string) []string {
		out := slices.Concat(a, b)
		slices.Sort(out)
		return slices.Compact(out)
	}
	m := Record{Env: union(r.Env, o.Env), Open: union(r.Open, o.Open), Stat: union(r.Stat, o.Stat)}
	m.Stat = slices.DeleteFunc(m.Stat, func(s string) bool { _, found := slices.BinarySearch(m.Open, s); return found })
	return m
}
