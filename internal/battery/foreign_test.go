package battery

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contested/contested/internal/testmodule"
)

// TestAForeignKeptBinaryIsRemovedNeverRun: whatever stands in a kept
// binary's place that this tool did not record there (a foreign binary
// whose build ID was forged to match, a script, a copy of the real one as
// a cache restores it, a link) is removed and said, never run; the package
// is built again, its own test runs, and the command after that starts
// from the new kept binary again: nothing falls back to go test for good.
func TestAForeignKeptBinaryIsRemovedNeverRun(t *testing.T) {
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
