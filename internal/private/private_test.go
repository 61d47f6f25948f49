package private

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestReadFileTakesOnlyThisUsersOwnFile: a private file in a private
// directory is read; a link, a FIFO (never waited on), a file open to
// others, a file in a directory open to others and a file over the cap are
// refused with ErrNotPrivate, and a missing one is fs.ErrNotExist.
func TestReadFileTakesOnlyThisUsersOwnFile(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, dir string) string
		wantErr error
	}{
		{"this user's 0600 file", func(t *testing.T, dir string) string {
			return write(t, dir, "f", 0o600)
		}, nil},
		{"missing", func(t *testing.T, dir string) string { return filepath.Join(dir, "none") }, fs.ErrNotExist},
		{"mode 0644", func(t *testing.T, dir string) string { return write(t, dir, "f", 0o644) }, ErrNotPrivate},
		{"a symbolic link to a private file", func(t *testing.T, dir string) string {
			target := write(t, dir, "target", 0o600)
			link := filepath.Join(dir, "link")
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			return link
		}, ErrNotPrivate},
		{"a FIFO", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "fifo")
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}, ErrNotPrivate},
		{"in a directory open to others", func(t *testing.T, dir string) string {
			p := write(t, dir, "f", 0o600)
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			return p
		}, ErrNotPrivate},
		{"over the cap", func(t *testing.T, dir string) string {
			p := write(t, dir, "f", 0o600)
			if err := os.WriteFile(p, make([]byte, 100), 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}, ErrNotPrivate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "private")
			if err := MkdirAll(dir); err != nil {
				t.Fatal(err)
			}
			path := tt.setup(t, dir)
			done := make(chan error, 1)
			go func() { _, err := ReadFile(path, 0o077, 64); done <- err }()
			select {
			case err := <-done:
				if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
					t.Errorf("ReadFile = %v, want %v", err, tt.wantErr)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("ReadFile waited on the file")
			}
		})
	}
}

func write(t *testing.T, dir, name string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("x"), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}
