package flakes

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Revision is what a run ran from: the module's commit, whether its work
// tree held changes that commit does not (with a digest of them), and the
// build flags (GOFLAGS: a build tag changes the code that runs too).
type Revision struct {
	Commit string `json:"commit,omitempty"`
	Dirty  bool   `json:"dirty,omitempty"`
	// Diff is 12 hex digits of the SHA-256 of git diff HEAD and of the
	// untracked files' names: two runs of the same uncommitted change
	// carry the same digest.
	Diff    string `json:"diff,omitempty"`
	GOFLAGS string `json:"goflags,omitempty"`
}

// Same reports whether r and o may be the same code: the same commit, the
// same uncommitted changes and the same build flags. Outside a git work
// tree (no commit on either side) only the build flags can tell them
// apart.
func (r Revision) Same(o Revision) bool { return r == o }

// Say is the revision in words: "commit 8f3e3cc9a1b2 with uncommitted
// changes (diff 9f2e41c0ab12), GOFLAGS=-tags=x".
func (r Revision) Say() string {
	s := Run{Commit: r.Commit, Dirty: r.Dirty, Diff: r.Diff}.Where()
	if r.GOFLAGS != "" {
		s += ", GOFLAGS=" + r.GOFLAGS
	}
	return s
}

// ReadRevision asks git about the module in dir; outside a repository (or
// without git) it is empty.
func ReadRevision(ctx context.Context, dir string) Revision {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	git := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = dir
		return cmd.Output()
	}
	r := Revision{GOFLAGS: strings.TrimSpace(os.Getenv("GOFLAGS"))}
	head, err := git("rev-parse", "HEAD")
	if err != nil {
		return r
	}
	r.Commit = strings.TrimSpace(string(head))
	status, err := git("status", "--porcelain", "--untracked-files=normal")
	if err != nil || len(bytes.TrimSpace(status)) == 0 {
		return r
	}
	r.Dirty = true
	h := sha256.New()
	if diff, err := git("diff", "HEAD", "--binary"); err == nil {
		h.Write(diff)
	}
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "?? ") {
			h.Write([]byte(l + "\n"))
		}
	}
	r.Diff = hex.EncodeToString(h.Sum(nil))[:12]
	return r
}

// Meta is the revision's part of a run's outcomes.
func (r Revision) Meta(m Meta) Meta {
	m.Commit, m.Dirty, m.Diff = r.Commit, r.Dirty, r.Diff
	return m
}
