// Package legstart keeps the record a leg writes the moment it starts,
// before anything can fail: which test ran which lever with which seed,
// so that its reruns, the ladder and every replay line use that seed.
package legstart

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/faultdir"
)

// Schema is the schema of a leg's start record.
const Schema = "contested/legstart@1"

// DirName is the folder of the results directory that holds the legs'
// start records (legs/*.json), beside fault/.
const DirName = "legs"

// maxStartSize caps a start record file; a larger one is not ours.
const maxStartSize = 64 << 10

// Start is what a leg records the moment it starts, before anything
// can fail: which test ran which lever of which surface with which seed,
// and the command that replays it. A leg that fails before its first fault
// arms writes no fault record; its start record still carries its seed,
// so that a rerun, the ladder and every replay line use the seed it ran
// with, never 0.
type Start struct {
	Schema    string    `json:"schema"`
	RunID     string    `json:"run_id"`
	Test      string    `json:"test"`
	Package   string    `json:"package"`
	Surface   string    `json:"surface"`
	Leg       string    `json:"leg"`
	Seed      int64     `json:"seed"`
	Level     int       `json:"level"`
	Replay    string    `json:"replay"`
	StartedAt time.Time `json:"started_at"`
}

// Write writes s as a new file under the results directory root's legs/,
// atomically, and returns its path. s names its run, package, test and
// leg.
func Write(root string, s Start) (string, error) {
	s.Schema = Schema
	s.StartedAt = s.StartedAt.UTC()
	if s.Test == "" || s.Leg == "" {
		return "", fmt.Errorf("write the start of %s/%s: a start record names its test and leg", s.Test, s.Leg)
	}
	data, err := json.MarshalIndent(&s, "", "  ")
	if err != nil {
		return "", fmt.Errorf("write the start of %s/%s: %w", s.Test, s.Leg, err)
	}
	r, err := atomicfile.MakeRoot(root)
	if err != nil {
		return "", fmt.Errorf("write the start of %s/%s: %w", s.Test, s.Leg, err)
	}
	name := faultdir.RecordName(s.RunID, s.Test, s.Leg)
	if err := r.Write(DirName+"/"+name, append(data, '\n')); err != nil {
		return "", fmt.Errorf("write the start of %s/%s: %w", s.Test, s.Leg, err)
	}
	return filepath.Join(root, DirName, name), nil
}

// Read reads the start records under the results directory root,
// oldest first, with the artifacts' one loader: no link followed, no FIFO
// waited on, no file over its cap read. A file that is not a start record
// is skipped and counted; a missing folder holds none.
func Read(root string) (starts []Start, skipped int, err error) {
	r, err := atomicfile.OpenRoot(root)
	if err != nil {
		return nil, 0, fmt.Errorf("read the legs' start records: %w", err)
	}
	d, err := r.OpenDir(DirName)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read the legs' start records: %w", err)
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	if err != nil {
		return nil, 0, fmt.Errorf("read the legs' start records: %w", err)
	}
	var buf []byte
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		data, _, err := d.ReadFile(e.Name(), buf, maxStartSize)
		if err != nil {
			skipped++
			continue
		}
		buf = data[:0]
		var s Start
		if json.Unmarshal(data, &s) != nil || s.Schema != Schema || s.Test == "" {
			skipped++
			continue
		}
		starts = append(starts, s)
	}
	slices.SortFunc(starts, func(a, b Start) int { return a.StartedAt.Compare(b.StartedAt) })
	return starts, skipped, nil
}

// OfRun keeps the start records of run id.
func OfRun(starts []Start, run string) []Start {
	var out []Start
	for _, s := range starts {
		if s.RunID == run {
			out = append(out, s)
		}
	}
	return out
}

// Of returns the start record of test in package pkg (empty: any),
// the latest when there are several.
func Of(starts []Start, pkg, test string) (Start, bool) {
	for i := len(starts) - 1; i >= 0; i-- {
		s := starts[i]
		if s.Test == test && (pkg == "" || s.Package == "" || s.Package == pkg) {
			return s, true
		}
	}
	return Start{}, false
}
