// Package testlog gives a test an io.Writer that goes to its log, for
// code under test that reports progress to a writer.
package testlog

import (
	"io"
	"strings"
	"testing"
)

// Writer returns a writer whose every write is one t.Log call, without
// the trailing newline.
func Writer(tb testing.TB) io.Writer { return writer{tb} }

type writer struct{ tb testing.TB }

func (w writer) Write(p []byte) (int, error) {
	w.tb.Helper()
	w.tb.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
