package battery

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/contested/contested/internal/files"
	"github.com/contested/contested/internal/private"
)

// errNotAsBuilt says a test binary's content is not the content this tool
// built and checked: it is never run, and the package is built again.
var errNotAsBuilt = errors.New("its content is not what this tool built")

// openDigest opens path without following a link or waiting on a FIFO,
// refuses anything but this user's own regular file that no one else may
// write, and returns it with the SHA-256 of its content as read through
// that descriptor. Running the descriptor (execFile) runs those bytes
// whatever is renamed into path meanwhile.
func openDigest(path string) (*os.File, string, error) {
	f, fi, err := files.Open(path)
	if err != nil {
		return nil, "", err
	}
	if err := private.CheckFile(path, fi, 0o022); err != nil {
		f.Close()
		return nil, "", err
	}
	sum, err := digestOf(f)
	if err != nil {
		f.Close()
		return nil, "", err
	}
	return f, sum, nil
}

// digestOf is the SHA-256 of f's whole content, read from its start
// through the descriptor (its offset is left alone).
func digestOf(f *os.File) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, 1<<62)); err != nil {
		return "", fmt.Errorf("hash %s: %w", f.Name(), err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// digestPath is the SHA-256 of the file at path (see openDigest).
func digestPath(path string) (string, error) {
	f, sum, err := openDigest(path)
	if err != nil {
		return "", err
	}
	f.Close()
	return sum, nil
}

// execPath is the name that executes f itself: the kernel opens the file
// the descriptor holds, not whatever path names by then.
func execPath(f *os.File) string {
	p := fmt.Sprintf("/proc/self/fd/%d", f.Fd())
	if _, err := os.Stat(p); err != nil {
		return f.Name() // no /proc: the name, checked just before
	}
	return p
}
