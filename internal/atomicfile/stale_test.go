package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestTheNextCommandRemovesWhatAKilledWriteLeft: a temporary file of an
// atomic write that a killed process left in the results directory, or
// below it, is removed when the next command readies the directory, once
// nobody has written it for StaleTemp; a fresh one (a write in flight), a
// temporary record (evidence the gate counts) and any other file stay.
func TestTheNextCommandRemovesWhatAKilledWriteLeft(t *testing.T) {
	old := time.Now().Add(-2 * StaleTemp)
	for _, tt := range []struct {
		name    string
		file    string
		mtime   time.Time
		removed bool
	}{
		{"a killed write's temporary file", ".validate.json.tmp-123456", old, true},
		{"one below the results directory", "ladder/reruns/TestX/.summary.md.tmp-42", old, true},
		{"a killed write probe", ".contested-probe-987", old, true},
		{"a write in flight", ".validate.json.tmp-123456", time.Now(), false},
		{"a temporary record, evidence", "fault/.record-123.tmp", old, false},
		{"an artifact", "validate.json", old, false},
		{"a name that only looks alike", ".notes.tmp-draft", old, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mod := t.TempDir()
			os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module example.com/m\n"), 0o644)
			dir := filepath.Join(mod, DefaultResultsDir)
			p := filepath.Join(dir, tt.file)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("{"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, tt.mtime, tt.mtime); err != nil {
				t.Fatal(err)
			}
			if _, err := PrepareResultsDir(dir, mod); err != nil {
				t.Fatal(err)
			}
			_, err := os.Lstat(p)
			if gone := err != nil; gone != tt.removed {
				t.Errorf("%s after PrepareResultsDir: removed %v, want %v", tt.file, gone, tt.removed)
			}
		})
	}
}
