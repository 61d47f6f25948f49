package atomicfile

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// StaleTemp is how long a temporary file of an atomic write must have
// gone unwritten before it counts as left by a killed process: a write
// takes milliseconds, so nothing alive still holds one that old.
const StaleTemp = 10 * time.Minute

// staleName matches the temporary files this package makes under the
// default pattern (".<name>.tmp-<digits>") and the results directory's
// write probe (".contested-probe-<digits>"). Temporary records
// (".record-*.tmp") are not among them: they are evidence of a lost write,
// which the gate counts and the next paired battery purges.
var staleName = regexp.MustCompile(`^\..+\.tmp-[0-9]+$|^\.contested-probe-[0-9]+$`)

// RemoveStaleTemps removes under root the temporary files of atomic writes
// that a process killed mid-write (SIGKILL) left, unwritten for olderThan,
// never following a link, saying one line each on w; it returns how many
// it removed. Every command's PrepareResultsDir calls it, and so does the
// sweep.
func RemoveStaleTemps(root string, olderThan time.Duration, w io.Writer) int {
	n := 0
	cutoff := time.Now().Add(-olderThan)
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || !staleName.MatchString(d.Name()) {
			return nil
		}
		fi, err := d.Info()
		if err != nil || fi.ModTime().After(cutoff) {
			return nil
		}
		if os.Remove(path) == nil {
			n++
			fmt.Fprintf(w, "removed %s, left by a write that was killed %s ago\n", path, time.Since(fi.ModTime()).Round(time.Minute))
		}
		return nil
	})
	return n
}
