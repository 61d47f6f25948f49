// Package atomicfile writes and reads a run's artifacts inside one
// directory tree, the results directory, and nowhere else.
//
// Every operation goes through a [Root], and keeps these invariants
// whatever on disk is a symbolic link:
//
//   - nothing below the root is followed: every path component under it
//     is opened with O_NOFOLLOW relative to its parent's descriptor, and a
//     symbolic link is refused with [ErrSymlink], never resolved, so no
//     write, read or delete can land outside the tree;
//   - the root itself must not be a symbolic link (its ancestors may be:
//     they are the caller's environment, resolved once when the results
//     directory is chosen);
//   - a write is atomic: a temporary file in the same directory, fsynced,
//     then renamed over the target, which replaces a symbolic link in the
//     target's place instead of writing through it; a reader sees the old
//     file or the new one, never half of one;
//   - a delete unlinks; [Root.RemoveAll] descends only into real
//     directories and unlinks symbolic links without following them;
//   - a read ([Root.ReadFile], [Dir.ReadFile]: the one loader of
//     artifacts) opens non-blocking, so a FIFO never hangs it; takes
//     regular files only, so a device such as /dev/zero is never read; and
//     refuses a file larger than its cap before reading it, so memory stays
//     bounded.
package atomicfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Sentinel errors, for callers that branch on why a path was refused.
var (
	// ErrSymlink: a path component under the root, or the root itself, is a
	// symbolic link. It is never followed.
	ErrSymlink = errors.New("is a symbolic link: refused, nothing under the results directory is followed")
	// ErrNotRegular: a file to read is a FIFO, a device, a socket or a
	// directory.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge: a file to read is larger than the reader's cap.
	ErrTooLarge = errors.New("larger than the cap")
	// ErrEscapes: a relative path is absolute, empty where a file is
	// needed, or climbs out of the root with "..".
	ErrEscapes = errors.New("path is not inside the results directory")
	// ErrTooDeep: RemoveAll met a tree deeper than any artifact tree.
	ErrTooDeep = errors.New("directory tree too deep to be artifacts")
)

// MaxArtifact is the default cap on an artifact read back by the commands
// (validate.json, capacity.json, a ladder outcome): far above any real one,
// low enough that a hostile file cannot exhaust memory.
const MaxArtifact = 64 << 20

// maxRemoveDepth bounds RemoveAll's descent: artifact trees are a few levels
// deep, and each level holds a descriptor open.
const maxRemoveDepth = 32

// Root is a directory that artifacts are confined to. It holds the path
// only; every operation opens it again with O_NOFOLLOW, so a root replaced
// by a symbolic link after OpenRoot is refused then.
type Root struct {
	path string
}

// OpenRoot returns the Root at path, which must be an existing directory
// and not a symbolic link.
func OpenRoot(path string) (*Root, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	fi, err := os.Lstat(abs)
	switch {
	case err != nil:
		return nil, err
	case fi.Mode()&os.ModeSymlink != 0:
		return nil, &os.PathError{Op: "open", Path: abs, Err: ErrSymlink}
	case !fi.IsDir():
		return nil, &os.PathError{Op: "open", Path: abs, Err: errNotDir}
	}
	return &Root{path: abs}, nil
}

var errNotDir = errors.New("not a directory")

// MakeRoot is [OpenRoot] after making path and its missing parents (0755).
// The ancestors are the caller's and may be links; path itself may not.
func MakeRoot(path string) (*Root, error) {
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, err
	}
	return OpenRoot(path)
}

// Path is the root's absolute path.
func (r *Root) Path() string { return r.path }

// Join is the absolute path of rel under the root, for messages.
func (r *Root) Join(rel string) string { return filepath.Join(r.path, rel) }

// WriteOption changes how [Root.Write] writes.
type WriteOption func(*writeConfig)

type writeConfig struct {
	pattern  string
	keepTemp bool
}

// TempPattern names the temporary file: pattern's last "*" becomes random
// digits. The default is "." + the target's base name + ".tmp-*", which
// never ends in ".json", so a reader globbing for records never takes it
// for one.
func TempPattern(pattern string) WriteOption {
	return func(c *writeConfig) { c.pattern = pattern }
}

// KeepTempOnError leaves the temporary file in place when a step after its
// creation fails: the evidence that a write was lost (faultrecord's records
// use it so that the gate refuses a run that lost one).
func KeepTempOnError() WriteOption {
	return func(c *writeConfig) { c.keepTemp = true }
}

// WriteJSON writes v as indented JSON with a final newline to rel.
func (r *Root) WriteJSON(rel string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", r.Join(rel), err)
	}
	return r.Write(rel, append(b, '\n'))
}

// ReadJSON reads rel with [Root.ReadFile] (at most max bytes) and decodes it
// into v. encoding/json refuses nesting deeper than 10000 levels, which
// with the size cap bounds the decoder's work.
func (r *Root) ReadJSON(rel string, v any, max int64) error {
	b, err := r.ReadFile(rel, max)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("read %s: %w", r.Join(rel), err)
	}
	return nil
}

// EmptyDir makes rel under the directory root an empty directory, for a
// run's private results: whatever was there is removed with
// [Root.RemoveAll], and no symbolic link is followed on the way, so nothing
// outside root is deleted or created.
func EmptyDir(root, rel string) error {
	r, err := OpenRoot(root)
	if err != nil {
		return err
	}
	if err := r.RemoveAll(rel); err != nil {
		return err
	}
	return r.MkdirAll(rel)
}

// Write writes data to path atomically, creating its directory if needed.
// The directory holding path is the root: it must not be a symbolic link
// (see [OpenRoot]). A path under the results directory should go through
// the results directory's [Root], which checks every component.
func Write(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	r, err := OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return r.Write(filepath.Base(path), data)
}

// WriteJSON writes v as indented JSON with a final newline, as [Write].
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return Write(path, append(b, '\n'))
}

// Load reads the file at path with the one loader's rules (no symbolic
// link, non-blocking open, regular files only, at most max bytes), the
// directory holding it taken as the root.
func Load(path string, max int64) ([]byte, error) {
	r, err := OpenRoot(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return r.ReadFile(filepath.Base(path), max)
}

// split checks that rel stays inside the root and returns its components;
// "" and "." are the root itself (no components).
func split(rel string) ([]string, error) {
	if rel == "" || rel == "." {
		return nil, nil
	}
	if !filepath.IsLocal(rel) {
		return nil, fmt.Errorf("%q: %w", rel, ErrEscapes)
	}
	return strings.Split(filepath.ToSlash(filepath.Clean(rel)), "/"), nil
}

// checkName refuses a name that is not one component: Dir.ReadFile reads
// entries of its directory only.
func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
		return fmt.Errorf("%q: %w", name, ErrEscapes)
	}
	return nil
}

// tempName fills pattern's last "*" (or appends) with a random suffix.
func tempName(pattern, suffix string) string {
	if i := strings.LastIndex(pattern, "*"); i >= 0 {
		return pattern[:i] + suffix + pattern[i+1:]
	}
	return pattern + suffix
}

// notRegular says what a non-regular file is.
func notRegular(kind string) error { return fmt.Errorf("%w (%s)", ErrNotRegular, kind) }

func tooLarge(size, max int64) error {
	return fmt.Errorf("%w: a file of %d bytes, the cap is %d", ErrTooLarge, size, max)
}
