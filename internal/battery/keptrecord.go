package battery

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/contested/contested/internal/private"
)

// recordSuffix names the record beside a kept binary: the identity of the
// file this tool built there.
const recordSuffix = ".id"

// keptSchema is the schema of a kept binary's record.
// @2 added the content's SHA-256: a record of @1 is read as one that does
// not parse, and its binary is built again.
const keptSchema = "contested/kept-binary@2"

// maxKeptRecord caps a record read back: a few numbers.
const maxKeptRecord = 4 << 10

// keptIdentity is what a kept binary's record holds: which file this tool
// built, as the file system names it, and its content. A file put in its
// place (renamed, copied, restored from an archive) is another inode or
// has another size or time; one rewritten in place with its size and time
// restored has another SHA-256. No one but this user can write the
// record, which lives in the same private directory.
type keptIdentity struct {
	Schema string `json:"schema"`
	Dev    uint64 `json:"dev"`
	Ino    uint64 `json:"ino"`
	Size   int64  `json:"size"`
	Mtime  int64  `json:"mtime_ns"`
	SHA256 string `json:"sha256"`
}

func identityOf(fi fs.FileInfo) (keptIdentity, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return keptIdentity{}, false
	}
	return keptIdentity{Schema: keptSchema, Dev: uint64(st.Dev), Ino: uint64(st.Ino), Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}, true
}

// sameInode reports whether a and b name one file.
func (a keptIdentity) sameInode(b keptIdentity) bool { return a.Dev == b.Dev && a.Ino == b.Ino }

// current is the identity and content of the file at path now, read
// through one descriptor.
func current(path string) (keptIdentity, error) {
	f, sum, err := openDigest(path)
	if err != nil {
		return keptIdentity{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return keptIdentity{}, err
	}
	id, ok := identityOf(fi)
	if !ok {
		return keptIdentity{}, errors.New("its identity cannot be read on this platform")
	}
	id.SHA256 = sum
	return id, nil
}

// checkKept returns the identity of the kept binary rel when it is the
// file this tool recorded there, content included; an error wrapping
// fs.ErrNotExist when nothing is there; and otherwise an error that says
// what is wrong with it (it is then never run).
func (b *Binaries) checkKept(rel string) (keptIdentity, error) {
	path := b.root.Join(rel)
	fi, err := os.Lstat(path)
	if err != nil {
		return keptIdentity{}, err
	}
	if err := private.CheckFile(path, fi, 0o022); err != nil {
		return keptIdentity{}, errors.Unwrap(err) // the path is said by the caller
	}
	data, err := private.ReadFile(path+recordSuffix, 0o077, maxKeptRecord)
	if errors.Is(err, fs.ErrNotExist) {
		return keptIdentity{}, errors.New("no record says this tool built it (a file put there by something else, or restored from a cache)")
	}
	if err != nil {
		return keptIdentity{}, fmt.Errorf("its record cannot be trusted: %w", err)
	}
	var want keptIdentity
	if err := json.Unmarshal(data, &want); err != nil || want.Schema != keptSchema || want.SHA256 == "" {
		return keptIdentity{}, errors.New("its record does not parse")
	}
	got, err := current(path)
	if err != nil {
		return keptIdentity{}, err
	}
	if !got.sameInode(want) || got.Size != want.Size || got.Mtime != want.Mtime {
		return keptIdentity{}, errors.New("it is not the file this tool built and recorded there (replaced, rewritten or restored since)")
	}
	if got.SHA256 != want.SHA256 {
		return keptIdentity{}, fmt.Errorf("its content is not what this tool built and recorded there (SHA-256 %.12s…, recorded %.12s…: rewritten in place since)", got.SHA256, want.SHA256)
	}
	return got, nil
}

// recordKept writes the record of the kept binary rel as it is now, its
// content's digest included, as a private file (0600) written atomically
// beside it, and returns that identity.
func (b *Binaries) recordKept(rel string) (keptIdentity, error) {
	path := b.root.Join(rel)
	id, err := current(path)
	if err != nil {
		return keptIdentity{}, err
	}
	data, _ := json.Marshal(id)
	f, err := os.CreateTemp(filepath.Dir(path), ".record-*.tmp")
	if err != nil {
		return keptIdentity{}, fmt.Errorf("record it: %w", err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return keptIdentity{}, fmt.Errorf("record it: %w", err)
	}
	if err := f.Close(); err != nil {
		return keptIdentity{}, fmt.Errorf("record it: %w", err)
	}
	if err := os.Rename(f.Name(), path+recordSuffix); err != nil {
		return keptIdentity{}, fmt.Errorf("record it: %w", err)
	}
	return id, nil
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
