package battery

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contested/contested/internal/testmodule"
	"github.com/contested/contested/internal/tier"
)

// TestAForeignKeptBinaryIsRemovedNeverRun: whatever stands in a kept
// binary's place that this tool did not record there (a foreign binary
// whose build ID was forged to match, a script, a copy of the real one as
// a cache restores it, a link) is removed and said, never run; the package
// is built again, its own test runs, and the command after that starts
// from the new kept binary again: nothing falls back to go test for good.
func TestAForeignKeptBinaryIsRemovedNeverRun(t *testing.T) {
	tier.Full(t, "go test of a planted module")
	t.Parallel()
	dir := testmodule.Write(t, map[string]string{
		"go.mod":      "module example.com/foreign\n\ngo 1.24\n",
		"a/a_test.go": "package a\nimport \"testing\"\nfunc TestA(t *testing.T) {}\n",
	})
	intruder := buildIntruder(t)

	tests := []struct {
		name  string
		plant func(t *testing.T, kept, marker string)
	}{
		{"a foreign binary with the kept one's build ID", func(t *testing.T, kept, marker string) {
			id, err := exec.Command("go", "tool", "buildid", kept).Output()
			if err != nil {
				t.Fatalf("go tool buildid: %v", err)
			}
			forged := filepath.Join(t.TempDir(), "forged")
			build := exec.Command("go", "build", "-o", forged, "-ldflags=-X main.marker="+marker+" -buildid="+strings.TrimSpace(string(id)), ".")
			build.Dir = intruder
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("build the forged binary: %v\n%s", err, out)
			}
			replace(t, kept, forged)
		}},
		{"a shell script", func(t *testing.T, kept, marker string) {
			script := filepath.Join(t.TempDir(), "script")
			if err := os.WriteFile(script, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			replace(t, kept, script)
		}},
		{"the kept binary copied back, as a cache restores it", func(t *testing.T, kept, marker string) {
			b, err := os.ReadFile(kept)
			if err != nil {
				t.Fatal(err)
			}
			copied := filepath.Join(t.TempDir(), "copied")
			if err := os.WriteFile(copied, b, 0o755); err != nil {
				t.Fatal(err)
			}
			replace(t, kept, copied)
		}},
		{"the kept binary rewritten in place, its size and time restored", func(t *testing.T, kept, marker string) {
			rewriteInPlace(t, kept, forgedIntruder(t, intruder, kept, marker))
		}},
		{"a symbolic link to a foreign binary", func(t *testing.T, kept, marker string) {
			if err := os.Remove(kept); err != nil {
				t.Fatal(err)
			}
			bin := filepath.Join(t.TempDir(), "intruder")
			build := exec.Command("go", "build", "-o", bin, "-ldflags=-X main.marker="+marker, ".")
			build.Dir = intruder
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("build: %v\n%s", err, out)
			}
			if err := os.Symlink(bin, kept); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store, marker := t.TempDir(), filepath.Join(t.TempDir(), "ran")
			command := func() (*Result, string) {
				t.Helper()
				bins, err := NewBinaries(t.TempDir(), InStore(store))
				if err != nil {
					t.Fatal(err)
				}
				defer bins.Close()
				var progress strings.Builder
				res, err := Run(context.Background(), Options{Dir: dir, Args: []string{"-run", "^TestA$"}, Out: &progress, Binaries: bins})
				if err != nil {
					t.Fatal(err)
				}
				return res, progress.String()
			}
			if res, out := command(); !res.OK() || !strings.Contains(out, "kept for the next") {
				t.Fatalf("first command: OK %v, want OK with a's binary kept:\n%s", res.OK(), out)
			}
			kept, _ := filepath.Glob(filepath.Join(store, keptDir, "example_com_foreign_a-*.test"))
			if len(kept) != 1 {
				t.Fatalf("kept binaries %v, want one", kept)
			}
			tt.plant(t, kept[0], marker)

			res, out := command()
			if _, err := os.Stat(marker); err == nil {
				t.Fatalf("the planted file ran:\n%s", out)
			}
			if !strings.Contains(out, "removed "+kept[0]) || !strings.Contains(out, "never run") {
				t.Errorf("the command did not say it removed the planted file:\n%s", out)
			}
			if !res.OK() || len(res.Tests) == 0 || res.Tests[0].Name != "TestA" {
				t.Errorf("a's own test did not run through its rebuilt binary: OK %v, tests %v:\n%s", res.OK(), res.Tests, out)
			}
			if !strings.Contains(out, "building a's test binary once for this command, kept for the next") {
				t.Errorf("a's test binary was not built again and kept (the run fell back to go test?):\n%s", out)
			}
			res, out = command()
			if !res.OK() || !strings.Contains(out, "go relinks the kept one only if its sources changed") || strings.Contains(out, "removed") {
				t.Errorf("the command after it did not start from the rebuilt kept binary:\n%s", out)
			}
		})
	}
}

// buildIntruder writes a main package that creates its marker (set with
// -ldflags=-X main.marker=...) when run, and returns its directory.
func buildIntruder(t *testing.T) string {
	t.Helper()
	return testmodule.Write(t, map[string]string{
		"go.mod":  "module example.com/intruder\n\ngo 1.24\n",
		"main.go": "package main\nimport \"os\"\nvar marker string\nfunc main() { os.WriteFile(marker, nil, 0o644); os.Stdout.WriteString(\"PASS\\n\") }\n",
	})
}

// replace puts the file from in kept's place, as another process would.
func replace(t *testing.T, kept, from string) {
	t.Helper()
	if err := os.Rename(from, kept); err != nil {
		t.Fatal(err)
	}
}

// TestABinaryRewrittenInPlaceBetweenTwoRunsIsNeverRun: the file a command
// runs, rewritten in place between two of its runs (same inode, same size,
// the time put back, the build ID forged), fails the check of its content
// just before the second run: it is never run, the output says so, and
// the package is built again and runs its own test.
func TestABinaryRewrittenInPlaceBetweenTwoRunsIsNeverRun(t *testing.T) {
	tier.Full(t, "go test of a planted module")
	t.Parallel()
	dir := testmodule.Write(t, map[string]string{
		"go.mod":      "module example.com/rewritten\n\ngo 1.24\n",
		"a/a_test.go": "package a\nimport \"testing\"\nfunc TestA(t *testing.T) {}\n",
	})
	intruder := buildIntruder(t)
	for _, tt := range []struct {
		name   string
		target func(bins *Binaries, store string) string
	}{
		{"the command's own copy", func(bins *Binaries, _ string) string {
			files, _ := filepath.Glob(filepath.Join(bins.Dir(), "*.test"))
			if len(files) != 1 {
				t.Fatalf("the command's binaries: %v, want one", files)
			}
			return files[0]
		}},
		{"the kept copy it links to", func(_ *Binaries, store string) string {
			files, _ := filepath.Glob(filepath.Join(store, keptDir, "*.test"))
			if len(files) != 1 {
				t.Fatalf("kept binaries: %v, want one", files)
			}
			return files[0]
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			store, marker := t.TempDir(), filepath.Join(t.TempDir(), "ran")
			bins, err := NewBinaries(t.TempDir(), InStore(store))
			if err != nil {
				t.Fatal(err)
			}
			defer bins.Close()
			run := func() (*Result, string) {
				t.Helper()
				var progress strings.Builder
				res, err := Run(context.Background(), Options{Dir: dir, Args: []string{"-run", "^TestA$"}, Out: &progress, Binaries: bins})
				if err != nil {
					t.Fatal(err)
				}
				return res, progress.String()
			}
			if res, out := run(); !res.OK() {
				t.Fatalf("first run failed:\n%s", out)
			}
			target := tt.target(bins, store)
			rewriteInPlace(t, target, forgedIntruder(t, intruder, target, marker))
			res, out := run()
			if _, err := os.Stat(marker); err == nil {
				t.Fatalf("the rewritten binary ran:\n%s", out)
			}
			if !strings.Contains(out, "rewritten since it was built") || !strings.Contains(out, "never run") || !strings.Contains(out, "built again") {
				t.Errorf("the run did not say the binary was refused and built again:\n%s", out)
			}
			if !res.OK() || len(res.Tests) == 0 || res.Tests[0].Name != "TestA" {
				t.Errorf("a's own test did not run through its rebuilt binary: OK %v, tests %v:\n%s", res.OK(), res.Tests, out)
			}
		})
	}
}

// forgedIntruder builds the intruder (which creates marker when run) with
// the build ID of the binary at like, small enough to fit in its place,
// and returns its path.
func forgedIntruder(t *testing.T, intruder, like, marker string) string {
	t.Helper()
	id, err := exec.Command("go", "tool", "buildid", like).Output()
	if err != nil {
		t.Fatalf("go tool buildid: %v", err)
	}
	forged := filepath.Join(t.TempDir(), "forged")
	build := exec.Command("go", "build", "-o", forged, "-ldflags=-s -w -X main.marker="+marker+" -buildid="+strings.TrimSpace(string(id)), ".")
	build.Dir = intruder
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the forged binary: %v\n%s", err, out)
	}
	return forged
}

// rewriteInPlace writes the content of from into target without a new
// inode, padded with zeros to target's size, and puts its times back: the
// identity a record of device, inode, size and time holds is unchanged.
func rewriteInPlace(t *testing.T, target, from string) {
	t.Helper()
	before, err := os.Stat(target)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(b)) > before.Size() {
		t.Fatalf("the intruder (%d bytes) does not fit in %s (%d bytes)", len(b), target, before.Size())
	}
	b = append(b, make([]byte, before.Size()-int64(len(b)))...)
	f, err := os.OpenFile(target, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(target, before.ModTime(), before.ModTime()); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(target)
	if err != nil || !os.SameFile(before, after) || after.Size() != before.Size() || !after.ModTime().Equal(before.ModTime()) {
		t.Fatalf("the rewrite changed the file's identity: %v", err)
	}
}
