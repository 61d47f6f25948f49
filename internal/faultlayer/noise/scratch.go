package noise

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contested/contested/internal/reap"
	"github.com/contested/contested/internal/terminal"
)

// The I/O writers' files live in the results directory, which CI uploads,
// so none may outlive its run, even one the kernel killed (SIGKILL, the
// out-of-memory killer). Where the file system can, a writer's file has no
// name at all (O_TMPFILE): the kernel frees it when the process ends, however
// it ends. Elsewhere it is named ".noise-<owner>-<random>.tmp", the owner
// being the writing process (reap.Owner.Token), and the next neighbour in
// that directory or go tool mage sweep removes it once that process is
// provably gone.
const (
	scratchPrefix = ".noise-"
	scratchSuffix = ".tmp"
	// legacyStale is how long a file an older contested named without its
	// owner must have gone unwritten to be removed: a live writer writes
	// it many times a second.
	legacyStale = 10 * time.Minute
)

// anonymous is whether writers try O_TMPFILE first; tests turn it off to
// see the named files' cleanup.
var anonymous = true

// openScratch opens a writer's file in dir: an anonymous one where the
// file system makes it, else one named for this process.
func openScratch(dir string) (*os.File, error) {
	if anonymous {
		fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
		if err == nil {
			return os.NewFile(uintptr(fd), filepath.Join(dir, "(an anonymous noise file)")), nil
		}
		if !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EINVAL) {
			return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
		}
	}
	return os.CreateTemp(dir, scratchPrefix+reap.Self().Token()+"-*"+scratchSuffix)
}

// staleScratch reports whether the writer's file fi in a directory, by
// its name, belongs to a process that is provably gone (or, named by an
// older contested without an owner, has not been written for
// legacyStale); why says whose it was.
func staleScratch(fi fs.FileInfo) (stale bool, why string) {
	name := fi.Name()
	if !fi.Mode().IsRegular() || !strings.HasPrefix(name, scratchPrefix) || !strings.HasSuffix(name, scratchSuffix) {
		return false, ""
	}
	middle := strings.TrimSuffix(strings.TrimPrefix(name, scratchPrefix), scratchSuffix)
	i := strings.LastIndexByte(middle, '-')
	if i < 0 {
		idle := time.Since(fi.ModTime())
		return idle > legacyStale, fmt.Sprintf("no owner named, unwritten for %s", idle.Round(time.Second))
	}
	owner, err := reap.ParseToken(middle[:i])
	if err != nil {
		return false, ""
	}
	l, why := owner.Liveness()
	return l == reap.Gone, why
}

// RemoveStale removes the writers' files in dir (not below it) whose
// writer is provably gone, saying one line each on w, and returns how many
// it removed. Start calls it: the next neighbour in a directory removes
// what a killed one left.
func RemoveStale(dir string, w io.Writer) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), scratchPrefix) {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		if stale, why := staleScratch(fi); stale {
			if err := os.Remove(filepath.Join(dir, e.Name())); err == nil {
				n++
				fmt.Fprintf(w, "noise: removed %s (%d MiB), which a killed neighbour left: %s\n", terminal.Escape(filepath.Join(dir, e.Name())), fi.Size()>>20, why)
			}
		}
	}
	return n
}

// Sweep removes, under the results directory root, every writer's file
// whose writer is provably gone (RemoveStale in each directory, never
// following a link), and returns how many it removed.
func Sweep(root string, w io.Writer) int {
	n := 0
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		n += RemoveStale(path, w)
		return nil
	})
	return n
}
