package contract

import (
	"errors"
	"strings"
	"testing"
)

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestIndentPrefixesEveryLine: what the surface's tests print is indented
// line by line, an empty line included, and a failed write is an error.
func TestIndentPrefixesEveryLine(t *testing.T) {
	var b strings.Builder
	p := []byte("a\n\nb")
	n, err := indent{&b, "  "}.Write(p)
	if err != nil || n != len(p) || b.String() != "  a\n  \n  b" {
		t.Errorf("Write = %d, %v, wrote %q; want %d, nil, %q", n, err, b.String(), len(p), "  a\n  \n  b")
	}
	if _, err := (indent{failingWriter{}, "  "}).Write(p); err == nil {
		t.Error("a write that failed returned no error")
	}
}
