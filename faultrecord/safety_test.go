package faultrecord

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/contested/contested/internal/atomicfile"
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

// TestNothingThroughASymlinkedFaultDir runs validate's sequence (purge, stamp, a leg's record,
// the paired verification and its report) with the fault directory a link to decoys: each
// step refuses, naming the link, and the decoys survive.
func TestNothingThroughASymlinkedFaultDir(t *testing.T) {
	decoy, intact := decoyDir(t)
	root := t.TempDir()
	dir := FaultDir(root)
	if err := os.Symlink(decoy, dir); err != nil {
		t.Fatal(err)
	}
	refused := func(step string, err error) {
		t.Helper()
		if !errors.Is(err, atomicfile.ErrSymlink) || !strings.Contains(err.Error(), dir) {
			t.Errorf("%s through a linked fault directory: err = %v, want a refusal naming %s", step, err, dir)
		}
	}
	refused("purge", Purge(dir))
	refused("stamp", WriteStamp(dir, "run"))
	rec, err := NewRecorder("p", WithResultsDir(root), WithRunID("run"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = rec.Write(sampleRecord())
	refused("record", err)
	rep, err := Verify(t.Context(), baseOptions(dir))
	if !errors.Is(err, ErrRefused) || !errors.Is(err, ErrResultsDir) {
		t.Errorf("verify: err = %v, want a refusal (ErrResultsDir)", err)
	}
	refused("verify's report", err)
	if rep == nil || rep.Phases[1].OK || !strings.Contains(rep.Phases[1].Detail, "symbolic link") {
		t.Errorf("verify: phase 2 = %+v, want it refused for the link", rep.Phases[1])
	}
	refused("report save", rep.Save())
	recs, _, err := ReadRecords(dir)
	if len(recs) != 0 {
		t.Errorf("ReadRecords read %d records through the link", len(recs))
	}
	refused("read records", err)
	intact()
}

// TestNothingThroughASymlinkedResultsRoot: the same with the results root itself a link.
func TestNothingThroughASymlinkedResultsRoot(t *testing.T) {
	decoy, intact := decoyDir(t)
	os.Mkdir(filepath.Join(decoy, FaultDirName), 0o755)
	defer func() { os.Remove(filepath.Join(decoy, FaultDirName)) }()
	root := filepath.Join(t.TempDir(), "test-results")
	if err := os.Symlink(decoy, root); err != nil {
		t.Fatal(err)
	}
	dir := FaultDir(root)
	for step, err := range map[string]error{"purge": Purge(dir), "stamp": WriteStamp(dir, "run")} {
		if !errors.Is(err, atomicfile.ErrSymlink) {
			t.Errorf("%s under a linked results root: %v, want ErrSymlink", step, err)
		}
	}
	if _, err := os.ReadDir(filepath.Join(decoy, FaultDirName)); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(filepath.Join(decoy, FaultDirName)); len(entries) != 0 {
		t.Errorf("wrote into the link's target: %v", entries)
	}
	os.Remove(filepath.Join(decoy, FaultDirName))
	intact()
}

// TestVerifyNeverWaitsOnOrFollowsARecord puts a FIFO, a link to /dev/zero, a link to a valid
// record elsewhere and a linked stamp among valid records: the verification ends (a blocking
// open of the FIFO would hang it until go test's timeout; reading /dev/zero would exhaust
// memory), names each, and refuses.
func TestVerifyNeverWaitsOnOrFollowsARecord(t *testing.T) {
	dir := layout(t, fixture{sets: []string{"good"}, stamp: true})
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.json")); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	good, _ := filepath.Glob(filepath.Join("testdata", "records", "good", "*.json"))
	b, _ := os.ReadFile(good[0])
	os.WriteFile(filepath.Join(elsewhere, "r.json"), b, 0o644)
	if err := os.Symlink(filepath.Join(elsewhere, "r.json"), filepath.Join(dir, "linked.json")); err != nil {
		t.Fatal(err)
	}

	opts := baseOptions(dir)
	opts.Mode = Standalone
	rep, err := Verify(t.Context(), opts)
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("err = %v, want ErrRefused", err)
	}
	wantUnreadable(t, rep, "fifo.json", "FIFO")
	wantUnreadable(t, rep, "zero.json", "symbolic link")
	wantUnreadable(t, rep, "linked.json", "symbolic link")
	if diff := cmp.Diff([]int{2}, failedPhases(rep)); diff != "" {
		t.Errorf("failed phases (-want +got):\n%s", diff)
	}

	recs, unreadable, err := ReadRecords(dir)
	if err != nil || len(recs) != len(good) {
		t.Errorf("ReadRecords: %d records, %v; want the %d good ones", len(recs), err, len(good))
	}
	var names []string
	for _, u := range unreadable {
		names = append(names, u.File)
	}
	if diff := cmp.Diff([]string{"fifo.json", "linked.json", "zero.json"}, names); diff != "" {
		t.Errorf("ReadRecords unreadable (-want +got):\n%s", diff)
	}

	// A stamp that is a link is not taken as this run's reference.
	stamp := filepath.Join(dir, StampName)
	os.Rename(stamp, filepath.Join(elsewhere, StampName))
	os.Symlink(filepath.Join(elsewhere, StampName), stamp)
	rep, _ = Verify(t.Context(), opts)
	if rep.Phases[0].OK || !strings.Contains(rep.Phases[0].Detail, "symbolic link") {
		t.Errorf("phase 1 with a linked stamp = %+v, want refused", rep.Phases[0])
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
			if !errors.Is(err, ErrBadResultsDir) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), EnvResultsDir+" to") && !strings.Contains(err.Error(), "remove the link") {
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

func TestNewRecorderRefusesAPlaceThatIsNeverAResultsDir(t *testing.T) {
	for _, root := range []string{"/", "/etc"} {
		if _, err := NewRecorder("p", WithResultsDir(root)); !errors.Is(err, ErrBadResultsDir) {
			t.Errorf("NewRecorder(%s) = %v, want ErrBadResultsDir", root, err)
		}
	}
}

func TestSafeFileName(t *testing.T) {
	long := strings.Repeat("TestVeryLongSubtestName/", 40)
	tests := []struct {
		name, in string
		same     bool // returned unchanged
	}{
		{"a clean name is kept", "TestA_b", true},
		{"a slash is digested", "TestA/b", false},
		{"a package-qualified id", "example.com/m/store.TestX/reset", false},
		{"a leading dot", ".hidden", false},
		{"empty", "", false},
		{"too long", long, false},
		{"a clean name that ends like a digest", "TestA_b-0123456789ab", false},
	}
	seen := map[string]string{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := SafeFileName(tc.in)
			if (got == tc.in) != tc.same {
				t.Errorf("SafeFileName(%q) = %q; unchanged %v, want %v", tc.in, got, got == tc.in, tc.same)
			}
			if len(got) > maxFileName || SafeName(got) != got || strings.HasPrefix(got, ".") {
				t.Errorf("SafeFileName(%q) = %q: %d bytes, want at most %d of [A-Za-z0-9._-], no leading dot", tc.in, got, len(got), maxFileName)
			}
			if other, dup := seen[got]; dup {
				t.Errorf("SafeFileName(%q) = SafeFileName(%q) = %q", tc.in, other, got)
			}
			seen[got] = tc.in
		})
	}
	// Names that differ only past the cap, or only in what SafeName erases, stay apart.
	pairs := [][2]string{
		{"TestA/b", "TestA_b"},
		{"TestA/b", "TestA:b"},
		{long + "x", long + "y"},
		{"TestA_b-" + SafeFileName("TestA/b")[len("TestA_b-"):], "TestA/b"},
	}
	for _, p := range pairs {
		if a, b := SafeFileName(p[0]), SafeFileName(p[1]); a == b {
			t.Errorf("SafeFileName(%q) = SafeFileName(%q) = %q", p[0], p[1], a)
		}
	}
}
