package flakes

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestTheRevisionSaysWhetherTheTreeWasDirty: a clean work tree is its
// commit; an uncommitted change (or an untracked file) makes it dirty,
// with a digest that is the same for the same change and differs for
// another; GOFLAGS is part of it.
func TestTheRevisionSaysWhetherTheTreeWasDirty(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("GOFLAGS", "")
	git("init", "-q")
	write("lock.go", "package lock\n")
	git("add", ".")
	git("commit", "-q", "-m", "one")
	ctx := context.Background()
	clean := ReadRevision(ctx, dir)
	if len(clean.Commit) != 40 || clean.Dirty || clean.Diff != "" {
		t.Fatalf("a clean tree: %+v", clean)
	}
	write("lock.go", "package lock\n\nconst defect = true\n")
	dirty := ReadRevision(ctx, dir)
	if dirty.Commit != clean.Commit || !dirty.Dirty || len(dirty.Diff) != 12 {
		t.Fatalf("an edited tree: %+v", dirty)
	}
	if again := ReadRevision(ctx, dir); again != dirty {
		t.Errorf("the same change read twice: %+v and %+v", dirty, again)
	}
	write("new.go", "package lock\n")
	if other := ReadRevision(ctx, dir); other.Diff == dirty.Diff || !other.Dirty {
		t.Errorf("an untracked file does not change the digest: %+v", other)
	}
	if dirty.Same(clean) || !clean.Same(clean) {
		t.Error("Same does not tell a dirty tree from its commit")
	}
	t.Setenv("GOFLAGS", "-tags=defect")
	if tagged := ReadRevision(ctx, dir); tagged.GOFLAGS != "-tags=defect" || tagged.Same(ReadRevision(ctx, dir)) == false {
		t.Errorf("GOFLAGS: %+v", tagged)
	}
	if outside := ReadRevision(ctx, t.TempDir()); outside.Commit != "" || outside.Dirty {
		t.Errorf("outside a work tree: %+v", outside)
	}
}
