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
const keptSchema = "contested/kept-binary@1"

// maxKeptRecord caps a record read back: a few numbers.
const maxKeptRecord = 4 << 10

// keptIdentity is what a kept binary's record holds: which file this tool
// built, as the file system names it. A file put in its place (renamed,
// copied, restored from an archive, rewritten) is another inode or has
// another size or time, and no one but this user can write the record,
// which lives in the same private directory.
type keptIdentity struct {
	Schema string `json:"schema"`
	Dev    uint64 `json:"dev"`
	Ino    uint64 `json:"ino"`
	Size   int64  `json:"size"`
	Mtime  int64  `json:"mtime_ns"`
}

func identityOf(fi fs.FileInfo) (keptIdentity, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return keptIdentity{}, false
	}
	return keptIdentity{Schema: keptSchema, Dev: uint64(st.Dev), Ino: uint64(st.Ino), Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}, true
}

// checkKept returns nil when the kept binary rel is the file this tool
// recorded there, an error wrapping fs.ErrNotExist when nothing is there,
// and otherwise says what is wrong with it (it is then never run).
func (b *Binaries) checkKept(rel string) error {
	path := b.root.Join(rel)
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if err := private.CheckFile(path, fi, 0o022); err != nil {
		return errors.Unwrap(err) // the path is said by the caller
	}
	got, ok := identityOf(fi)
	if !ok {
		return errors.New("its identity cannot be read on this platform")
	}
	data, err := private.ReadFile(path+recordSuffix, 0o077, maxKeptRecord)
	if errors.Is(err, fs.ErrNotExist) {
		return errors.New("no record says this tool built it (a file put there by something else, or restored from a cache)")
	}
	if err != nil {
		return fmt.Errorf("its record cannot be trusted: %w", err)
	}
	var want keptIdentity
	if err := json.Unmarshal(data, &want); err != nil || want.Schema != keptSchema {
		return errors.New("its record does not parse")
	}
	if got != want {
		return errors.New("it is not the file this tool built and recorded there (replaced, rewritten or restored since)")
	}
	return nil
}

// recordKept writes the record of the kept binary rel as it is now: a
// private file (0600) written atomically beside it.
func (b *Binaries) recordKept(rel string) error {
	path := b.root.Join(rel)
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	id, ok := identityOf(fi)
	if !ok {
		return errors.New("its identity cannot be read on this platform")
	}
	data, _ := json.Marshal(id)
	f, err := os.CreateTemp(filepath.Dir(path), ".record-*.tmp")
	if err != nil {
		return fmt.Errorf("record it: %w", err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("record it: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("record it: %w", err)
	}
	if err := os.Rename(f.Name(), path+recordSuffix); err != nil {
		return fmt.Errorf("record it: %w", err)
	}
	return nil
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
