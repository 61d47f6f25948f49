package faultdir

import (
	"strings"
	"testing"
)

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
