package terminal

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/contested/contested/internal/workflowtest"
)

// TestGuardKeepsWhatItWrapsFromTheRunner: text from a test written
// through a Guard that is on is never a command the runner acts on, in
// any of the forms that forged one; the annotation written Outside is
// read, once, after it; and commands are on again at the end.
func TestGuardKeepsWhatItWrapsFromTheRunner(t *testing.T) {
	tests := []struct {
		name   string
		writes []string
	}{
		{"a line a test printed", []string{"::error title=x::y\n"}},
		{"after spaces", []string{"      ::error title=x::y\n"}},
		{"after a lone carriage return", []string{"battery: FAIL x\r::error::y\n"}},
		{"the legacy form mid-line", []string{"battery: FAIL ##[error]y\n"}},
		{"a mask and an output", []string{"::add-mask::secret\n::set-output name=a::b\n"}},
		{"a block of its own, to end ours", []string{"::stop-commands::mine\n::mine::\n::error::y\n"}},
		{"a guessed end token", []string{"::0123456789abcdef0123456789abcdef::\n::error::y\n"}},
		{"an unfinished last line", []string{"partial ::error::y"}},
		{"split across writes", []string{"::err", "or::y\n", "\r::warning::z"}},
		{"a fake FAIL frame", []string{"--- FAIL: ::error title=x::y (0.00s)\n::error::y\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log bytes.Buffer
			g := NewGuard(&log, true)
			for _, w := range tt.writes {
				io.WriteString(g, w)
			}
			err := g.Outside(func(w io.Writer) error {
				_, err := io.WriteString(w, Annotation("error", [][2]string{{"title", "ours"}}, "the run's own"))
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			io.WriteString(g, "::error::after\n")
			g.Close()
			got := workflowtest.Commands(log.String())
			if len(got) != 1 || got[0].Name != "error" || got[0].Data != "the run's own" {
				t.Errorf("the runner acts on %+v, want only the run's own annotation:\n%s", got, log.String())
			}
			if workflowtest.Stopped(log.String()) {
				t.Errorf("commands are still stopped at the end:\n%s", log.String())
			}
		})
	}
}

// TestGuardTakesAFreshTokenPerBlock: each block has its own unguessable
// token, reported as it opens and ends; off, the guard changes nothing.
func TestGuardTakesAFreshTokenPerBlock(t *testing.T) {
	var log bytes.Buffer
	var opened, closed []string
	g := NewGuard(&log, true, OnBlock(func(tok string) { opened = append(opened, tok) }, func(tok string) { closed = append(closed, tok) }))
	io.WriteString(g, "one\n")
	g.Outside(func(io.Writer) error { return nil })
	io.WriteString(g, "two\n")
	g.Close()
	if len(opened) != 2 || opened[0] == opened[1] || len(opened[0]) != 32 || strings.Join(opened, ",") != strings.Join(closed, ",") {
		t.Errorf("opened %v, closed %v: want two distinct 128-bit tokens, each ended", opened, closed)
	}
	var plain bytes.Buffer
	off := NewGuard(&plain, false)
	io.WriteString(off, "::error::x\n")
	off.Close()
	if plain.String() != "::error::x\n" {
		t.Errorf("a guard that is off wrote %q", plain.String())
	}
}

// TestOutsideFindsTheGuardUnderAWrapper: a writer that wraps the guard
// (Unwrap) and holds text back (Flush) is flushed into the block before
// the annotation is written outside it.
func TestOutsideFindsTheGuardUnderAWrapper(t *testing.T) {
	var log bytes.Buffer
	g := NewGuard(&log, true)
	w := &holding{w: g}
	io.WriteString(w, "::error::held back")
	Outside(w, func(w io.Writer) error { _, err := io.WriteString(w, "::notice::ours\n"); return err })
	got := workflowtest.Commands(log.String())
	if len(got) != 1 || got[0].Name != "notice" {
		t.Errorf("the runner acts on %+v, want only the notice:\n%s", got, log.String())
	}
}

// holding holds every write until Flush.
type holding struct {
	w   io.Writer
	buf bytes.Buffer
}

func (h *holding) Write(p []byte) (int, error) { return h.buf.Write(p) }
func (h *holding) Flush() error                { _, err := h.w.Write(h.buf.Bytes()); h.buf.Reset(); return err }
func (h *holding) Unwrap() io.Writer           { return h.w }

// TestAnnotationEscapesPerGitHubsRules: properties escape % CR LF : and
// ,; the message % CR LF; a field's control characters show as escapes.
func TestAnnotationEscapesPerGitHubsRules(t *testing.T) {
	got := Annotation("error", [][2]string{{"file", "a,b.go"}, {"title", "50%: x\ry"}}, "line one\nline\x1b[2J two 100%")
	want := "::error file=a%2Cb.go,title=50%25%3A x\\ry::line one%0Aline\\x1b[2J two 100%25\n"
	if got != want {
		t.Errorf("Annotation = %q\nwant %q", got, want)
	}
	c := workflowtest.Commands(got)
	if len(c) != 1 || c[0].Name != "error" {
		t.Errorf("the runner reads %+v", c)
	}
}
