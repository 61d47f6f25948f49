package faultrecord

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/contested/contested/internal/atomicfile"
)

// Recorder writes the records of one test process. It holds the run id, the package under
// test and the fault directory, so that a leg only says what it armed and what it saw.
//
// A Recorder is immutable once built and safe for concurrent use: parallel subtests share one.
type Recorder struct {
	runID string
	pkg   string
	dir   string // the fault directory, absolute
}

// RecorderOption changes how [NewRecorder] builds a Recorder.
type RecorderOption func(*recorderConfig)

type recorderConfig struct {
	root  string
	runID string
}

// WithResultsDir sets the results root instead of [ResultsDir]. A relative root is made
// absolute against the working directory at construction time.
func WithResultsDir(root string) RecorderOption {
	return func(c *recorderConfig) { c.root = root }
}

// WithRunID sets the run id instead of [RunID].
func WithRunID(id string) RecorderOption {
	return func(c *recorderConfig) { c.runID = id }
}

// NewRecorder returns a Recorder for the package with import path pkg. By default the run id
// comes from [RunID] and the results root from [ResultsDir] (so records from every package of
// every module land in one directory); options override either. A root that can never be a
// results directory (`/`, a system directory, the home directory, the module root: see
// [PrepareResultsDir]) is refused with [ErrBadResultsDir]. Records are written confined to the
// root: never through a symbolic link.
func NewRecorder(pkg string, opts ...RecorderOption) (*Recorder, error) {
	var c recorderConfig
	for _, o := range opts {
		o(&c)
	}
	if c.root == "" {
		root, err := ResultsDir()
		if err != nil {
			return nil, fmt.Errorf("new recorder: %w", err)
		}
		c.root = root
	}
	root, err := filepath.Abs(c.root)
	if err != nil {
		return nil, fmt.Errorf("new recorder: %w", err)
	}
	mod := ""
	if wd, err := os.Getwd(); err == nil {
		mod, _ = ModuleRoot(wd)
	}
	if why := refusedPlace(root, mod); why != "" {
		return nil, fmt.Errorf("new recorder: %w: %s %s; set %s to a directory of its own", ErrBadResultsDir, root, why, EnvResultsDir)
	}
	if c.runID == "" {
		c.runID = RunID()
	}
	return &Recorder{runID: c.runID, pkg: pkg, dir: FaultDir(root)}, nil
}

// RunID is the run id written into records that do not carry their own.
func (r *Recorder) RunID() string { return r.runID }

// Package is the import path written into records that do not carry their own.
func (r *Recorder) Package() string { return r.pkg }

// Dir is the fault directory records are written to.
func (r *Recorder) Dir() string { return r.dir }

// Write writes rec as a new file in the fault directory and returns its path.
//
// Empty Schema, RunID and Package are filled from the Recorder; times are stored in UTC;
// FiredAt is dropped when Fired is false. A record that [Record.Validate] rejects is not
// written: a reader would refuse it anyway, and the error here names the leg at fault.
//
// The write is atomic: a temporary ".record-*.tmp" file in the same directory is written,
// fsynced and renamed to a fresh "*.json" name, and the directory is fsynced. If Write fails
// after the temporary file exists, that file is left in place on purpose: it is the evidence
// that a record was lost, and [Verify] refuses the run because of it even if the caller ignores
// the error.
func (r *Recorder) Write(rec Record) (string, error) {
	if rec.Schema == "" {
		rec.Schema = Schema
	}
	if rec.RunID == "" {
		rec.RunID = r.runID
	}
	if rec.Package == "" {
		rec.Package = r.pkg
	}
	rec.ArmedAt = utc(rec.ArmedAt)
	rec.FiredAt = utc(rec.FiredAt)
	if !rec.Fired {
		rec.FiredAt = time.Time{}
	}
	if err := rec.Validate(); err != nil {
		return "", fmt.Errorf("write record %s/%s: %w", rec.Test, rec.Leg, err)
	}
	data, err := json.MarshalIndent(&rec, "", "  ")
	if err != nil {
		return "", fmt.Errorf("write record %s/%s: %w", rec.Test, rec.Leg, err)
	}
	data = append(data, '\n')
	name := recordFileName(rec.RunID, rec.Test, rec.Leg)
	root, err := openResults(filepath.Dir(r.dir), true)
	if err != nil {
		return "", fmt.Errorf("write record %s/%s: %w", rec.Test, rec.Leg, err)
	}
	err = root.Write(FaultDirName+"/"+name, data, atomicfile.TempPattern(recordTempPrefix+"*"+tempExt), atomicfile.KeepTempOnError())
	if err != nil {
		return "", fmt.Errorf("write record %s/%s: %w", rec.Test, rec.Leg, err)
	}
	return filepath.Join(r.dir, name), nil
}

func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

// openResults opens the results root holding a fault directory, confined (see atomicfile):
// nothing under it is reached through a symbolic link, and it is not one itself. With create, a
// missing root is made first (its ancestors are the caller's: they may be links).
func openResults(root string, create bool) (*atomicfile.Root, error) {
	if create {
		if err := os.MkdirAll(root, 0o755); err != nil {
			return nil, err
		}
	}
	return atomicfile.OpenRoot(root)
}

// stampFile is the content of the gate stamp. Only its mtime matters to phase 1; the run id is
// carried into the report so a reader can tell which validate wrote it.
type stampFile struct {
	Schema    string    `json:"schema"`
	RunID     string    `json:"run_id"`
	WrittenAt time.Time `json:"written_at"`
}

const stampSchema = "contested/gatestamp@1"

// WriteStamp writes dir/.gate-stamp atomically, creating dir if needed. dir must be a fault
// directory ([FaultDir]), and neither it nor its results root may be a symbolic link: the stamp
// is never written through one. The stamp's mtime is the reference for phase 1: every record
// must be strictly newer. Write it after [Purge] and before the battery starts.
func WriteStamp(dir, runID string) error {
	if !isFaultDir(dir) {
		return fmt.Errorf("write gate stamp in %s: %w", dir, ErrNotFaultDir)
	}
	data, err := json.Marshal(stampFile{Schema: stampSchema, RunID: runID, WrittenAt: time.Now().UTC()})
	if err != nil {
		return fmt.Errorf("write gate stamp: %w", err)
	}
	root, err := openResults(filepath.Dir(dir), true)
	if err != nil {
		return fmt.Errorf("write gate stamp: %w", err)
	}
	if err := root.Write(FaultDirName+"/"+StampName, append(data, '\n'), atomicfile.TempPattern(stampTempPattern)); err != nil {
		return fmt.Errorf("write gate stamp: %w", err)
	}
	return nil
}

// Purge removes the previous run's evidence from the fault directory dir before a paired run:
// record files (*.json), leftover temporary record, stamp and report files, and the old
// fault-report.json. It removes nothing else (the stamp itself is replaced by [WriteStamp];
// unknown files and subdirectories stay) and refuses, with [ErrNotFaultDir], a directory whose
// base name is not "fault". A missing directory is nothing to purge.
//
// It never acts through a symbolic link: a fault directory (or results root) that is one is
// refused with an error wrapping [ErrResultsDir] and [atomicfile.ErrSymlink], and nothing is
// deleted; a record name that is a link is unlinked, never followed.
func Purge(dir string) error {
	if !isFaultDir(dir) {
		return fmt.Errorf("purge %s: %w", dir, ErrNotFaultDir)
	}
	root, err := openResults(filepath.Dir(dir), false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("purge %s: %w: %w", dir, ErrResultsDir, err)
	}
	d, err := root.OpenDir(FaultDirName)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("purge %s: %w: %w", dir, ErrResultsDir, err)
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	if err != nil {
		return fmt.Errorf("purge %s: %w: %w", dir, ErrResultsDir, err)
	}
	var errs []error
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		switch classify(e.Name()) {
		case kindRecord, kindRecordTemp, kindOtherTemp, kindReport:
			if err := d.Remove(e.Name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("purge %s: %w", dir, err)
	}
	return nil
}
