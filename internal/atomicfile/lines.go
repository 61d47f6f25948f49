package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
)

// Lines is what ReadLines read and what it left out.
type Lines struct {
	Read int // lines handed to each
	// TooLong are the lines over the line cap: skipped, never buffered
	// whole.
	TooLong int
	// Skipped is how many bytes at the start of a file over the file cap
	// were left unread (the newest lines, at its end, are read).
	Skipped int64
	Size    int64 // the file's size when opened
}

// ReadLines reads the lines of f, a file OpenRead opened, handing each
// (without its newline) to each: at most maxFile bytes, the last ones
// when the file is larger (from the first whole line in them), and lines
// of at most maxLine bytes: a longer one is skipped and counted, so that
// one bad line never costs the rest of the file, nor unbounded memory. A
// last line without its newline is handed on too.
func ReadLines(f *os.File, maxFile, maxLine int64, each func(line []byte)) (Lines, error) {
	var st Lines
	fi, err := f.Stat()
	if err != nil {
		return st, err
	}
	st.Size = fi.Size()
	if st.Size > maxFile {
		st.Skipped = st.Size - maxFile
		if _, err := f.Seek(st.Skipped, io.SeekStart); err != nil {
			return st, fmt.Errorf("seek in %s: %w", f.Name(), err)
		}
	}
	br := bufio.NewReaderSize(io.LimitReader(f, maxFile), 64<<10)
	first := st.Skipped > 0 // the first line read may be the tail of one skipped
	var line []byte
	long := false
	for {
		chunk, err := br.ReadSlice('\n')
		switch {
		case long:
		case int64(len(line)+len(chunk)) > maxLine+1:
			long, line = true, line[:0]
		default:
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return st, fmt.Errorf("read %s: %w", f.Name(), err)
		}
		end := len(line) > 0 && line[len(line)-1] == '\n'
		if end {
			line = line[:len(line)-1]
		}
		switch {
		case first:
			first = false
			if end || long {
				st.Skipped += int64(len(line))
			}
		case long:
			st.TooLong++
		case len(line) > 0:
			st.Read++
			each(line)
		}
		line, long = line[:0], false
		if err != nil {
			return st, nil
		}
	}
}
