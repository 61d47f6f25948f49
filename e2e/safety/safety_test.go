package safety

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contested/contested/e2e/internal/e2etest"
)

// decoys is a directory outside the adopter holding files no run may touch
// (what validate once deleted through a linked fault directory), and a
// check that they are intact with nothing added.
func decoys(t *testing.T) (string, func()) {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{"config.json": "{\"keep\": true}\n", "package.json": "{\"name\": \"decoy\"}\n", "old-run.json": "{}\n"}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, func() {
		t.Helper()
		entries, _ := os.ReadDir(dir)
		if len(entries) != len(files) {
			t.Errorf("the decoy directory holds %v, want only %d decoys", entries, len(files))
		}
		for name, body := range files {
			if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != body {
				t.Errorf("decoy %s: %q, %v; want it intact", name, b, err)
			}
		}
	}
}

// TestValidateNeverActsThroughALinkedFaultDir: test-results/fault is a
// link to a directory of decoys. validate refuses before anything starts
// (exit 2, naming the link and what to do) and the decoys survive.
func TestValidateNeverActsThroughALinkedFaultDir(t *testing.T) {
	t.Parallel()
	dir := e2etest.Adopter(t, nil)
	decoy, intact := decoys(t)
	if err := os.MkdirAll(filepath.Join(dir, "test-results"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(decoy, filepath.Join(dir, "test-results", "fault")); err != nil {
		t.Fatal(err)
	}
	out, code := e2etest.Mage(t, dir, nil, "validate")
	if code != 2 || !strings.Contains(out, "fault is a symbolic link to "+decoy) || !strings.Contains(out, "remove the link") {
		t.Errorf("validate with a linked fault dir: exit %d, want 2 naming the link and what to do:\n%s", code, out)
	}
	if strings.Contains(out, "fault-preflight") {
		t.Errorf("validate went on to preflight:\n%s", out)
	}
	intact()
}

// TestABadResultsDirExitsTwoBeforeAnythingStarts: a results directory that
// can never hold artifacts is bad input, refused before the layer is
// checked, and nothing is written there.
func TestABadResultsDirExitsTwoBeforeAnythingStarts(t *testing.T) {
	t.Parallel()
	rootBefore := rootListing(t)
	tests := []struct {
		name  string
		value func(t *testing.T, dir string) string
		says  string
	}{
		{"the file system root", func(*testing.T, string) string { return "/" }, "is the file system root"},
		{"the module root", func(_ *testing.T, dir string) string { return dir }, "is the module root itself"},
		{"a file", func(t *testing.T, dir string) string {
			p := filepath.Join(t.TempDir(), "results")
			os.WriteFile(p, []byte("x"), 0o644)
			return p
		}, "is a file, not a directory"},
		{"a read-only directory", func(t *testing.T, dir string) string {
			p := filepath.Join(t.TempDir(), "results")
			os.Mkdir(p, 0o555)
			t.Cleanup(func() { os.Chmod(p, 0o755) })
			return p
		}, "is read-only"},
	}
	// The targets run in parallel within a group that ends before / is
	// listed again.
	t.Run("targets", func(t *testing.T) {
		for _, tt := range tests {
			for _, target := range [][]string{{"validate"}, {"program-gate"}, {"fault-preflight", "-required"}} {
				t.Run(tt.name+"/"+target[0], func(t *testing.T) {
					t.Parallel()
					dir := e2etest.Adopter(t, nil)
					out, code := e2etest.Mage(t, dir, []string{"CONTESTED_RESULTS_DIR=" + tt.value(t, dir)}, target...)
					if code != 2 || !strings.Contains(out, tt.says) || !strings.Contains(out, "CONTESTED_RESULTS_DIR") {
						t.Errorf("exit %d, want 2 saying %q and what to set:\n%s", code, tt.says, out)
					}
					if strings.Contains(out, "fault-preflight (") || strings.Contains(out, "validate: run") {
						t.Errorf("started before refusing:\n%s", out)
					}
					if _, err := os.Stat(filepath.Join(dir, "preflight.json")); err == nil {
						t.Errorf("preflight.json was written into the module root")
					}
				})
			}
		}
	})
	if after := rootListing(t); after != rootBefore {
		t.Errorf("/ changed:\nbefore %s\nafter  %s", rootBefore, after)
	}
}

// rootListing is / as names and modification times: a refused run must
// not have written /preflight.json or /fault.
func rootListing(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, name := range []string{"preflight.json", "fault", "validate.json", "battery"} {
		fi, err := os.Lstat(filepath.Join("/", name))
		if err != nil {
			b.WriteString(name + ":absent ")
			continue
		}
		b.WriteString(name + ":" + fi.ModTime().String() + " ")
	}
	return b.String()
}

// TestProgramGateEndsOnAFIFOAndADevice puts a FIFO and a link to /dev/zero
// among the records. program-gate used to wait on the FIFO forever and to
// read /dev/zero until it ran out of memory: it must end, refuse (exit 1)
// and name both. The bound is the hang's, not a speed target.
func TestProgramGateEndsOnAFIFOAndADevice(t *testing.T) {
	t.Parallel()
	dir := e2etest.Adopter(t, nil)
	fault := filepath.Join(dir, "test-results", "fault")
	if err := os.MkdirAll(fault, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(fault, "fifo.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(fault, "zero.json")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e2etest.Targets(t), "program-gate")
	cmd.Dir = dir
	cmd.Env = e2etest.LayerEnv(t)
	start := time.Now()
	b, err := cmd.CombinedOutput()
	out := string(b)
	if ctx.Err() != nil {
		t.Fatalf("program-gate did not end within %s (a FIFO waited on?):\n%s", 5*time.Minute, out)
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("program-gate: %v, want exit 1 (refused):\n%s", err, out)
	}
	for _, want := range []string{"fifo.json", "FIFO", "zero.json", "symbolic link", "REFUSED"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output does not say %q:\n%s", want, out)
		}
	}
	t.Logf("program-gate with a FIFO and a /dev/zero link among the records ended in %s, exit 1", time.Since(start).Round(100*time.Millisecond))
}
