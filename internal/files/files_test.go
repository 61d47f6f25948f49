package files

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadRefusesWhatAnotherUserCanPlant: a FIFO, a link (to /dev/zero or
// to a regular file), a directory, a device, or a file over the cap is
// refused at once with an error that says which; a small regular file is
// read.
func TestReadRefusesWhatAnotherUserCanPlant(t *testing.T) {
	for _, tt := range []struct {
		name  string
		plant func(t *testing.T, p string)
		says  string // "" when it is read
	}{
		{"a regular file", func(t *testing.T, p string) { os.WriteFile(p, []byte("owner\n"), 0o644) }, ""},
		{"a FIFO", func(t *testing.T, p string) {
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file"},
		{"a link to /dev/zero", func(t *testing.T, p string) { os.Symlink("/dev/zero", p) }, "symbolic link"},
		{"a link to a regular file", func(t *testing.T, p string) {
			q := filepath.Join(t.TempDir(), "real")
			os.WriteFile(q, []byte("owner\n"), 0o644)
			os.Symlink(q, p)
		}, "symbolic link"},
		{"a directory", func(t *testing.T, p string) { os.Mkdir(p, 0o755) }, "not a regular file"},
		{"a file over the cap", func(t *testing.T, p string) {
			f, _ := os.Create(p)
			f.Truncate(200 << 20)
			f.Close()
		}, "over the cap"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "owner")
			tt.plant(t, p)
			done := make(chan struct{})
			var b []byte
			var err error
			go func() { b, _, err = Read(p, 4<<10); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Read hung")
			}
			if tt.says == "" {
				if err != nil || string(b) != "owner\n" {
					t.Fatalf("Read = %q, %v", b, err)
				}
				return
			}
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("Read = %v, want ErrRefused saying %q", err, tt.says)
			}
		})
	}
}

// TestStatNamesWhatIsMissing: nothing at a path is "absent", a link to
// nothing is "dangling link", and a file is its info with nothing missing.
func TestStatNamesWhatIsMissing(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(filepath.Join(dir, "gone"), link); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, path, missing string }{
		{"a file", file, ""},
		{"nothing", filepath.Join(dir, "none"), "absent"},
		{"a link to nothing", link, "dangling link"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fi, missing, err := Stat(tt.path)
			if err != nil || missing != tt.missing || (fi == nil) != (tt.missing != "") {
				t.Errorf("Stat = %v, %q, %v; want missing %q", fi, missing, err, tt.missing)
			}
		})
	}
}
