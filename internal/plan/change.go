package plan

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/contested/contested/internal/registry"
)

// ErrChange means the change to plan for cannot be worked out: the module
// is not in a git work tree, -since names no revision, or no default
// branch can be found. The command treats it as bad input.
var ErrChange = errors.New("cannot tell what changed")

// The plan's modes.
const (
	// ModeChange plans for what a change could regress.
	ModeChange = "change"
	// ModeProject plans for every claim the registry states.
	ModeProject = "project"
)

// Change is what a plan is for: the files a change touched since a base
// revision, or, project-wide, every surface of the registry.
type Change struct {
	Mode string `json:"mode"`
	// Base is the commit the files are compared with; BaseWhy says how it
	// was chosen ("-since main", "the merge base of HEAD and origin/main").
	Base    string `json:"base,omitempty"`
	BaseWhy string `json:"base_why"`
	// Head is the commit checked out, and Dirty says the work tree holds
	// changes it does not.
	Head  string `json:"head,omitempty"`
	Dirty bool   `json:"dirty,omitempty"`
	// Files are the files touched since Base (committed, uncommitted and
	// untracked), slash-separated, relative to the module root, sorted.
	Files []string `json:"files"`
}

// Changes works out what to plan for in the module rooted at root: with
// all, the whole project; otherwise the files touched since since (a
// revision), or, when since is empty, since the merge base of HEAD with the
// default branch (origin's HEAD, else main, else master). The results
// directory, results (relative to root, "" when outside it), is left out.
func Changes(ctx context.Context, root, since string, all bool, results string) (Change, error) {
	g := git{ctx: ctx, dir: root}
	if all {
		c := Change{Mode: ModeProject, BaseWhy: "-all: every claim of the registry, whatever changed", Files: []string{}}
		c.Head, _ = g.out("rev-parse", "--verify", "--quiet", "HEAD")
		return c, nil
	}
	if _, err := g.out("rev-parse", "--is-inside-work-tree"); err != nil {
		return Change{}, fmt.Errorf("%w: %s is not in a git work tree (%v); give -all for a project-wide plan", ErrChange, root, err)
	}
	c := Change{Mode: ModeChange}
	c.Head, _ = g.out("rev-parse", "--verify", "--quiet", "HEAD")
	switch {
	case since != "":
		if strings.HasPrefix(since, "-") {
			return Change{}, fmt.Errorf("%w: -since %q is not a revision", ErrChange, since)
		}
		base, err := g.out("rev-parse", "--verify", "--quiet", since+"^{commit}")
		if err != nil || base == "" {
			return Change{}, fmt.Errorf("%w: -since %q names no commit of this repository; give a branch, a tag or a commit (git log shows them)", ErrChange, since)
		}
		c.Base, c.BaseWhy = base, "-since "+since
	default:
		branch, err := g.defaultBranch()
		if err != nil {
			return Change{}, err
		}
		base, err := g.out("merge-base", "HEAD", branch)
		if err != nil || base == "" {
			return Change{}, fmt.Errorf("%w: HEAD and %s share no commit; give -since REV, or -all for a project-wide plan", ErrChange, branch)
		}
		c.Base = base
		c.BaseWhy = "the merge base of HEAD and " + branch
		if base == c.Head {
			c.BaseWhy += ", HEAD itself: only what is not committed yet"
		}
	}
	diff, err := g.list("diff", "--name-only", "--relative", "--no-renames", "-z", c.Base, "--")
	if err != nil {
		return Change{}, fmt.Errorf("%w: git diff %s: %v", ErrChange, short(c.Base), err)
	}
	untracked, err := g.list("ls-files", "--others", "--exclude-standard", "-z")
	if err != nil {
		return Change{}, fmt.Errorf("%w: git ls-files: %v", ErrChange, err)
	}
	status, _ := g.list("status", "--porcelain", "-z", "--", ".")
	c.Dirty = len(status) > 0
	var files []string
	for _, f := range slices.Concat(diff, untracked) {
		f = filepath.ToSlash(f)
		if results != "" && (f == results || strings.HasPrefix(f, results+"/")) {
			continue
		}
		files = append(files, f)
	}
	slices.Sort(files)
	c.Files = slices.Compact(files)
	if c.Files == nil {
		c.Files = []string{}
	}
	return c, nil
}

// git runs git in one directory.
type git struct {
	ctx context.Context
	dir string
}

// run runs git and returns its output; a failure carries git's own words.
func (g git) run(args ...string) ([]byte, error) {
	cmd := exec.CommandContext(g.ctx, "git", args...)
	cmd.Dir = g.dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return nil, fmt.Errorf("%v: %s", err, msg)
		}
		return nil, err
	}
	return b, nil
}

// out runs git and returns its output, trimmed.
func (g git) out(args ...string) (string, error) {
	b, err := g.run(args...)
	return strings.TrimSpace(string(b)), err
}

// list runs git with -z output and returns its entries; for status
// --porcelain each entry keeps its two status letters.
func (g git) list(args ...string) ([]string, error) {
	b, err := g.run(args...)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range strings.Split(string(b), "\x00") {
		if e != "" {
			out = append(out, e)
		}
	}
	return out, nil
}

// defaultBranch is the branch a change is planned against: origin's HEAD
// when it is known, else the first of origin/main, main, origin/master,
// master that exists.
func (g git) defaultBranch() (string, error) {
	if b, err := g.out("symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD"); err == nil && b != "" {
		return b, nil
	}
	for _, b := range []string{"origin/main", "main", "origin/master", "master"} {
		if _, err := g.out("rev-parse", "--verify", "--quiet", b+"^{commit}"); err == nil {
			return b, nil
		}
	}
	return "", fmt.Errorf("%w: no default branch to compare with (no origin/HEAD, main or master); give -since REV, or -all for a project-wide plan", ErrChange)
}

// fileAt returns the content of path (relative to the module root) at
// revision rev, and whether it existed there.
func (g git) fileAt(rev, path string) ([]byte, bool) {
	cmd := exec.CommandContext(g.ctx, "git", "show", rev+":./"+filepath.ToSlash(path))
	cmd.Dir = g.dir
	b, err := cmd.Output()
	return b, err == nil
}

// short clips a commit id for a sentence.
func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

// RegistryAt is the registry file rel (relative to the module root) as it
// was at revision base: nil when the change did not touch it, an empty
// registry when it did not exist there or does not parse there (every
// surface then counts as changed).
func RegistryAt(ctx context.Context, root string, c Change, rel string) *registry.Registry {
	if c.Mode != ModeChange || !slices.Contains(c.Files, rel) {
		return nil
	}
	b, ok := git{ctx: ctx, dir: root}.fileAt(c.Base, rel)
	if !ok {
		return &registry.Registry{}
	}
	old, err := registry.Parse(rel+"@"+short(c.Base), b)
	if err != nil {
		return &registry.Registry{}
	}
	return old
}
