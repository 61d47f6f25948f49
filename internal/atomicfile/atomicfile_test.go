package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

func TestWriteReplacesWholeAndLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "report.json")
	if err := WriteJSON(p, map[string]int{"a": 1}); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, []byte("second\n")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "second\n" {
		t.Fatalf("content %q, %v", b, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Errorf("the directory holds %d entries, want only the file: %v", len(entries), entries)
	}
}

func TestWriteIntoAFileFails(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	os.WriteFile(blocker, nil, 0o644)
	if err := Write(filepath.Join(blocker, "x"), []byte("x")); err == nil {
		t.Fatal("writing under a regular file succeeded")
	}
}

// decoys makes a directory outside the root holding two files that must
// survive whatever happens under the root, and returns a check of them.
func decoys(t *testing.T) (string, func()) {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{"config.json": `{"keep": true}`, "package.json": `{"name": "decoy"}`}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, func() {
		t.Helper()
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatalf("decoy directory: %v", err)
		}
		if len(entries) != len(files) {
			t.Errorf("decoy directory holds %d entries, want the %d decoys only: %v", len(entries), len(files), entries)
		}
		for name, body := range files {
			if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != body {
				t.Errorf("decoy %s: %q, %v; want it intact", name, b, err)
			}
		}
	}
}

func TestNothingGoesThroughASymlinkedComponent(t *testing.T) {
	tests := []struct {
		name string
		op   func(r *Root) error
	}{
		{"write", func(r *Root) error { return r.Write("fault/fault-report.json", []byte("{}")) }},
		{"write json", func(r *Root) error { return r.WriteJSON("fault/sub/x.json", 1) }},
		{"create", func(r *Root) error {
			f, err := r.Create("fault/go-test.json")
			if err == nil {
				f.Close()
			}
			return err
		}},
		{"mkdir", func(r *Root) error { return r.MkdirAll("fault/new") }},
		{"read", func(r *Root) error { _, err := r.ReadFile("fault/config.json", MaxArtifact); return err }},
		{"open dir", func(r *Root) error {
			d, err := r.OpenDir("fault")
			if err == nil {
				d.Close()
			}
			return err
		}},
		{"remove", func(r *Root) error { return r.Remove("fault/config.json") }},
		{"remove all below", func(r *Root) error { return r.RemoveAll("fault/package.json") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			decoy, intact := decoys(t)
			root := t.TempDir()
			if err := os.Symlink(decoy, filepath.Join(root, "fault")); err != nil {
				t.Fatal(err)
			}
			r, err := OpenRoot(root)
			if err != nil {
				t.Fatal(err)
			}
			err = tc.op(r)
			if !errors.Is(err, ErrSymlink) {
				t.Errorf("%s through a symlinked fault/: err = %v, want ErrSymlink", tc.name, err)
			}
			if err != nil && !strings.Contains(err.Error(), filepath.Join(root, "fault")) {
				t.Errorf("error %q does not name the link", err)
			}
			intact()
		})
	}
}

func TestRemoveAllUnlinksLinksWithoutFollowing(t *testing.T) {
	decoy, intact := decoys(t)
	root := t.TempDir()
	tree := filepath.Join(root, "reruns", "TestX", "run-1")
	if err := os.MkdirAll(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(tree, "a.json"), []byte("{}"), 0o644)
	for _, l := range []struct{ at, to string }{
		{filepath.Join(tree, "to-dir"), decoy},
		{filepath.Join(tree, "to-file"), filepath.Join(decoy, "config.json")},
		{filepath.Join(root, "reruns", "TestX", "fault"), decoy},
	} {
		if err := os.Symlink(l.to, l.at); err != nil {
			t.Fatal(err)
		}
	}
	r, err := OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.RemoveAll("reruns/TestX"); err != nil {
		t.Fatalf("RemoveAll: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(root, "reruns", "TestX")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("reruns/TestX is still there: %v", err)
	}
	intact()
	if err := r.RemoveAll("reruns/missing/deeper"); err != nil {
		t.Errorf("RemoveAll of a missing path: %v, want nil", err)
	}
	if err := r.RemoveAll(""); !errors.Is(err, ErrEscapes) {
		t.Errorf("RemoveAll of the root itself: %v, want ErrEscapes", err)
	}
}

func TestWriteAndCreateReplaceALinkInsteadOfWritingThroughIt(t *testing.T) {
	decoy, intact := decoys(t)
	root := t.TempDir()
	for _, name := range []string{"validate.json", "go-test.json"} {
		if err := os.Symlink(filepath.Join(decoy, "config.json"), filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	r, _ := OpenRoot(root)
	if err := r.Write("validate.json", []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	f, err := r.Create("go-test.json")
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("stream\n")
	f.Close()
	for name, want := range map[string]string{"validate.json": "new\n", "go-test.json": "stream\n"} {
		fi, err := os.Lstat(filepath.Join(root, name))
		if err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s: %v, %v; want a regular file in the link's place", name, fi, err)
		}
		if b, _ := os.ReadFile(filepath.Join(root, name)); string(b) != want {
			t.Errorf("%s = %q, want %q", name, b, want)
		}
	}
	intact()
}

func TestRootItselfMustNotBeALink(t *testing.T) {
	decoy, intact := decoys(t)
	link := filepath.Join(t.TempDir(), "test-results")
	if err := os.Symlink(decoy, link); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenRoot(link); !errors.Is(err, ErrSymlink) {
		t.Errorf("OpenRoot of a link: %v, want ErrSymlink", err)
	}
	if err := Write(filepath.Join(link, "config.json"), []byte("x")); !errors.Is(err, ErrSymlink) {
		t.Errorf("Write into a linked directory: %v, want ErrSymlink", err)
	}
	// A Root opened before the swap is refused after it, too.
	real := filepath.Join(t.TempDir(), "results")
	os.Mkdir(real, 0o755)
	r, err := OpenRoot(real)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(real)
	os.Symlink(decoy, real)
	if err := r.Write("config.json", []byte("x")); !errors.Is(err, ErrSymlink) {
		t.Errorf("Write after the root became a link: %v, want ErrSymlink", err)
	}
	intact()
}

func TestPathsStayInside(t *testing.T) {
	r, _ := OpenRoot(t.TempDir())
	for _, rel := range []string{"../x", "a/../../x", "/etc/passwd", ""} {
		if err := r.Write(rel, []byte("x")); !errors.Is(err, ErrEscapes) {
			t.Errorf("Write(%q) = %v, want ErrEscapes", rel, err)
		}
	}
	d, err := r.OpenDir("")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, name := range []string{"..", "a/b", "."} {
		if _, _, err := d.ReadFile(name, nil, 10); !errors.Is(err, ErrEscapes) {
			t.Errorf("Dir.ReadFile(%q) = %v, want ErrEscapes", name, err)
		}
	}
}

func TestTheLoaderRefusesWhatIsNotAnArtifact(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no FIFOs or /dev/zero")
	}
	root := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(root, "fifo.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Symlink("/dev/zero", filepath.Join(root, "zero.json"))
	os.Symlink("/etc/passwd", filepath.Join(root, "passwd.json"))
	os.Mkdir(filepath.Join(root, "dir.json"), 0o755)
	os.WriteFile(filepath.Join(root, "big.json"), make([]byte, 2048), 0o644)
	os.WriteFile(filepath.Join(root, "ok.json"), []byte(`{"a": 1}`), 0o644)
	tests := []struct {
		name string
		want error
	}{
		// A FIFO opened blocking would wait for a writer forever: this
		// test would hang until go test's own timeout.
		{"fifo.json", ErrNotRegular},
		{"zero.json", ErrSymlink},
		{"passwd.json", ErrSymlink},
		{"dir.json", ErrNotRegular},
		{"big.json", ErrTooLarge},
		{"missing.json", fs.ErrNotExist},
	}
	r, _ := OpenRoot(root)
	d, err := r.OpenDir("")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := r.ReadFile(tc.name, 1024); !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.name) {
				t.Errorf("Root.ReadFile: %v, want %v naming the file", err, tc.want)
			}
			if _, _, err := d.ReadFile(tc.name, nil, 1024); !errors.Is(err, tc.want) {
				t.Errorf("Dir.ReadFile: %v, want %v", err, tc.want)
			}
		})
	}
	var v map[string]int
	if err := r.ReadJSON("ok.json", &v, 1024); err != nil || v["a"] != 1 {
		t.Errorf("ReadJSON of a good file: %v, %v", v, err)
	}
	if err := r.ReadJSON("fifo.json", &v, 1024); !errors.Is(err, ErrNotRegular) {
		t.Errorf("ReadJSON of a FIFO: %v", err)
	}
	if _, err := Load(filepath.Join(root, "zero.json"), 1024); !errors.Is(err, ErrSymlink) {
		t.Errorf("Load of a link to /dev/zero: %v", err)
	}
}

func TestCustomTempPatternAndKeepOnError(t *testing.T) {
	root := t.TempDir()
	r, _ := OpenRoot(root)
	if err := r.Write("fault/a.json", []byte("x"), TempPattern(".record-*.tmp")); err != nil {
		t.Fatal(err)
	}
	// The target is a non-empty directory: the rename fails, and the
	// temporary file stays as evidence.
	os.MkdirAll(filepath.Join(root, "fault", "b.json", "x"), 0o755)
	if err := r.Write("fault/b.json", []byte("x"), TempPattern(".record-*.tmp"), KeepTempOnError()); err == nil {
		t.Fatal("a write over a directory succeeded")
	}
	temps, _ := filepath.Glob(filepath.Join(root, "fault", ".record-*.tmp"))
	if len(temps) != 1 {
		t.Errorf("temporary files left: %v, want one", temps)
	}
	fi, err := os.Stat(filepath.Join(root, "fault", "a.json"))
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("a.json: %v, %v; want mode 0644", fi, err)
	}
}
