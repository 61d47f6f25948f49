package reap

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestWarmHeldReleasesOnlyWhatItCanProve: a warm layer is released (a
// sweep may remove it) only when its record is provably missing or names
// another run; a record that is a FIFO (never waited on), does not parse,
// is a link, or is no absolute path holds its layer.
func TestWarmHeldReleasesOnlyWhatItCanProve(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, path string) string
		held  bool
	}{
		{"the record names the run", func(t *testing.T, p string) string {
			return write(t, p, `{"run_id":"r1"}`)
		}, true},
		{"the record names another run", func(t *testing.T, p string) string {
			return write(t, p, `{"run_id":"r2"}`)
		}, false},
		{"no record", func(t *testing.T, p string) string { return p }, false},
		{"no record, nor its directory", func(t *testing.T, p string) string {
			return filepath.Join(p, "gone", "warm-layer.json")
		}, false},
		{"a record that does not parse", func(t *testing.T, p string) string { return write(t, p, `{"run_id":`) }, true},
		{"a FIFO", func(t *testing.T, p string) string {
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}, true},
		{"a symbolic link to a record of another run", func(t *testing.T, p string) string {
			target := write(t, p+".target", `{"run_id":"r2"}`)
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			return p
		}, true},
		{"a relative path", func(t *testing.T, p string) string { return "warm-layer.json" }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.setup(t, filepath.Join(t.TempDir(), "warm-layer.json"))
			done := make(chan bool, 1)
			go func() { done <- WarmHeld(path, "r1") }()
			select {
			case held := <-done:
				if held != tt.held {
					t.Errorf("WarmHeld = %v, want %v", held, tt.held)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("WarmHeld waited on the record")
			}
		})
	}
}

func write(t *testing.T, path, body string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
