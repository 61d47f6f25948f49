//go:build unix

package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contested/contested/internal/secret"
)

// dirFlags open a directory component: never through a symbolic link.
const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// readFlags open a file to read: never through a symbolic link, and
// non-blocking so that opening a FIFO returns at once (the fstat that
// follows refuses it).
const readFlags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC

func retry[T any](f func() (T, error)) (T, error) {
	for {
		v, err := f()
		if !errors.Is(err, unix.EINTR) {
			return v, err
		}
	}
}

func openat(dirfd int, name string, flags int, mode uint32) (int, error) {
	return retry(func() (int, error) { return unix.Openat(dirfd, name, flags, mode) })
}

// why explains a failed open of name in dirfd: a symbolic link (ELOOP,
// or ENOTDIR under O_DIRECTORY, or EMLINK on some BSDs) is ErrSymlink.
func why(dirfd int, name string, err error) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EMLINK) || errors.Is(err, unix.ENXIO) {
		var st unix.Stat_t
		if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			switch uint32(st.Mode) & unix.S_IFMT {
			case unix.S_IFLNK:
				return ErrSymlink
			case unix.S_IFDIR:
			default:
				if errors.Is(err, unix.ENOTDIR) {
					return errNotDir
				}
				return notRegular(kindOf(uint32(st.Mode)))
			}
		}
	}
	return err
}

func kindOf(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return "FIFO"
	case unix.S_IFCHR:
		return "character device"
	case unix.S_IFBLK:
		return "block device"
	case unix.S_IFDIR:
		return "directory"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFLNK:
		return "symbolic link"
	}
	return "mode " + strconv.FormatUint(uint64(mode), 8)
}

// walk opens the root, then each directory component of rel below it, all
// with O_NOFOLLOW. With all it opens every component and returns base ""
// (rel names a directory); otherwise it stops at the parent of rel's last
// component and returns that name. With create, missing directories are
// made (0755). The caller closes the descriptor.
func (r *Root) walk(rel string, create, all bool) (int, string, error) {
	parts, err := split(rel)
	if err != nil {
		return -1, "", err
	}
	fd, err := openat(unix.AT_FDCWD, r.path, dirFlags, 0)
	if err != nil {
		return -1, "", &fs.PathError{Op: "open", Path: r.path, Err: why(unix.AT_FDCWD, r.path, err)}
	}
	n := len(parts)
	base := ""
	if !all {
		if n == 0 {
			unix.Close(fd)
			return -1, "", fmt.Errorf("the results directory itself: %w", ErrEscapes)
		}
		n--
		base = parts[n]
	}
	for i := range n {
		next, err := openat(fd, parts[i], dirFlags, 0)
		if errors.Is(err, unix.ENOENT) && create {
			if merr := unix.Mkdirat(fd, parts[i], 0o755); merr != nil && !errors.Is(merr, unix.EEXIST) {
				err = merr
			} else {
				next, err = openat(fd, parts[i], dirFlags, 0)
			}
		}
		if err != nil {
			err = why(fd, parts[i], err)
			unix.Close(fd)
			return -1, "", &fs.PathError{Op: "open", Path: r.Join(strings.Join(parts[:i+1], "/")), Err: err}
		}
		unix.Close(fd)
		fd = next
	}
	return fd, base, nil
}

// MkdirAll makes the directory rel and any missing parents, refusing a
// symbolic link anywhere under the root.
func (r *Root) MkdirAll(rel string) error {
	fd, _, err := r.walk(rel, true, true)
	if err != nil {
		return fmt.Errorf("make directory %s: %w", r.Join(rel), err)
	}
	return unix.Close(fd)
}

// Write writes data to rel atomically (temporary file, fsync, rename, fsync
// of the directory), creating missing directories. The file is 0644. Every
// secret in data is masked first (secret.Scrub): whatever an artifact
// holds, a password never reaches the disk through here.
func (r *Root) Write(rel string, data []byte, opts ...WriteOption) error {
	data = secret.Scrub(data)
	base := ""
	if parts, _ := split(rel); len(parts) > 0 {
		base = parts[len(parts)-1]
	}
	c := writeConfig{pattern: "." + base + ".tmp-*"}
	for _, o := range opts {
		o(&c)
	}
	dfd, base, err := r.walk(rel, true, false)
	if err != nil {
		return fmt.Errorf("write %s: %w", r.Join(rel), err)
	}
	defer unix.Close(dfd)
	if err := writeAt(dfd, base, data, c); err != nil {
		return fmt.Errorf("write %s: %w", r.Join(rel), err)
	}
	return nil
}

func writeAt(dfd int, base string, data []byte, c writeConfig) (err error) {
	fd, tmp, err := createTemp(dfd, c.pattern)
	if err != nil {
		return err
	}
	open := true
	defer func() {
		if open {
			unix.Close(fd)
		}
		if err != nil && !c.keepTemp {
			unix.Unlinkat(dfd, tmp, 0)
		}
	}()
	for len(data) > 0 {
		n, err := retry(func() (int, error) { return unix.Write(fd, data) })
		if err != nil {
			return err
		}
		data = data[n:]
	}
	if err := unix.Fsync(fd); err != nil {
		return err
	}
	if err := unix.Fchmod(fd, 0o644); err != nil {
		return err
	}
	open = false
	if err := unix.Close(fd); err != nil {
		return err
	}
	if err := unix.Renameat(dfd, tmp, dfd, base); err != nil {
		return err
	}
	_ = unix.Fsync(dfd) // some file systems refuse it: durability only, never atomicity
	return nil
}

// createTemp creates a new file from pattern in dfd, exclusively and never
// through a symbolic link.
func createTemp(dfd int, pattern string) (int, string, error) {
	for range 100 {
		name := tempName(pattern, strconv.FormatUint(rand.Uint64(), 36))
		fd, err := openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		return fd, name, err
	}
	return -1, "", fmt.Errorf("create a temporary file %s: %w", pattern, unix.EEXIST)
}

// Create makes rel a new, empty file for streaming (0644) and returns it
// open for writing: whatever was at rel (a file or a symbolic link) is
// unlinked first, and the file is created exclusively, so a write never
// goes through a link. Unlike Write it is not atomic.
func (r *Root) Create(rel string) (*os.File, error) {
	dfd, base, err := r.walk(rel, true, false)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", r.Join(rel), err)
	}
	defer unix.Close(dfd)
	if err := unix.Unlinkat(dfd, base, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return nil, fmt.Errorf("create %s: %w", r.Join(rel), err)
	}
	fd, err := openat(dfd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", r.Join(rel), err)
	}
	return os.NewFile(uintptr(fd), r.Join(rel)), nil
}

// OpenRead opens rel for reading with the loader's rules (no symbolic
// link anywhere under the root, opened non-blocking so a FIFO never hangs
// it, regular files only), for a reader that streams a file too large to
// read whole ([ReadLines]). The caller closes it.
func (r *Root) OpenRead(rel string) (*os.File, error) {
	dfd, base, err := r.walk(rel, false, false)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", r.Join(rel), err)
	}
	defer unix.Close(dfd)
	fd, err := openat(dfd, base, readFlags, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: r.Join(rel), Err: why(dfd, base, err)}
	}
	return regularFile(fd, r.Join(rel))
}

// OpenAppend opens rel for appending, creating it (0644) and its missing
// directories: never through a symbolic link anywhere under the root, and
// non-blocking, so a FIFO in its place is refused, never waited on. The
// caller closes it.
func (r *Root) OpenAppend(rel string) (*os.File, error) {
	dfd, base, err := r.walk(rel, true, false)
	if err != nil {
		return nil, fmt.Errorf("append to %s: %w", r.Join(rel), err)
	}
	defer unix.Close(dfd)
	fd, err := openat(dfd, base, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, &fs.PathError{Op: "append", Path: r.Join(rel), Err: why(dfd, base, err)}
	}
	return regularFile(fd, r.Join(rel))
}

// regularFile wraps fd when it is a regular file (and closes it when it is
// not), in blocking mode again: the non-blocking open only kept a FIFO
// from hanging it.
func regularFile(fd int, path string) (*os.File, error) {
	var st unix.Stat_t
	if _, err := retry(func() (int, error) { return 0, unix.Fstat(fd, &st) }); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if uint32(st.Mode)&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "open", Path: path, Err: notRegular(kindOf(uint32(st.Mode)))}
	}
	_ = unix.SetNonblock(fd, false)
	return os.NewFile(uintptr(fd), path), nil
}

// ReadFile is the one loader of artifacts: it reads rel, refusing a
// symbolic link anywhere under the root, a file that is not regular (a
// FIFO is opened non-blocking and never waited on) and a file larger than
// max bytes (before reading it). The error names the file.
func (r *Root) ReadFile(rel string, max int64) ([]byte, error) {
	dfd, base, err := r.walk(rel, false, false)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", r.Join(rel), err)
	}
	defer unix.Close(dfd)
	b, _, err := readAt(dfd, base, nil, max)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", r.Join(rel), err)
	}
	return b, nil
}

// readAt reads name in dfd into buf (reusing its capacity) and returns the
// bytes and the mtime from the same open file.
func readAt(dfd int, name string, buf []byte, max int64) ([]byte, time.Time, error) {
	fd, err := openat(dfd, name, readFlags, 0)
	if err != nil {
		return buf, time.Time{}, why(dfd, name, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if _, err := retry(func() (int, error) { return 0, unix.Fstat(fd, &st) }); err != nil {
		return buf, time.Time{}, fmt.Errorf("stat: %w", err)
	}
	if uint32(st.Mode)&unix.S_IFMT != unix.S_IFREG {
		return buf, time.Time{}, notRegular(kindOf(uint32(st.Mode)))
	}
	if st.Size > max {
		return buf, time.Time{}, tooLarge(st.Size, max)
	}
	if need := int(st.Size) + 512; cap(buf) < need {
		buf = make([]byte, 0, need)
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > max {
				return buf, time.Time{}, fmt.Errorf("%w: the file grew past %d bytes while read", ErrTooLarge, max)
			}
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := retry(func() (int, error) { return unix.Read(fd, buf[len(buf):cap(buf)]) })
		if err != nil {
			return buf, time.Time{}, fmt.Errorf("read: %w", err)
		}
		if n == 0 {
			break
		}
		buf = buf[:len(buf)+n]
		if int64(len(buf)) == st.Size {
			break // artifacts are replaced by rename, never rewritten: skip the read that would say EOF
		}
	}
	if int64(len(buf)) > max {
		return buf, time.Time{}, fmt.Errorf("%w: the file grew past %d bytes while read", ErrTooLarge, max)
	}
	return buf, time.Unix(st.Mtim.Unix()), nil
}

// Remove unlinks rel (a file, or a symbolic link itself), never following a
// link; a missing file is an error wrapping fs.ErrNotExist.
func (r *Root) Remove(rel string) error {
	dfd, base, err := r.walk(rel, false, false)
	if err != nil {
		return fmt.Errorf("remove %s: %w", r.Join(rel), err)
	}
	defer unix.Close(dfd)
	if err := unix.Unlinkat(dfd, base, 0); err != nil {
		return &fs.PathError{Op: "remove", Path: r.Join(rel), Err: err}
	}
	return nil
}

// RemoveAll removes rel and everything under it. It descends only into
// real directories, each opened with O_NOFOLLOW relative to its parent, and
// unlinks symbolic links without following them, so nothing outside the
// root is touched. A missing rel (or a missing parent) is nothing to
// remove; the root itself cannot be removed.
func (r *Root) RemoveAll(rel string) error {
	dfd, base, err := r.walk(rel, false, false)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove %s: %w", r.Join(rel), err)
	}
	defer unix.Close(dfd)
	if err := removeAt(dfd, base, 0); err != nil {
		return fmt.Errorf("remove %s: %w", r.Join(rel), err)
	}
	return nil
}

func removeAt(dfd int, name string, depth int) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	if uint32(st.Mode)&unix.S_IFMT != unix.S_IFDIR {
		if err := unix.Unlinkat(dfd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return err
		}
		return nil
	}
	if depth >= maxRemoveDepth {
		return ErrTooDeep
	}
	fd, err := openat(dfd, name, dirFlags, 0)
	if err != nil {
		return why(dfd, name, err) // swapped for a link since the stat: refused, not followed
	}
	d := os.NewFile(uintptr(fd), name)
	for range 64 { // a directory refilled concurrently gives up rather than spins
		entries, err := d.ReadDir(-1)
		if err != nil {
			d.Close()
			return err
		}
		if len(entries) == 0 {
			break
		}
		for _, e := range entries {
			if err := removeAt(fd, e.Name(), depth+1); err != nil {
				d.Close()
				return err
			}
		}
		if _, err := d.Seek(0, 0); err != nil {
			d.Close()
			return err
		}
	}
	d.Close()
	if err := unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		return err
	}
	return nil
}

// Dir is an open directory under a Root, for readers of many files (the
// gate reads 100k records through one): ReadFile opens each entry relative
// to the directory's descriptor, with the one loader's rules.
type Dir struct {
	fd   int
	path string
	list *os.File
}

// OpenDir opens the directory rel under the root (rel "" is the root),
// refusing a symbolic link anywhere on the way.
func (r *Root) OpenDir(rel string) (*Dir, error) {
	fd, _, err := r.walk(rel, false, true)
	if err != nil {
		return nil, err
	}
	return &Dir{fd: fd, path: r.Join(rel)}, nil
}

// Path is the directory's absolute path.
func (d *Dir) Path() string { return d.path }

// ReadFile reads the entry name into buf (reusing its capacity) and
// returns its bytes and mtime, with the rules of [Root.ReadFile]. Errors
// do not repeat the name.
func (d *Dir) ReadFile(name string, buf []byte, max int64) ([]byte, time.Time, error) {
	if err := checkName(name); err != nil {
		return buf, time.Time{}, err
	}
	return readAt(d.fd, name, buf, max)
}

// Remove unlinks the entry name (a file, or a symbolic link itself; never
// what it points to).
func (d *Dir) Remove(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := unix.Unlinkat(d.fd, name, 0); err != nil {
		return &fs.PathError{Op: "remove", Path: d.path + "/" + name, Err: err}
	}
	return nil
}

// Rename renames the entry oldName to newName within the directory,
// replacing newName if it exists (rename(2)): for one oldName, at most one
// of several concurrent renames succeeds; the others fail wrapping
// fs.ErrNotExist. A link is renamed, never followed.
func (d *Dir) Rename(oldName, newName string) error {
	if err := errors.Join(checkName(oldName), checkName(newName)); err != nil {
		return err
	}
	if err := unix.Renameat(d.fd, oldName, d.fd, newName); err != nil {
		return &fs.PathError{Op: "rename", Path: d.path + "/" + oldName, Err: err}
	}
	return nil
}

// Link gives the entry oldName a second name newName within the
// directory, never replacing an existing newName (it fails wrapping
// fs.ErrExist) and never following a link.
func (d *Dir) Link(oldName, newName string) error {
	if err := errors.Join(checkName(oldName), checkName(newName)); err != nil {
		return err
	}
	if err := unix.Linkat(d.fd, oldName, d.fd, newName, 0); err != nil {
		return &fs.PathError{Op: "link", Path: d.path + "/" + newName, Err: err}
	}
	return nil
}

// ReadDir lists up to n entries (all when n <= 0), as os.File.ReadDir.
// Entry types come from the directory listing; a symbolic link shows as one.
func (d *Dir) ReadDir(n int) ([]fs.DirEntry, error) {
	if d.list == nil {
		fd, err := unix.Dup(d.fd)
		if err != nil {
			return nil, err
		}
		unix.CloseOnExec(fd)
		d.list = os.NewFile(uintptr(fd), d.path)
	}
	return d.list.ReadDir(n)
}

// Close releases the directory.
func (d *Dir) Close() error {
	if d.list != nil {
		d.list.Close()
	}
	return unix.Close(d.fd)
}
