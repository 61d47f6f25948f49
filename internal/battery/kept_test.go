package battery

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/flock"
	"github.com/contested/contested/internal/testmodule"
	"github.com/contested/contested/internal/tier"
)

// keptFiles stats the kept binaries of the store by package directory
// name (the part of the file name before the key).
func keptFiles(t *testing.T, store string) map[string]os.FileInfo {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(store, keptDir, "*.test"))
	got := map[string]os.FileInfo{}
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		pkg, _, _ := strings.Cut(filepath.Base(f), "-")
		got[pkg] = fi
	}
	return got
}

// TestTheNextCommandRelinksOnlyWhatChanged: a command after another starts
// from the binaries that one kept; go relinks a package only when its
// sources changed, so the changed code is what runs, and a command still
// running its binary keeps running the one it built.
func TestTheNextCommandRelinksOnlyWhatChanged(t *testing.T) {
	tier.Full(t, "go test of a planted module")
	t.Parallel()
	passing := "package a\nimport \"testing\"\nfunc TestA(t *testing.T) {}\n"
	dir := testmodule.Write(t, map[string]string{
		"go.mod":      "module example.com/kept\n\ngo 1.24\n",
		"a/a_test.go": passing,
		"b/b_test.go": "package b\nimport \"testing\"\nfunc TestB(t *testing.T) {}\n",
	})
	results, store := t.TempDir(), t.TempDir()
	run := func(bins *Binaries) (*Result, string) {
		t.Helper()
		var progress strings.Builder
		res, err := Run(context.Background(), Options{Dir: dir, Args: []string{"-p", "1"}, Out: &progress, Binaries: bins})
		if err != nil {
			t.Fatal(err)
		}
		return res, progress.String()
	}
	open := func() *Binaries {
		t.Helper()
		bins, err := NewBinaries(results, InStore(store))
		if err != nil {
			t.Fatal(err)
		}
		return bins
	}

	first := open()
	if res, out := run(first); !res.OK() || strings.Count(out, "kept for the next") != 2 {
		t.Fatalf("first command: OK %v, want OK with two binaries built and kept:\n%s", res.OK(), out)
	}
	first.Close()
	built := keptFiles(t, store)
	if len(built) != 2 {
		t.Fatalf("kept %v, want a and b", built)
	}

	second := open()
	defer second.Close()
	if res, out := run(second); !res.OK() || !strings.Contains(out, "go relinks the kept one only if its sources changed") {
		t.Fatalf("second command: OK %v, want OK, starting from the kept binaries:\n%s", res.OK(), out)
	}
	for pkg, fi := range keptFiles(t, store) {
		if !os.SameFile(fi, built[pkg]) {
			t.Errorf("%s was relinked though nothing changed", pkg)
		}
	}
	running, _ := filepath.Glob(filepath.Join(second.Dir(), "example_com_kept_a-*.test"))
	if len(running) != 1 {
		t.Fatalf("the second command's binaries of a: %v, want one", running)
	}

	failing := "package a\nimport \"testing\"\nfunc TestA(t *testing.T) { t.Fatal(\"the changed source runs\") }\n"
	if err := os.WriteFile(filepath.Join(dir, "a", "a_test.go"), []byte(failing), 0o644); err != nil {
		t.Fatal(err)
	}
	third := open()
	defer third.Close()
	res, out := run(third)
	if res.OK() || len(res.Failed()) != 1 || res.Failed()[0].Name != "TestA" {
		t.Fatalf("after a's test changed to fail: OK %v, failed %v; a stale binary ran:\n%s", res.OK(), res.Failed(), out)
	}
	now := keptFiles(t, store)
	if os.SameFile(now["example_com_kept_a"], built["example_com_kept_a"]) {
		t.Error("a changed and its kept binary was not relinked")
	}
	if !os.SameFile(now["example_com_kept_b"], built["example_com_kept_b"]) {
		t.Error("b was relinked though only a changed")
	}
	if fi, err := os.Stat(running[0]); err != nil || !os.SameFile(fi, built["example_com_kept_a"]) {
		t.Errorf("the binary a running command holds was replaced under it (%v)", err)
	}
}

// TestKeptBinariesNobodyUsesAreSwept: the sweep removes a kept binary last
// used before the cutoff, unless a build holds its lock, and leaves the
// rest.
func TestKeptBinariesNobodyUsesAreSwept(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	root, err := atomicfile.OpenRoot(store)
	if err != nil {
		t.Fatal(err)
	}
	if err := root.MkdirAll(keptDir); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * keptFor)
	tests := []struct {
		name   string
		used   time.Time
		locked bool
		stays  bool
	}{
		{"used recently", time.Now(), false, true},
		{"unused since before the cutoff", old, false, false},
		{"unused, but a build holds its lock", old, true, true},
	}
	for i, tt := range tests {
		path := filepath.Join(store, keptDir, string(rune('a'+i))+"-0.test")
		if err := os.WriteFile(path, []byte("binary"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, tt.used, tt.used); err != nil {
			t.Fatal(err)
		}
		if tt.locked {
			unlock, err := flock.Lock(context.Background(), path+".lock", 0o644, time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			defer unlock()
		}
	}
	sweepKept(root, time.Now().Add(-keptFor))
	for i, tt := range tests {
		_, err := os.Stat(filepath.Join(store, keptDir, string(rune('a'+i))+"-0.test"))
		if stays := err == nil; stays != tt.stays {
			t.Errorf("%s: after the sweep it is there = %v, want %v", tt.name, stays, tt.stays)
		}
	}
}
