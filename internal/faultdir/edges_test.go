package faultdir

import (
	"strings"
	"testing"
)

// TestSafeFileNameAtItsLimits: a safe name of exactly 120 bytes is kept as
// it is and one of 121 is digested; a digested name is never longer than
// 120 bytes, however long the original; a 13-byte name that ends like a
// digest ("-" and 12 hex digits) is digested too, so it cannot pass for
// another name's digested form.
func TestSafeFileNameAtItsLimits(t *testing.T) {
	tests := []struct {
		name, in string
		keep     bool
	}{
		{"120 safe bytes", strings.Repeat("a", maxFileName), true},
		{"121 safe bytes", strings.Repeat("a", maxFileName+1), false},
		{"just a digest", "-0123456789ab", false},
		{"a digest after one byte", "x-0123456789ab", false},
		{"one hex digit short of a digest", "-0123456789a", true},
		{"long and unsafe", strings.Repeat("T/", 70), false},
		{"long, unsafe, one over the cut", strings.Repeat("b", maxFileName-digestLen) + "/", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SafeFileName(tt.in)
			if (got == tt.in) != tt.keep {
				t.Errorf("SafeFileName(%q) = %q; kept as is: %v, want %v", tt.in, got, got == tt.in, tt.keep)
			}
			if len(got) > maxFileName || SafeName(got) != got {
				t.Errorf("SafeFileName(%q) = %q: %d bytes, or not a safe name; want at most %d safe bytes", tt.in, got, len(got), maxFileName)
			}
		})
	}
}
