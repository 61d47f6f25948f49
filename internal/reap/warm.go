package reap

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/contested/contested/internal/files"
)

// maxWarmRecord caps the owner record read back.
const maxWarmRecord = 1 << 20

// WarmHeld reports whether the warm layer labelled with the owner record
// path and run is still wanted, so that no sweep removes it. The record
// may be any cache directory's, any user's: a layer is released only when
// its record provably no longer holds it: the record is missing from a
// directory this process can read, or it is a record that names another
// run. A record this process cannot read (another user's private
// directory), that is not a regular file or does not parse, holds its
// layer: nothing this process cannot prove released is removed. Reading
// never follows a link and never waits on a FIFO.
func WarmHeld(path, run string) bool {
	if path == "" || !filepath.IsAbs(path) {
		return true // not a record this project wrote: never proven released
	}
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		// Missing, and the directory says so (a directory this process
		// cannot search answers EACCES, not ENOENT).
		return false
	}
	b, _, err := files.Read(path, maxWarmRecord)
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist)
	}
	var rec struct {
		RunID string `json:"run_id"`
	}
	if json.Unmarshal(b, &rec) != nil || rec.RunID == "" {
		return true
	}
	return rec.RunID == run
}
