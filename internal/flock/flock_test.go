package flock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestLockExcludesUntilReleased: a second Lock on a held file waits and
// gives up when its context ends; once the first is released it succeeds.
func TestLockExcludesUntilReleased(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := Lock(context.Background(), path, 0o600, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := Lock(ctx, path, 0o600, 10*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second Lock while held: %v, want the context's deadline", err)
	}
	unlock()
	again, err := Lock(context.Background(), path, 0o600, 10*time.Millisecond)
	if err != nil {
		t.Fatalf("Lock after release: %v", err)
	}
	again()
}

// TestLockRefusesWhatAnotherUserCanPlant: a lock file in a shared
// directory may be made first by another user; a FIFO, a link or a
// directory there is refused at once, never waited on or followed.
func TestLockRefusesWhatAnotherUserCanPlant(t *testing.T) {
	for _, tt := range []struct {
		name  string
		plant func(t *testing.T, p string) error
	}{
		{"a FIFO", func(t *testing.T, p string) error { return syscall.Mkfifo(p, 0o666) }},
		{"a link to /dev/zero", func(t *testing.T, p string) error { return os.Symlink("/dev/zero", p) }},
		{"a link to a regular file", func(t *testing.T, p string) error {
			q := filepath.Join(t.TempDir(), "real")
			if err := os.WriteFile(q, nil, 0o666); err != nil {
				return err
			}
			return os.Symlink(q, p)
		}},
		{"a directory", func(t *testing.T, p string) error { return os.Mkdir(p, 0o755) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "x.lock")
			if err := tt.plant(t, p); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			unlock, err := Lock(ctx, p, 0o600, 10*time.Millisecond)
			if err == nil {
				unlock()
				t.Fatal("Lock took a lock on a planted file")
			}
			if ctx.Err() != nil {
				t.Fatalf("Lock waited: %v", err)
			}
		})
	}
}
