package flock

import (
	"context"
	"errors"
	"path/filepath"
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
