package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/contested/contested/internal/envvar"
)

// decoyDir is a directory outside any results directory holding files a run must never touch
// (what validate deleted when test-results/fault was a link to a project's root), and a check
// that they are byte for byte intact with nothing added.
func decoyDir(t *testing.T) (string, func()) {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"config.json":  `{"keep": true}` + "\n",
		"package.json": `{"name": "decoy"}` + "\n",
		"notes.md":     "not ours\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, func() {
		t.Helper()
		got := map[string]string{}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatalf("decoy directory: %v", err)
		}
		for _, e := range entries {
			b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			got[e.Name()] = string(b)
		}
		if diff := cmp.Diff(files, got); diff != "" {
			t.Errorf("the decoy directory changed (-want +got):\n%s", diff)
		}
	}
}

func TestPrepareResultsDir(t *testing.T) {
	mod := t.TempDir()
	os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module example.com/m\n"), 0o644)
	file := filepath.Join(t.TempDir(), "results")
	os.WriteFile(file, []byte("x"), 0o644)
	readOnly := filepath.Join(t.TempDir(), "ro")
	os.Mkdir(readOnly, 0o555)
	t.Cleanup(func() { os.Chmod(readOnly, 0o755) })
	decoy, intact := decoyDir(t)
	link := filepath.Join(t.TempDir(), "results")
	os.Symlink(decoy, link)
	holdsLink := filepath.Join(t.TempDir(), "results")
	os.MkdirAll(holdsLink, 0o755)
	os.Symlink(decoy, filepath.Join(holdsLink, "fault"))
	home := filepath.Join(t.TempDir(), "home", "someone")
	os.MkdirAll(home, 0o755)
	t.Setenv("HOME", home)

	tests := []struct {
		name, dir, want string
	}{
		{"the file system root", "/", "file system root"},
		{"a system directory", "/etc", "system directory"},
		{"another system directory", "/usr", "system directory"},
		{"/home itself", "/home", "system directory"},
		{"inside /proc", "/proc/self", "kernel file system"},
		{"the home directory", home, "home directory"},
		{"the module root", mod, "module root itself"},
		{"above the module root", filepath.Dir(mod), "contains the module root"},
		{"relative", "test-results", "not an absolute path"},
		{"a file", file, "is a file, not a directory"},
		{"read-only", readOnly, "read-only"},
		{"a symbolic link", link, "symbolic link to " + decoy},
		{"holding a symbolic link", holdsLink, filepath.Join(holdsLink, "fault") + " is a symbolic link"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PrepareResultsDir(tc.dir, mod)
			if !errors.Is(err, ErrBadResultsDir) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), envvar.ResultsDir+" to") && !strings.Contains(err.Error(), "remove the link") {
				t.Errorf("PrepareResultsDir(%s) = %q, %v; want ErrBadResultsDir saying %q and what to do", tc.dir, got, err, tc.want)
			}
		})
	}
	intact()

	t.Run("a missing directory is created", func(t *testing.T) {
		want := filepath.Join(mod, "test-results")
		got, err := PrepareResultsDir(want, mod)
		if err != nil || got != want {
			t.Fatalf("PrepareResultsDir = %q, %v; want %q", got, err, want)
		}
		if fi, err := os.Lstat(want); err != nil || !fi.IsDir() {
			t.Errorf("not created: %v", err)
		}
		if entries, _ := os.ReadDir(want); len(entries) != 0 {
			t.Errorf("the write probe was left behind: %v", entries)
		}
	})
	t.Run("links above it are resolved once", func(t *testing.T) {
		real := t.TempDir()
		via := filepath.Join(t.TempDir(), "via")
		os.Symlink(real, via)
		got, err := PrepareResultsDir(filepath.Join(via, "results"), mod)
		if want := filepath.Join(real, "results"); err != nil || got != want {
			t.Errorf("PrepareResultsDir = %q, %v; want %q", got, err, want)
		}
	})
}
