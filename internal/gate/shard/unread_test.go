package shard

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestAManifestThatCannotBeReadSaysWhatItIs: a shard.json that is a
// symbolic link, too large, a FIFO, or does not parse is refused as
// tampered, saying which (never waiting on the FIFO), and its row names no
// shard it cannot know ("?", not "0/0"); a FIFO in the claim's place
// refuses the shard as claimed instead of hanging the merge.
func TestAManifestThatCannotBeReadSaysWhatItIs(t *testing.T) {
	tests := []struct {
		name   string
		poison func(t *testing.T, dir string)
		kind   Kind
		says   string
	}{
		{"a symbolic link", func(t *testing.T, dir string) {
			p := filepath.Join(dir, ManifestName)
			moved := filepath.Join(t.TempDir(), "shard.json")
			os.Rename(p, moved)
			os.Symlink(moved, p)
		}, Tampered, "symbolic link"},
		{"too large", func(t *testing.T, dir string) {
			if err := os.Truncate(filepath.Join(dir, ManifestName), maxManifestSize+1); err != nil {
				t.Fatal(err)
			}
		}, Tampered, "too large"},
		{"a FIFO", func(t *testing.T, dir string) {
			p := filepath.Join(dir, ManifestName)
			os.Remove(p)
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
		}, Tampered, "FIFO"},
		{"not JSON", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, ManifestName), []byte("{"), 0o644)
		}, Tampered, "does not parse"},
		{"a FIFO as its claim", func(t *testing.T, dir string) {
			if err := syscall.Mkfifo(filepath.Join(dir, ClaimName), 0o644); err != nil {
				t.Fatal(err)
			}
		}, Claimed, "FIFO"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, dirs := threeShards(t)
			tt.poison(t, dirs[1])
			type result struct {
				res *Result
				err error
			}
			done := make(chan result, 1)
			go func() {
				res, err := Merge(context.Background(), mergeOpts(t, dirs))
				done <- result{res, err}
			}()
			var got result
			select {
			case got = <-done:
			case <-time.After(2 * time.Minute):
				t.Fatal("the merge waited on the shard's file")
			}
			if !errors.Is(got.err, ErrRefused) || got.res == nil {
				t.Fatalf("merge: %v; want refused", got.err)
			}
			found := false
			for _, r := range got.res.Refusals {
				found = found || r.Kind == tt.kind && r.Dir == dirs[1] && strings.Contains(r.Detail, tt.says)
			}
			if !found {
				t.Errorf("refusals %v; want %s of %s saying %q", got.res.Refusals, tt.kind, dirs[1], tt.says)
			}
			for _, s := range got.res.Shards {
				if s.Dir == dirs[1] && tt.kind == Tampered && s.Shard != "?" {
					t.Errorf("the shard whose manifest could not be read is row %q, want ?", s.Shard)
				}
			}
		})
	}
}
