package faultlayer

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contested/contested/internal/reap"
)

// TestAHostileEmbeddedOwnerCostsOneLineNeverAHang: the temporary
// directory is shared, so any local user can make a
// contested-embedded-<name> directory with a FIFO, a link to /dev/zero or a
// file of hundreds of megabytes for its owner file (or its postmaster.pid).
// The sweep that embedded bring-up (fault-preflight) and go tool mage sweep
// run skips such an entry with one line, leaves it where it is, and never
// hangs; an entry of a gone owner of this user's beside it is still swept.
func TestAHostileEmbeddedOwnerCostsOneLineNeverAHang(t *testing.T) {
	gone := reap.Self()
	gone.Start++ // this PID's process, started at another time: gone
	deadOwner := gone.String() + "\nrun\n"
	for _, tt := range []struct {
		name  string
		plant func(t *testing.T, dir string)
		says  string // "" when the entry is swept
	}{
		{"owner is a FIFO", func(t *testing.T, dir string) {
			if err := syscall.Mkfifo(filepath.Join(dir, "owner"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file"},
		{"owner links to /dev/zero", func(t *testing.T, dir string) {
			if err := os.Symlink("/dev/zero", filepath.Join(dir, "owner")); err != nil {
				t.Fatal(err)
			}
		}, "symbolic link"},
		{"owner is 200 MB", func(t *testing.T, dir string) {
			f, err := os.Create(filepath.Join(dir, "owner"))
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(deadOwner)
			if err := f.Truncate(200 << 20); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}, "over the cap"},
		{"owner is a directory", func(t *testing.T, dir string) {
			if err := os.Mkdir(filepath.Join(dir, "owner"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file"},
		{"the layer directory is a link to another", func(t *testing.T, dir string) {
			other := t.TempDir()
			if err := os.WriteFile(filepath.Join(other, "owner"), []byte(deadOwner), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(dir); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(other, dir); err != nil {
				t.Fatal(err)
			}
		}, "not a directory"},
		{"owner is another user's", func(t *testing.T, dir string) {
			if os.Geteuid() != 0 {
				t.Skip("making a file of another user's needs root")
			}
			p := filepath.Join(dir, "owner")
			if err := os.WriteFile(p, []byte(deadOwner), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, "not this user"},
		{"postmaster.pid of a gone owner's layer is a FIFO", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "owner"), []byte(deadOwner), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(filepath.Join(dir, "data"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(filepath.Join(dir, "data", "postmaster.pid"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			dir := filepath.Join(tmp, embeddedDirPrefix+"hostile")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			tt.plant(t, dir)
			var out strings.Builder
			done := make(chan error, 1)
			go func() { done <- sweepEmbedded(&out) }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("sweepEmbedded = %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("sweepEmbedded hung on a hostile entry")
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			_, err := os.Lstat(dir)
			if tt.says == "" {
				if err == nil || !strings.Contains(out.String(), "swept embedded layer") {
					t.Errorf("a gone owner's layer was not swept (%v):\n%s", err, out.String())
				}
				return
			}
			if err != nil {
				t.Errorf("the hostile entry was removed: %v", err)
			}
			if len(lines) != 1 || !strings.Contains(lines[0], dir) || !strings.Contains(lines[0], tt.says) {
				t.Errorf("sweepEmbedded said %q; want one line naming %s and saying %q", out.String(), dir, tt.says)
			}
		})
	}
}
