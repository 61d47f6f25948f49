// Package files reads the small files contested keeps where another local
// user can create a file of the same name first: owner, pid and lock files
// in the shared temporary directory, records beside a warm layer. Such a
// file can be a FIFO (a plain open waits for a writer forever), a link to
// /dev/zero (a plain read never ends), or a file of gigabytes. Every
// reader of such a path goes through Open or Read, which never follow a
// link, never wait on a FIFO, refuse anything but a regular file and read
// at most a cap: a hostile file costs its reader one error, never a hang.
package files

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrRefused reports a file Open or Read would not read: a symbolic link,
// not a regular file, or larger than the cap. The error says which.
var ErrRefused = errors.New("refused")

// Open opens path for reading without following a symbolic link and
// without waiting on a FIFO, and refuses anything but a regular file. It
// returns the file and what fstat said of it (the file opened, not
// whatever path names by then). A missing file is an error wrapping
// fs.ErrNotExist.
func Open(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		switch {
		case errors.Is(err, syscall.ELOOP):
			return nil, nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w: a symbolic link (never followed)", ErrRefused)}
		case errors.Is(err, syscall.ENXIO):
			return nil, nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w: not a regular file", ErrRefused)}
		}
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w: not a regular file (%s)", ErrRefused, kind(fi.Mode()))}
	}
	return f, fi, nil
}

// Read reads the regular file at path (see Open), at most max bytes: a
// larger file is refused before it is read, and one that grows past max
// while read is refused too. It returns what fstat said of the file read.
func Read(path string, max int64) ([]byte, fs.FileInfo, error) {
	f, fi, err := Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	b, err := ReadOpen(f, fi, max)
	if err != nil {
		return nil, nil, err
	}
	return b, fi, nil
}

// ReadOpen reads f, which Open returned with fi, at most max bytes, as
// Read does: for a caller that checks fi (its owner, its mode) first.
func ReadOpen(f *os.File, fi fs.FileInfo, max int64) ([]byte, error) {
	if fi.Size() > max {
		return nil, &fs.PathError{Op: "read", Path: f.Name(), Err: fmt.Errorf("%w: %d bytes, over the cap of %d", ErrRefused, fi.Size(), max)}
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, &fs.PathError{Op: "read", Path: f.Name(), Err: fmt.Errorf("%w: grew past the cap of %d bytes while read", ErrRefused, max)}
	}
	return b, nil
}

// OwnedBy reports the user id that owns the file fi describes, when the
// platform says.
func OwnedBy(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return m.Type().String()
}

// Stat is os.Stat, through links, that names what stands where nothing
// can be read: missing is "absent" when nothing is at path and "dangling
// link" when a link there points at nothing, and then fi and err are nil.
// A digest records missing as what it saw.
func Stat(path string) (fi fs.FileInfo, missing string, err error) {
	fi, err = os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		if _, lerr := os.Lstat(path); lerr == nil {
			return nil, "dangling link", nil
		}
		return nil, "absent", nil
	}
	return fi, "", err
}

// Sum is the hex SHA-256 of the content of the file at path, read through
// any links: what a digest of a file's content is, everywhere it is one.
func Sum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
