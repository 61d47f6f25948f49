package flakes

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// FileName is the local history, relative to the results directory.
const FileName = "history/outcomes.jsonl"

// maxLine bounds one outcome line when reading.
const maxLine = 1 << 20

// File is the local store: JSON lines appended to one file. Each Append
// is one write of whole lines under an exclusive lock, so concurrent
// writers (shards on one machine, a validate and an arbitrate) never
// interleave; a line a killed writer left unfinished is skipped on read.
type File struct {
	Path string
}

var _ Store = (*File)(nil)

// NewFile is the local store of the results directory root.
func NewFile(root string) *File { return &File{Path: filepath.Join(root, FileName)} }

// Append writes outs as lines at the end of the file, creating it (and
// its directory) when missing. It never follows a link at the file.
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
	if err := os.MkdirAll(filepath.Dir(f.Path), 0o755); err != nil {
		return fmt.Errorf("append to the history: %w", err)
	}
	fd, err := os.OpenFile(f.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o644)
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
// is no history. Lines that do not parse (a writer killed mid-line, a
// line of another schema) are skipped.
func (f *File) Read(ctx context.Context) ([]Outcome, error) {
	fd, err := os.OpenFile(f.Path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the history: %w", err)
	}
	defer fd.Close()
	var out []Outcome
	sc := bufio.NewScanner(fd)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for sc.Scan() {
		var o Outcome
		if json.Unmarshal(sc.Bytes(), &o) != nil || o.Schema != Schema {
			continue
		}
		out = append(out, o)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("read the history %s: %w", f.Path, err)
	}
	return out, nil
}
