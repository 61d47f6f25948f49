// Package private keeps this user's own files: directories that only this
// user can write and files only this user wrote, never reached through a
// symbolic link, the way the go command keeps its build cache.
//
// Two things contested keeps outside the results directory depend on it:
// the warm layer's owner record, which holds the test plane's password and
// whose coordinates a run attaches to, and the test binaries a command
// keeps for the next one, which a command executes. Whatever another user
// (or an archive a CI cache restores) could have written there is refused,
// never read as ours.
package private

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/contested/contested/internal/files"
)

// ErrNotPrivate reports a file or directory that is not this user's own:
// a symbolic link, owned by another user, open to others, or not of the
// expected type. The error says which, and what to do.
var ErrNotPrivate = errors.New("not private to this user")

// Owner is the user id files of this process belong to.
func Owner() int { return os.Geteuid() }

// MkdirAll makes dir and its missing parents (mode 0700) and checks dir
// with [CheckDir]. Parents that exist are the caller's environment and are
// left as they are.
func MkdirAll(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return CheckDir(dir)
}

// CheckDir returns nil when dir is a directory (not a symbolic link) owned
// by this user that no one else can read, write or enter (no group or
// other permission bits), and otherwise an error wrapping [ErrNotPrivate]
// that says what it is, or fs.ErrNotExist when it is missing.
func CheckDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return &fs.PathError{Op: "check", Path: dir, Err: fmt.Errorf("%w: a symbolic link (never followed)", ErrNotPrivate)}
	case !fi.IsDir():
		return &fs.PathError{Op: "check", Path: dir, Err: fmt.Errorf("%w: not a directory", ErrNotPrivate)}
	}
	if uid, ok := ownerOf(fi); ok && uid != Owner() {
		return &fs.PathError{Op: "check", Path: dir, Err: fmt.Errorf("%w: owned by uid %d, not this user (uid %d)", ErrNotPrivate, uid, Owner())}
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return &fs.PathError{Op: "check", Path: dir, Err: fmt.Errorf("%w: mode %04o lets other users in; it must be 0700 (chmod 700 %s)", ErrNotPrivate, perm, dir)}
	}
	return nil
}

// CheckFile returns nil when fi (from Lstat or an open file's Stat) is a
// regular file owned by this user with none of the permission bits in
// forbidden, and otherwise an error wrapping [ErrNotPrivate] that names
// path and says what it is.
func CheckFile(path string, fi fs.FileInfo, forbidden fs.FileMode) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return &fs.PathError{Op: "check", Path: path, Err: fmt.Errorf("%w: a symbolic link (never followed)", ErrNotPrivate)}
	case !fi.Mode().IsRegular():
		return &fs.PathError{Op: "check", Path: path, Err: fmt.Errorf("%w: not a regular file (%s)", ErrNotPrivate, kind(fi.Mode()))}
	}
	if uid, ok := ownerOf(fi); ok && uid != Owner() {
		return &fs.PathError{Op: "check", Path: path, Err: fmt.Errorf("%w: owned by uid %d, not this user (uid %d)", ErrNotPrivate, uid, Owner())}
	}
	if perm := fi.Mode().Perm(); perm&forbidden != 0 {
		return &fs.PathError{Op: "check", Path: path, Err: fmt.Errorf("%w: mode %04o, and no one but its owner may %s it", ErrNotPrivate, perm, verb(forbidden))}
	}
	return nil
}

// ReadFile reads path, at most max bytes, when it is this user's own
// regular file in this user's own directory ([CheckDir] of its parent,
// [CheckFile] with forbidden): it follows no symbolic link, opens
// non-blocking (a FIFO is never waited on) and refuses a larger file
// before reading it. A missing file is an error wrapping fs.ErrNotExist.
func ReadFile(path string, forbidden fs.FileMode, max int64) ([]byte, error) {
	if err := CheckDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	f, fi, err := files.Open(path)
	if err != nil {
		return nil, notPrivate(err)
	}
	defer f.Close()
	if err := CheckFile(path, fi, forbidden); err != nil {
		return nil, err
	}
	b, err := files.ReadOpen(f, fi, max)
	return b, notPrivate(err)
}

// notPrivate says a file the loader refused is not this user's own.
func notPrivate(err error) error {
	var pe *fs.PathError
	if errors.Is(err, files.ErrRefused) && errors.As(err, &pe) {
		return &fs.PathError{Op: pe.Op, Path: pe.Path, Err: fmt.Errorf("%w: %w", ErrNotPrivate, pe.Err)}
	}
	return err
}

// Owned reports whether fi belongs to this user (true where the platform
// does not say).
func Owned(fi fs.FileInfo) bool {
	uid, ok := ownerOf(fi)
	return !ok || uid == Owner()
}

// ownerOf is the uid that owns fi, where the platform says.
func ownerOf(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeDevice != 0:
		return "device"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m.IsDir():
		return "directory"
	}
	return m.String()
}

func verb(forbidden fs.FileMode) string {
	if forbidden&0o044 != 0 {
		return "read or write"
	}
	return "write"
}
