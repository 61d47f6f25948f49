//go:build !unix

package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/contested/contested/internal/secret"
)

// The portable path: os.Root keeps every operation inside the root (it
// never resolves a link to outside it), and an Lstat of each component
// refuses links inside it too.

func (r *Root) open() (*os.Root, error) {
	fi, err := os.Lstat(r.path)
	switch {
	case err != nil:
		return nil, err
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, &fs.PathError{Op: "open", Path: r.path, Err: ErrSymlink}
	case !fi.IsDir():
		return nil, &fs.PathError{Op: "open", Path: r.path, Err: errNotDir}
	}
	return os.OpenRoot(r.path)
}

// walk opens the root and checks rel's directory components (all of them
// with all), making missing ones with create. It returns the root and
// rel's last component's path ("" with all).
func (r *Root) walk(rel string, create, all bool) (*os.Root, string, error) {
	parts, err := split(rel)
	if err != nil {
		return nil, "", err
	}
	root, err := r.open()
	if err != nil {
		return nil, "", err
	}
	n := len(parts)
	last := ""
	if !all {
		if n == 0 {
			root.Close()
			return nil, "", fmt.Errorf("the results directory itself: %w", ErrEscapes)
		}
		n--
		last = strings.Join(parts, "/")
	}
	for i := range n {
		p := strings.Join(parts[:i+1], "/")
		fi, err := root.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) && create {
			if err = root.Mkdir(p, 0o755); err == nil || errors.Is(err, fs.ErrExist) {
				fi, err = root.Lstat(p)
			}
		}
		switch {
		case err != nil:
		case fi.Mode()&fs.ModeSymlink != 0:
			err = ErrSymlink
		case !fi.IsDir():
			err = errNotDir
		}
		if err != nil {
			root.Close()
			return nil, "", &fs.PathError{Op: "open", Path: r.Join(p), Err: err}
		}
	}
	return root, last, nil
}

// MkdirAll makes the directory rel and any missing parents.
func (r *Root) MkdirAll(rel string) error {
	root, _, err := r.walk(rel, true, true)
	if err != nil {
		return fmt.Errorf("make directory %s: %w", r.Join(rel), err)
	}
	return root.Close()
}

// Write writes data to rel atomically, creating missing directories. Every
// secret in data is masked first (secret.Scrub).
func (r *Root) Write(rel string, data []byte, opts ...WriteOption) (err error) {
	data = secret.Scrub(data)
	c := writeConfig{pattern: "." + filepath.Base(rel) + ".tmp-*"}
	for _, o := range opts {
		o(&c)
	}
	root, p, err := r.walk(rel, true, false)
	if err != nil {
		return fmt.Errorf("write %s: %w", r.Join(rel), err)
	}
	defer root.Close()
	dir := filepath.ToSlash(filepath.Dir(p))
	var f *os.File
	var tmp string
	for range 100 {
		tmp = filepath.ToSlash(filepath.Join(dir, tempName(c.pattern, strconv.FormatUint(rand.Uint64(), 36))))
		f, err = root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", r.Join(rel), err)
	}
	defer func() {
		if err != nil {
			f.Close()
			if !c.keepTemp {
				root.Remove(tmp)
			}
			err = fmt.Errorf("write %s: %w", r.Join(rel), err)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return root.Rename(tmp, p)
}

// Create makes rel a new, empty file for streaming, replacing what was there.
func (r *Root) Create(rel string) (*os.File, error) {
	root, p, err := r.walk(rel, true, false)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", r.Join(rel), err)
	}
	defer root.Close()
	if err := root.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("create %s: %w", r.Join(rel), err)
	}
	return root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
}

// OpenRead opens rel for reading with the loader's rules (see the unix
// version).
func (r *Root) OpenRead(rel string) (*os.File, error) {
	root, p, err := r.walk(rel, false, false)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", r.Join(rel), err)
	}
	defer root.Close()
	fi, err := root.Lstat(p)
	switch {
	case err != nil:
		return nil, err
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, &fs.PathError{Op: "read", Path: r.Join(rel), Err: ErrSymlink}
	case !fi.Mode().IsRegular():
		return nil, &fs.PathError{Op: "read", Path: r.Join(rel), Err: notRegular(fi.Mode().Type().String())}
	}
	return root.Open(p)
}

// OpenAppend opens rel for appending, creating it (see the unix version).
func (r *Root) OpenAppend(rel string) (*os.File, error) {
	root, p, err := r.walk(rel, true, false)
	if err != nil {
		return nil, fmt.Errorf("append to %s: %w", r.Join(rel), err)
	}
	defer root.Close()
	if fi, err := root.Lstat(p); err == nil && !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "append", Path: r.Join(rel), Err: notRegular(fi.Mode().Type().String())}
	}
	return root.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
}

// ReadFile is the one loader of artifacts (see the unix version).
func (r *Root) ReadFile(rel string, max int64) ([]byte, error) {
	root, p, err := r.walk(rel, false, false)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", r.Join(rel), err)
	}
	defer root.Close()
	b, _, err := readIn(root, p, nil, max)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", r.Join(rel), err)
	}
	return b, nil
}

func readIn(root *os.Root, name string, buf []byte, max int64) ([]byte, time.Time, error) {
	fi, err := root.Lstat(name)
	switch {
	case err != nil:
		return buf, time.Time{}, err
	case fi.Mode()&fs.ModeSymlink != 0:
		return buf, time.Time{}, ErrSymlink
	case !fi.Mode().IsRegular():
		return buf, time.Time{}, notRegular(fi.Mode().Type().String())
	case fi.Size() > max:
		return buf, time.Time{}, tooLarge(fi.Size(), max)
	}
	f, err := root.Open(name)
	if err != nil {
		return buf, time.Time{}, err
	}
	defer f.Close()
	buf = buf[:0]
	var b strings.Builder
	n, err := io.Copy(&b, io.LimitReader(f, max+1))
	if err != nil {
		return buf, time.Time{}, fmt.Errorf("read: %w", err)
	}
	if n > max {
		return buf, time.Time{}, fmt.Errorf("%w: the file grew past %d bytes while read", ErrTooLarge, max)
	}
	return append(buf, b.String()...), fi.ModTime(), nil
}

// Remove unlinks rel, never following a link.
func (r *Root) Remove(rel string) error {
	root, p, err := r.walk(rel, false, false)
	if err != nil {
		return fmt.Errorf("remove %s: %w", r.Join(rel), err)
	}
	defer root.Close()
	return root.Remove(p)
}

// RemoveAll removes rel and everything under it, inside the root only.
func (r *Root) RemoveAll(rel string) error {
	root, p, err := r.walk(rel, false, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove %s: %w", r.Join(rel), err)
	}
	defer root.Close()
	return root.RemoveAll(p)
}

// Dir is an open directory under a Root, for readers of many files.
type Dir struct {
	root *os.Root
	path string
	list *os.File
}

// OpenDir opens the directory rel under the root.
func (r *Root) OpenDir(rel string) (*Dir, error) {
	root, _, err := r.walk(rel, false, true)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	sub := root
	if parts, _ := split(rel); len(parts) > 0 {
		if sub, err = root.OpenRoot(strings.Join(parts, "/")); err != nil {
			return nil, err
		}
	} else if sub, err = os.OpenRoot(r.path); err != nil {
		return nil, err
	}
	return &Dir{root: sub, path: r.Join(rel)}, nil
}

// Path is the directory's absolute path.
func (d *Dir) Path() string { return d.path }

// ReadFile reads the entry name with the rules of Root.ReadFile.
func (d *Dir) ReadFile(name string, buf []byte, max int64) ([]byte, time.Time, error) {
	if err := checkName(name); err != nil {
		return buf, time.Time{}, err
	}
	return readIn(d.root, name, buf, max)
}

// Remove unlinks the entry name, never following a link.
func (d *Dir) Remove(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	return d.root.Remove(name)
}

// Rename renames the entry oldName to newName within the directory,
// replacing newName if it exists.
func (d *Dir) Rename(oldName, newName string) error {
	if err := errors.Join(checkName(oldName), checkName(newName)); err != nil {
		return err
	}
	return d.root.Rename(oldName, newName)
}

// Link gives the entry oldName a second name newName within the
// directory, never replacing an existing newName.
func (d *Dir) Link(oldName, newName string) error {
	if err := errors.Join(checkName(oldName), checkName(newName)); err != nil {
		return err
	}
	return d.root.Link(oldName, newName)
}

// ReadDir lists up to n entries (all when n <= 0).
func (d *Dir) ReadDir(n int) ([]fs.DirEntry, error) {
	if d.list == nil {
		f, err := d.root.Open(".")
		if err != nil {
			return nil, err
		}
		d.list = f
	}
	return d.list.ReadDir(n)
}

// Close releases the directory.
func (d *Dir) Close() error {
	if d.list != nil {
		d.list.Close()
	}
	return d.root.Close()
}
