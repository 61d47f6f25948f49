package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSameDirSeesThroughLinks: a directory is the same as a link to it, and
// a path that does not resolve matches only itself.
func TestSameDirSeesThroughLinks(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(real, "missing")
	tests := []struct {
		a, b string
		want bool
	}{
		{real, link, true},
		{real, real, true},
		{link, link, true},
		{"", missing, false},
		{missing, missing, true},
		{link, real, false},
	}
	for _, tt := range tests {
		if got := sameDir(tt.a, tt.b); got != tt.want {
			t.Errorf("sameDir(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
