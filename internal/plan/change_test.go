package plan

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/contested/contested/internal/testmodule"
)

// repo makes a git repository in a temporary directory whose module is
// in sub (a module inside a larger repository, as testdata/adopter is),
// with one commit on main, and returns the repository and the module.
func repo(t *testing.T, sub string) (string, string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: apt-get install git")
	}
	dir := t.TempDir()
	mod := filepath.Join(dir, sub)
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GIT_AUTHOR_NAME", "t")
	t.Setenv("GIT_AUTHOR_EMAIL", "t@example.com")
	t.Setenv("GIT_COMMITTER_NAME", "t")
	t.Setenv("GIT_COMMITTER_EMAIL", "t@example.com")
	writeFile(t, mod, "go.mod", "module example.com/bank\n")
	writeFile(t, mod, "deposit/deposit.go", "package deposit\n")
	writeFile(t, mod, "contested-surfaces.toml", depositRegistry)
	writeFile(t, mod, ".gitignore", "test-results/\n")
	run(t, dir, "init", "-q", "-b", "main")
	run(t, dir, "add", "-A")
	run(t, dir, "commit", "-qm", "one")
	return dir, mod
}

func writeFile(t *testing.T, dir, rel, content string) {
	t.Helper()
	testmodule.WriteFile(t, filepath.Join(dir, filepath.FromSlash(rel)), content)
}

func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestChangesAreWhatDiffersFromTheMergeBase: a feature branch's plan
// covers what it committed since it left main, what is not committed yet
// and what is untracked, relative to the module, never the results
// directory; -since compares with another revision; -all with none.
func TestChangesAreWhatDiffersFromTheMergeBase(t *testing.T) {
	ctx := context.Background()
	dir, mod := repo(t, "svc")
	base := run(t, dir, "rev-parse", "HEAD")
	run(t, dir, "checkout", "-qb", "feature")
	writeFile(t, mod, "deposit/deposit.go", "package deposit\n\nfunc Deposit() {}\n")
	run(t, dir, "commit", "-qam", "two")
	writeFile(t, mod, "contested-surfaces.toml", depositRegistry+"\n# edited\n")
	writeFile(t, mod, "lock/lease.go", "package lock\n")
	writeFile(t, mod, "test-results/plan.md", "# old plan\n")
	writeFile(t, dir, "other/outside.go", "package other\n")

	c, err := Changes(ctx, mod, "", false, "test-results")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"contested-surfaces.toml", "deposit/deposit.go", "lock/lease.go"}
	if !slices.Equal(c.Files, want) || c.Base != base || !c.Dirty || !strings.Contains(c.BaseWhy, "merge base of HEAD and main") {
		t.Errorf("Changes = %+v, want files %v from %s, dirty", c, want, base)
	}
	old := RegistryAt(ctx, mod, c, "contested-surfaces.toml")
	if old == nil || len(old.Surfaces) != 2 {
		t.Errorf("the registry at the base: %+v", old)
	}

	c, err = Changes(ctx, mod, "HEAD", false, "test-results")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Files, []string{"contested-surfaces.toml", "lock/lease.go"}) || c.BaseWhy != "-since HEAD" {
		t.Errorf("-since HEAD: %+v", c)
	}
	if RegistryAt(ctx, mod, Change{Mode: ModeChange, Base: c.Base, Files: []string{"lock/lease.go"}}, "contested-surfaces.toml") != nil {
		t.Errorf("an untouched registry has an old version")
	}

	c, err = Changes(ctx, mod, "", true, "test-results")
	if err != nil || c.Mode != ModeProject || len(c.Files) != 0 {
		t.Errorf("-all: %+v, %v", c, err)
	}
}

// TestChangesThatCannotBeWorkedOutAreBadInput: a revision that names no
// commit, a repository without a default branch and a module outside git
// each say what to give instead.
func TestChangesThatCannotBeWorkedOutAreBadInput(t *testing.T) {
	ctx := context.Background()
	dir, mod := repo(t, ".")
	tests := []struct {
		name, dir, since, says string
		setup                  func()
	}{
		{"a revision that is no commit", mod, "no-such-branch", "names no commit", nil},
		{"a revision that is a flag", mod, "--all", "is not a revision", nil},
		{"no default branch", mod, "", "no default branch", func() { run(t, dir, "branch", "-qm", "main", "trunk") }},
		{"not a git work tree", t.TempDir(), "", "give -all", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.setup != nil {
				tt.setup()
			}
			_, err := Changes(ctx, tt.dir, tt.since, false, "")
			if !errors.Is(err, ErrChange) || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("Changes = %v, want ErrChange saying %q", err, tt.says)
			}
		})
	}
}
