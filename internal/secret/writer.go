package secret

import (
	"bytes"
	"io"
	"sync"
)

// maxLine bounds what a Writer holds back while waiting for a newline.
// Past it, all but the last holdBack bytes are scrubbed and passed on, so
// that a secret split across the cut is still whole in what is kept.
const (
	maxLine  = 1 << 20
	holdBack = 4 << 10
)

// Writer scrubs everything written through it (see Scrub) one line at a
// time, so a secret split across two Write calls is still caught. Call
// Flush when done: a last line without a newline is held until then. A
// Writer is safe for concurrent use; each line is passed on whole.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
	err error
}

// NewWriter returns a Writer that passes scrubbed lines to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Unwrap returns the writer underneath, for callers that decide on colour
// by what the final writer is (a terminal or not).
func (s *Writer) Unwrap() io.Writer { return s.w }

// Write holds p until a newline completes a line, then passes the scrubbed
// line on. It reports the first error of the writer underneath.
func (s *Writer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return 0, s.err
	}
	s.buf = append(s.buf, p...)
	if i := bytes.LastIndexByte(s.buf, '\n'); i >= 0 {
		s.emit(s.buf[:i+1])
		s.buf = append(s.buf[:0], s.buf[i+1:]...)
	}
	if len(s.buf) > maxLine {
		cut := len(s.buf) - holdBack
		if j := bytes.LastIndexAny(s.buf[:cut], " \t"); j > 0 {
			cut = j + 1
		}
		s.emit(s.buf[:cut])
		s.buf = append(s.buf[:0], s.buf[cut:]...)
	}
	if s.err != nil {
		return 0, s.err
	}
	return len(p), nil
}

// emit scrubs each line of b on its own (a JSON event stream stays one
// valid document per line) and writes the result.
func (s *Writer) emit(b []byte) {
	vs := knownVariants()
	var out []byte
	for len(b) > 0 {
		n := bytes.IndexByte(b, '\n') + 1
		if n == 0 {
			n = len(b)
		}
		out = append(out, scrub(b[:n], vs)...)
		b = b[n:]
	}
	if s.err == nil {
		_, s.err = s.w.Write(out)
	}
}

// Flush passes on what is held (a last line without a newline).
func (s *Writer) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.buf) > 0 {
		s.emit(s.buf)
		s.buf = s.buf[:0]
	}
	return s.err
}
