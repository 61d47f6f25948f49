package battery

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/flock"
	"github.com/contested/contested/internal/private"
)

// StoreDir is where commands keep their test binaries: test-binaries in
// the contested directory of the user's cache directory
// (os.UserCacheDir: $XDG_CACHE_HOME, else ~/.cache).
func StoreDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("find the user cache directory for the test binaries: %w", err)
	}
	return filepath.Join(dir, "contested", "test-binaries"), nil
}

// Option changes NewBinaries.
type Option func(*storeOptions)

type storeOptions struct {
	store string
	log   io.Writer
}

// InStore keeps the binaries in dir instead of StoreDir (a test's store of
// its own). dir is held to the same rules: this user's own, 0700.
func InStore(dir string) Option { return func(o *storeOptions) { o.store = dir } }

// WithLog says on w what the store found and removed (a foreign file in a
// kept binary's place, the old binaries of the results directory).
func WithLog(w io.Writer) Option { return func(o *storeOptions) { o.log = w } }

// NewBinaries makes the command's directory of test binaries in the store
// and removes the ones commands that are gone left behind (their lock is
// free); Close removes it. It also removes the test binaries that older
// versions kept under the results directory resultsDir, saying so. When
// the store cannot be used (no user cache directory, or a directory there
// that is not this user's own and private), the command builds into a
// temporary directory of its own and keeps nothing, and says why.
func NewBinaries(resultsDir string, opts ...Option) (*Binaries, error) {
	o := storeOptions{log: io.Discard}
	for _, opt := range opts {
		opt(&o)
	}
	if resultsDir != "" {
		removeLegacy(resultsDir, o.log)
	}
	keep := true
	store := o.store
	var err error
	if store == "" {
		store, err = StoreDir()
	}
	if err == nil {
		err = prepareStore(store, o.log)
	}
	if err != nil {
		fmt.Fprintf(o.log, "battery: no test binary is kept for the next command (%v); this command builds its own\n", err)
		if store, err = os.MkdirTemp("", "contested-test-binaries-"); err != nil {
			return nil, fmt.Errorf("make a directory for test binaries: %w", err)
		}
		keep = false
	}
	root, err := atomicfile.OpenRoot(store)
	if err != nil {
		return nil, err
	}
	if keep {
		sweepBinaries(root)
		sweepKept(root, time.Now().Add(-keptFor))
	}
	dir, err := os.MkdirTemp(root.Path(), "run-")
	if err != nil {
		return nil, fmt.Errorf("make a directory for test binaries: %w", err)
	}
	rel := filepath.Base(dir)
	unlock, err := flock.Lock(context.Background(), root.Join(rel)+".lock", 0o600, time.Millisecond)
	if err != nil {
		_ = root.RemoveAll(rel)
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return &Binaries{root: root, rel: rel, unlock: unlock, keep: keep, log: o.log, built: map[string]*binary{}, tools: &toolchain{}}, nil
}

// prepareStore makes the store and its kept directory this user's own and
// private (0700). A store whose directory this user owns but others could
// enter or write is tightened to 0700, and the binaries kept in it are
// removed first, since anyone could have put them there; a store that is
// not this user's (another owner, a symbolic link, not a directory) is an
// error: nothing in it is used.
func prepareStore(store string, log io.Writer) error {
	for _, dir := range []string{filepath.Dir(store), store, filepath.Join(store, keptDir)} {
		err := private.MkdirAll(dir)
		if err == nil {
			continue
		}
		if !errors.Is(err, private.ErrNotPrivate) || !ownedDir(dir) {
			return err
		}
		kept := filepath.Join(store, keptDir)
		if n, rerr := removeTree(kept); rerr != nil {
			return fmt.Errorf("%v, and its kept binaries could not be removed: %w", err, rerr)
		} else if n > 0 {
			fmt.Fprintf(log, "battery: removed %d files kept in %s: %v, so anyone could have put them there; they are never run\n", n, kept, err)
		}
		if cerr := os.Chmod(dir, 0o700); cerr != nil {
			return fmt.Errorf("%v: %w", err, cerr)
		}
		if err := private.MkdirAll(dir); err != nil {
			return err
		}
	}
	return nil
}

// ownedDir reports whether dir is a real directory this user owns (so
// tightening its mode is this user's call).
func ownedDir(dir string) bool {
	fi, err := os.Lstat(dir)
	return err == nil && fi.IsDir() && private.Owned(fi)
}

// removeTree removes dir and everything under it, never following a link,
// and returns how many files it held.
func removeTree(dir string) (int, error) {
	n := 0
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	root, err := atomicfile.OpenRoot(filepath.Dir(dir))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, nil
		}
		return n, err
	}
	if err := root.RemoveAll(filepath.Base(dir)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return n, err
	}
	return n, nil
}

// removeLegacy removes the test binaries an older contested kept under the
// results directory (battery/bin): executables in an artifact are never
// run. A command of that version still running holds its directory's
// lock; its directory is left to it.
func removeLegacy(resultsDir string, log io.Writer) {
	root, err := atomicfile.OpenRoot(resultsDir)
	if err != nil {
		return
	}
	if _, err := os.Lstat(root.Join(legacyBinDir)); err != nil {
		return
	}
	removed := 0
	entries, _ := os.ReadDir(root.Join(legacyBinDir))
	for _, e := range entries {
		name := e.Name()
		rel := filepath.Join(legacyBinDir, name)
		if strings.HasPrefix(name, "run-") {
			lock := strings.TrimSuffix(name, ".lock") + ".lock"
			unlock, ok := tryLock(root.Join(filepath.Join(legacyBinDir, lock)))
			if !ok {
				continue // held: that command still runs
			}
			unlock()
		}
		n, _ := removeTree(root.Join(rel))
		if !e.IsDir() {
			n = 1
		}
		if err := root.RemoveAll(rel); err == nil || errors.Is(err, fs.ErrNotExist) {
			removed += n
		}
	}
	if left, err := os.ReadDir(root.Join(legacyBinDir)); err == nil && len(left) == 0 {
		_ = root.RemoveAll(legacyBinDir)
	}
	if removed > 0 {
		fmt.Fprintf(log, "battery: removed %d files from %s: test binaries are kept in the user cache directory (only this user can write there), and nothing under the results directory is ever run\n", removed, root.Join(legacyBinDir))
	}
}

// sweepBinaries removes the directories of commands that ended without
// Close (killed): a lock no one holds.
func sweepBinaries(root *atomicfile.Root) {
	locks, _ := filepath.Glob(filepath.Join(root.Path(), "run-*.lock"))
	for _, l := range locks {
		unlock, ok := tryLock(l)
		if !ok {
			continue // held: that command still runs
		}
		rel := strings.TrimSuffix(filepath.Base(l), ".lock")
		_ = root.RemoveAll(rel)
		_ = root.Remove(rel + ".lock")
		unlock()
	}
}

// sweepKept removes the kept binaries last used before cutoff, each under
// its lock (a build that holds it is using it), with their records. The
// lock files stay: one removed while another command waits on it would let
// a third take a new one beside it.
func sweepKept(root *atomicfile.Root, cutoff time.Time) {
	kept, _ := filepath.Glob(filepath.Join(root.Join(keptDir), "*.test"))
	for _, k := range kept {
		fi, err := os.Lstat(k)
		if err != nil || fi.ModTime().After(cutoff) {
			continue
		}
		unlock, ok := tryLock(k + ".lock")
		if !ok {
			continue
		}
		_ = root.Remove(filepath.Join(keptDir, filepath.Base(k)))
		_ = root.Remove(filepath.Join(keptDir, filepath.Base(k)+recordSuffix))
		unlock()
	}
}

// tryLock takes the lock at path if no one holds it, without waiting.
func tryLock(path string) (unlock func(), ok bool) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	unlock, err := flock.Lock(done, path, 0o600, time.Millisecond)
	return unlock, err == nil
}

// Dir is the directory the command's test binaries are in.
func (b *Binaries) Dir() string { return b.root.Join(b.rel) }

// Close removes the command's test binaries (and, when nothing could be
// kept, the temporary store).
func (b *Binaries) Close() error {
	err := b.root.RemoveAll(b.rel)
	_ = b.root.Remove(b.rel + ".lock")
	b.unlock()
	if !b.keep {
		_ = os.RemoveAll(b.root.Path())
	}
	return err
}
