package digest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/contested/contested/internal/private"
)

// identity is what says a file or directory is unchanged: its size, its
// modification and change times and its inode. A file rewritten with the
// same content still changes identity (it is hashed again); a file whose
// identity is unchanged is trusted to hold what it held.
type identity struct {
	Size  int64  `json:"s"`
	Mtime int64  `json:"m"`
	Ctime int64  `json:"c,omitempty"`
	Ino   uint64 `json:"i,omitempty"`
	Mode  uint32 `json:"o"`
}

func identify(fi fs.FileInfo) identity {
	id := identity{Size: fi.Size(), Mtime: fi.ModTime().UnixNano(), Mode: uint32(fi.Mode())}
	id.Ctime, id.Ino = sysIdentity(fi)
	if fi.IsDir() {
		id.Size = 0 // a directory's size says nothing its times do not
	}
	return id
}

// cachedEntry is a listing in the cache with what it was listed from.
type cachedEntry struct {
	Packages []*listed           `json:"packages"`
	Seen     map[string]identity `json:"seen"`
}

// cachedList is runList, answered from the cache when every file and
// directory the listing came from is unchanged.
func cachedList(ctx context.Context, c config, root, envSum string, h *hashes, args []string) (*listing, bool, error) {
	var path string
	if c.cacheDir != "" {
		path = filepath.Join(c.cacheDir, "list-"+Sum(root, envSum, strings.Join(args, " "))[:32]+".json")
		if b, err := private.ReadFile(path, 0o077, maxCache); err == nil {
			var e cachedEntry
			if json.Unmarshal(b, &e) == nil && e.Seen != nil && unchanged(e.Seen) {
				l := &listing{byPath: map[string]*listed{}}
				for _, p := range e.Packages {
					l.byPath[p.ImportPath] = p
				}
				return l, false, nil
			}
		}
	}
	l, err := runList(ctx, root, c.env, args)
	if err != nil {
		return nil, true, err
	}
	if path != "" {
		e := cachedEntry{Seen: seenBy(root, l)}
		for _, p := range l.byPath {
			e.Packages = append(e.Packages, p)
		}
		if b, err := json.Marshal(e); err == nil {
			writeCache(path, b)
		}
	}
	return l, true, nil
}

// seenBy is the identity of everything a listing depends on: every
// directory of the module's tree (a new package or file changes one),
// go.mod and go.sum, and every directory and source file of a local
// package outside it.
func seenBy(root string, l *listing) map[string]identity {
	seen := map[string]identity{}
	note := func(p string) {
		if fi, err := os.Stat(p); err == nil {
			seen[p] = identify(fi)
		} else {
			seen[p] = identity{Mode: 1 << 31} // absent: its appearance is a change
		}
	}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if p != root {
			if n := d.Name(); strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") || n == "testdata" || n == "test-results" || n == "node_modules" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir // another module
			}
		}
		note(p)
		return nil
	})
	for _, f := range []string{"go.mod", "go.sum", "go.work", "go.work.sum"} {
		note(filepath.Join(root, f))
	}
	for _, p := range l.byPath {
		if !p.local() || p.Dir == "" {
			continue
		}
		note(p.Dir)
		for _, f := range p.sourceFiles() {
			note(filepath.Join(p.Dir, f))
		}
		if p.Module != nil && p.Module.GoMod != "" {
			note(p.Module.GoMod)
		}
	}
	return seen
}

func unchanged(seen map[string]identity) bool {
	for p, want := range seen {
		fi, err := os.Stat(p)
		if err != nil {
			if want.Mode == 1<<31 {
				continue
			}
			return false
		}
		if identify(fi) != want {
			return false
		}
	}
	return true
}

// maxCache caps a cache file read.
const maxCache = 256 << 20

// writeCache writes a cache file atomically; a cache that cannot be
// written only costs the next run the work again.
func writeCache(path string, b []byte) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return
	}
	tmp := path + ".tmp" + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		os.Remove(tmp)
		return
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
	}
}

// hashes is the file-hash cache: a file's identity to its SHA-256.
type hashes struct {
	path    string
	mu      sync.Mutex
	known   map[string]hashEntry
	changed bool
}

type hashEntry struct {
	ID  identity `json:"id"`
	Sum string   `json:"sum"`
}

func openHashes(dir string) *hashes {
	h := &hashes{known: map[string]hashEntry{}}
	if dir == "" {
		return h
	}
	h.path = filepath.Join(dir, "files.json")
	if b, err := private.ReadFile(h.path, 0o077, maxCache); err == nil {
		_ = json.Unmarshal(b, &h.known)
	}
	return h
}

func (h *hashes) save() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.path == "" || !h.changed {
		return
	}
	if b, err := json.Marshal(h.known); err == nil {
		writeCache(h.path, b)
	}
}

// hash is the SHA-256 of the file at p, from the cache when its identity
// is unchanged. A file that is not there hashes as absent.
func (h *hashes) hash(p string) (string, error) {
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "absent", nil
	}
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "not a regular file: " + fi.Mode().Type().String(), nil
	}
	id := identify(fi)
	h.mu.Lock()
	e, ok := h.known[p]
	h.mu.Unlock()
	// A file changed within the last second may change again within the
	// same tick of its clock: hash it, but do not remember it.
	fresh := time.Since(fi.ModTime()) < time.Second
	if ok && e.ID == id && !fresh {
		return e.Sum, nil
	}
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	s := sha256.New()
	if _, err := io.Copy(s, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", p, err)
	}
	sum := hex.EncodeToString(s.Sum(nil))
	if !fresh {
		h.mu.Lock()
		h.known[p], h.changed = hashEntry{ID: id, Sum: sum}, true
		h.mu.Unlock()
	}
	return sum, nil
}

// files is the digest of the named files of dir.
func (h *hashes) files(dir string, names []string) (string, error) {
	parts := make([]string, 0, 2*len(names))
	for _, n := range names {
		s, err := h.hash(filepath.Join(dir, n))
		if err != nil {
			return "", err
		}
		parts = append(parts, n, s)
	}
	return Sum(parts...), nil
}

// tree is the digest of every regular file under dir (links are named by
// their target, never followed); "" when dir does not exist.
func (h *hashes) tree(dir string) (string, error) {
	var parts []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == dir {
			return fs.SkipAll
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.IsDir():
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			parts = append(parts, rel, "link:"+target)
		case d.Type().IsRegular():
			s, err := h.hash(p)
			if err != nil {
				return err
			}
			parts = append(parts, rel, s)
		default:
			parts = append(parts, rel, "special:"+d.Type().String())
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if len(parts) == 0 {
		return "", nil
	}
	return Sum(parts...), nil
}
