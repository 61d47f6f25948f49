package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/contested/contested/internal/envvar"
)

// ErrBadResultsDir means the results directory is refused before anything runs: it is `/`, a
// system directory, the home directory, the module root (or above it), a file, a symbolic link,
// read-only, or it holds a symbolic link. The message says what to set.
var ErrBadResultsDir = errors.New("results directory refused")

// DefaultResultsDir is the results directory, relative to the module root, when
// CONTESTED_RESULTS_DIR is unset.
const DefaultResultsDir = "test-results"

// systemDirs are directories that are never a results directory: a run writes reports into
// its results directory and purges records from it, and these belong to the system or to
// everyone. Directories below them may be (a CI's /var/lib/ci/results is fine).
var systemDirs = map[string]bool{
	"/": true, "/bin": true, "/boot": true, "/dev": true, "/etc": true, "/home": true, "/lib": true,
	"/lib32": true, "/lib64": true, "/libx32": true, "/media": true, "/mnt": true, "/nix": true,
	"/opt": true, "/proc": true, "/root": true, "/run": true, "/sbin": true, "/snap": true,
	"/srv": true, "/sys": true, "/tmp": true, "/usr": true, "/var": true,
	"/usr/bin": true, "/usr/include": true, "/usr/lib": true, "/usr/lib64": true, "/usr/libexec": true,
	"/usr/local": true, "/usr/local/bin": true, "/usr/local/lib": true, "/usr/local/share": true,
	"/usr/sbin": true, "/usr/share": true, "/usr/src": true,
	"/var/cache": true, "/var/lib": true, "/var/log": true, "/var/mail": true, "/var/opt": true,
	"/var/run": true, "/var/spool": true, "/var/tmp": true, "/var/www": true,
	"/nix/store": true, "/private": true, "/private/etc": true, "/private/tmp": true, "/private/var": true,
	"/Applications": true, "/Library": true, "/System": true, "/Users": true, "/Volumes": true,
}

// kernelDirs are file systems of the kernel: nothing under them is ever a results directory.
var kernelDirs = []string{"/proc", "/sys", "/dev"}

// PrepareResultsDir checks and readies dir, an absolute results directory, once, before a
// command starts anything, and returns it with its ancestors' symbolic links resolved: the path
// every later step (and the battery, through CONTESTED_RESULTS_DIR) uses. moduleRoot is the
// module the command runs in ("" when there is none).
//
// dir is refused, with an error wrapping [ErrBadResultsDir] that says what to set, when it is
// `/`, a system directory (/etc, /usr, /var, /home, /tmp, ...) or inside /proc, /sys or /dev,
// the home directory itself, the module root itself or one of its ancestors; when it is a
// symbolic link (the link's target is named: set the variable to it if that is meant), a file
// or anything else that is not a directory; when it is read-only (no write permission bit, even
// for root, or a write probe fails); and when an entry directly in it is a symbolic link
// (nothing under the results directory is ever followed). A missing dir is created (0755).
func PrepareResultsDir(dir, moduleRoot string) (string, error) {
	fix := fmt.Sprintf("set %s to a directory of its own (the default is %s under the module root)", envvar.ResultsDir, DefaultResultsDir)
	bad := func(why, fix string) error {
		return fmt.Errorf("%w: %s %s; %s", ErrBadResultsDir, dir, why, fix)
	}
	if !filepath.IsAbs(dir) {
		return "", bad("is not an absolute path", fix)
	}
	dir = filepath.Clean(dir)
	if why := Refused(dir, moduleRoot); why != "" {
		return "", bad(why, fix)
	}
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", bad(fmt.Sprintf("cannot be created (%v)", unwrapPath(err)), fix)
		}
		fi, err = os.Lstat(dir)
	}
	switch {
	case err != nil:
		return "", bad(fmt.Sprintf("cannot be examined (%v)", unwrapPath(err)), fix)
	case fi.Mode()&fs.ModeSymlink != 0:
		target, _ := os.Readlink(dir)
		return "", bad(fmt.Sprintf("is a symbolic link to %s, and the results directory is never reached through a link", target),
			fmt.Sprintf("set %s to the directory itself if that is where artifacts belong, or remove the link", envvar.ResultsDir))
	case !fi.IsDir():
		what := "a file"
		if !fi.Mode().IsRegular() {
			what = "a " + fi.Mode().Type().String() + " file"
		}
		return "", bad("is "+what+", not a directory", "remove it, or "+fix)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", bad(fmt.Sprintf("cannot be resolved (%v)", unwrapPath(err)), fix)
	}
	if why := Refused(real, moduleRoot); why != "" {
		return "", bad(fmt.Sprintf("resolves to %s, which %s", real, strings.TrimPrefix(why, "is ")), fix)
	}
	if fi.Mode().Perm()&0o222 == 0 {
		return "", bad(fmt.Sprintf("is read-only (mode %04o)", fi.Mode().Perm()), "make it writable (chmod u+w), or "+fix)
	}
	probe, err := os.CreateTemp(real, ".contested-probe-*")
	if err != nil {
		return "", bad(fmt.Sprintf("is not writable (%v)", unwrapPath(err)), "make it writable, or "+fix)
	}
	probe.Close()
	os.Remove(probe.Name())
	entries, err := os.ReadDir(real)
	if err != nil {
		return "", bad(fmt.Sprintf("cannot be listed (%v)", unwrapPath(err)), fix)
	}
	for _, e := range entries {
		if e.Type()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(filepath.Join(real, e.Name()))
			return "", fmt.Errorf("%w: %s is a symbolic link to %s: nothing under the results directory %s is followed, written or deleted through a link; remove the link (its target is not touched)",
				ErrBadResultsDir, filepath.Join(real, e.Name()), target, real)
		}
	}
	// What an earlier command killed mid-write left goes with this one.
	RemoveStaleTemps(real, StaleTemp, io.Discard)
	return real, nil
}

// Refused says why dir (absolute, clean) can never be a results directory, or "".
func Refused(dir, moduleRoot string) string {
	if dir == "/" {
		return "is the file system root"
	}
	if home, err := os.UserHomeDir(); err == nil && home != "" && sameDir(dir, home) {
		return "is the home directory"
	}
	if systemDirs[dir] {
		return "is a system directory"
	}
	for _, k := range kernelDirs {
		if strings.HasPrefix(dir, k+"/") {
			return "is inside " + k + ", a kernel file system"
		}
	}
	if tmp := filepath.Clean(os.TempDir()); dir == tmp {
		return "is the system's temporary directory"
	}
	if moduleRoot != "" {
		for _, mr := range variants(moduleRoot) {
			switch {
			case dir == mr:
				return "is the module root itself"
			case strings.HasPrefix(mr, dir+string(filepath.Separator)):
				return "contains the module root " + mr
			}
		}
	}
	return ""
}

// sameDir compares a with b as written and with b's links resolved.
func sameDir(a, b string) bool {
	for _, v := range variants(b) {
		if a == v {
			return true
		}
	}
	return false
}

// variants is p cleaned, and also with its links resolved when that differs.
func variants(p string) []string {
	p = filepath.Clean(p)
	out := []string{p}
	if r, err := filepath.EvalSymlinks(p); err == nil && r != p {
		out = append(out, r)
	}
	return out
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
