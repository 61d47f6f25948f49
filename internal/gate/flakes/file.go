package flakes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/contested/contested/internal/atomicfile"
)

// FileName is the local history, relative to the results directory.
const FileName = "history/outcomes.jsonl"

// The history's caps when reading: a line longer than maxLine is skipped
// (and counted); of a file larger than maxFile, its last maxFile bytes
// are read: the newest runs, the ones a trend draws.
const (
	maxLine = 1 << 20
	maxFile = 256 << 20
)

// ErrPartial wraps what Read says when it left part of the history out:
// the outcomes it returns are the rest. Callers say it and go on.
var ErrPartial = errors.New("part of the flake history was skipped")

// PartialError says what Read left out of the history file.
type PartialError struct {
	Path string
	// TooLong and Unreadable count skipped lines: over the line cap, and
	// not an outcome line (does not parse, another schema, a writer killed
	// mid-line).
	TooLong, Unreadable int
	// Skipped is how many bytes at the start of a file over the file cap
	// were not read, of Size.
	Skipped, Size int64
}

func (e *PartialError) Error() string {
	var parts []string
	if e.TooLong > 0 {
		parts = append(parts, fmt.Sprintf("%d lines over the %d MiB line cap", e.TooLong, maxLine>>20))
	}
	if e.Unreadable > 0 {
		parts = append(parts, fmt.Sprintf("%d lines that are not outcome lines", e.Unreadable))
	}
	if e.Skipped > 0 {
		parts = append(parts, fmt.Sprintf("its first %d bytes: it holds %d, over the %d MiB cap, and its last %d MiB (the newest runs) were read", e.Skipped, e.Size, maxFile>>20, maxFile>>20))
	}
	return fmt.Sprintf("%s: skipped %s; the rest is read", e.Path, strings.Join(parts, ", "))
}

func (e *PartialError) Unwrap() error { return ErrPartial }

// File is the local store: JSON lines appended to one file under the
// results directory. Each Append is one write of whole lines under an
// exclusive lock, so concurrent writers (shards on one machine, a
// validate and an arbitrate) never interleave. Every open goes through the
// results directory's loader (internal/atomicfile): no symbolic link
// anywhere under the results directory is followed, a FIFO or a device in
// the history's place is refused, never waited on or read, and a read is
// capped per line and per file.
type File struct {
	Path string
	root string // the results directory
}

var _ Store = (*File)(nil)

// NewFile is the local store of the results directory root.
func NewFile(root string) *File { return &File{Path: filepath.Join(root, FileName), root: root} }

// Append writes outs as lines at the end of the file, creating it (and
// its directories, the results directory included) when missing.
func (f *File) Append(ctx context.Context, outs []Outcome) error {
	if len(outs) == 0 {
		return nil
	}
	var buf bytes.Buffer
	for _, o := range outs {
		o.Schema = Schema
		b, err := json.Marshal(o)
		if err != nil {
			return fmt.Errorf("append to the history: %w", err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	r, err := atomicfile.MakeRoot(f.root)
	if err != nil {
		return fmt.Errorf("append to the history: %w", err)
	}
	fd, err := r.OpenAppend(FileName)
	if err != nil {
		return fmt.Errorf("append to the history: %w", err)
	}
	defer fd.Close()
	if err := syscall.Flock(int(fd.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("append to the history: lock %s: %w", f.Path, err)
	}
	defer syscall.Flock(int(fd.Fd()), syscall.LOCK_UN)
	if _, err := fd.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("append to the history: %w", err)
	}
	return nil
}

// Read returns every outcome in the file, in the order written; no file
// is no history. A line that is too long or not an outcome line is
// skipped, and of a file over the cap its newest part is read: the
// outcomes read are returned with a *PartialError (ErrPartial) that says
// what was left out. A file that cannot be opened as the history (a link,
// a FIFO, a device) is an error, and nothing is read.
func (f *File) Read(ctx context.Context) ([]Outcome, error) {
	r, err := atomicfile.OpenRoot(f.root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the history: %w", err)
	}
	fd, err := r.OpenRead(FileName)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the history: %w", err)
	}
	defer fd.Close()
	var out []Outcome
	partial := &PartialError{Path: f.Path}
	st, err := atomicfile.ReadLines(fd, maxFile, maxLine, func(line []byte) {
		var o Outcome
		if json.Unmarshal(line, &o) != nil || o.Schema != Schema {
			partial.Unreadable++
			return
		}
		out = append(out, o)
	})
	if err != nil {
		return out, fmt.Errorf("read the history: %w", err)
	}
	partial.TooLong, partial.Skipped, partial.Size = st.TooLong, st.Skipped, st.Size
	if partial.TooLong+partial.Unreadable > 0 || partial.Skipped > 0 {
		return out, partial
	}
	return out, nil
}
