//go:build !linux

package faultrecord

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// dirHandle reads record files relative to a directory through package os (the portable path;
// Linux has a faster one in load_linux.go).
type dirHandle struct{ path string }

func openDir(path string) (dirHandle, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return dirHandle{}, err
	}
	if !fi.IsDir() {
		return dirHandle{}, fmt.Errorf("%s is not a directory", path)
	}
	return dirHandle{path: path}, nil
}

func (h dirHandle) close() error { return nil }

// readFile reads name into buf (reusing its capacity) and returns the bytes and the mtime taken
// from the same open file.
func (h dirHandle) readFile(name string, buf []byte) ([]byte, time.Time, error) {
	f, err := os.Open(filepath.Join(h.path, name))
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the file name is already in the report entry
		}
		return buf, time.Time{}, fmt.Errorf("open: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return buf, time.Time{}, fmt.Errorf("stat: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return buf, time.Time{}, errors.New("not a regular file")
	}
	if fi.Size() > maxRecordSize {
		return buf, time.Time{}, fmt.Errorf("file of %d bytes is larger than any record (%d)", fi.Size(), maxRecordSize)
	}
	if need := int(fi.Size()) + 512; cap(buf) < need {
		buf = make([]byte, 0, need)
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			if len(buf) > maxRecordSize {
				return buf, time.Time{}, fmt.Errorf("file grew past %d bytes while read", maxRecordSize)
			}
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return buf, time.Time{}, fmt.Errorf("read: %w", err)
		}
	}
	return buf, fi.ModTime(), nil
}
