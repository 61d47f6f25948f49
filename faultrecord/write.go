package faultrecord

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/faultdir"
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
	root       string
	runID      string
	moduleRoot string
}

// WithResultsDir sets the results root. A relative root is made absolute against the working
// directory at construction time. internal/runenv resolves it for a test process.
func WithResultsDir(root string) RecorderOption {
	return func(c *recorderConfig) { c.root = root }
}

// WithRunID sets the run id written into records that do not carry their own.
func WithRunID(id string) RecorderOption {
	return func(c *recorderConfig) { c.runID = id }
}

// WithModuleRoot names the module the test runs in, so that a results root that is the module
// root itself (or one of its ancestors) is refused too.
func WithModuleRoot(dir string) RecorderOption {
	return func(c *recorderConfig) { c.moduleRoot = dir }
}

// ErrNoRecorderPlace means NewRecorder was given no results root or no run id.
var ErrNoRecorderPlace = errors.New("a recorder needs a results directory and a run id")

// NewRecorder returns a Recorder for the package with import path pkg, writing into the results
// root and with the run id the options give (both are required: a test process takes them from
// internal/runenv, so that records from every package of every module land in one directory). A
// root that can never be a results directory (`/`, a system directory, the home directory, the
// module root: see atomicfile.PrepareResultsDir) is refused with an error wrapping
// atomicfile.ErrBadResultsDir. Records are written confined to the root: never through a
// symbolic link.
func NewRecorder(pkg string, opts ...RecorderOption) (*Recorder, error) {
	var c recorderConfig
	for _, o := range opts {
		o(&c)
	}
	if c.root == "" || c.runID == "" {
		return nil, fmt.Errorf("new recorder: %w (results directory %q, run id %q)", ErrNoRecorderPlace, c.root, c.runID)
	}
	root, err := filepath.Abs(c.root)
	if err != nil {
		return nil, fmt.Errorf("new recorder: %w", err)
	}
	if why := atomicfile.Refused(root, c.moduleRoot); why != "" {
		return nil, fmt.Errorf("new recorder: %w: %s %s; set %s to a directory of its own", atomicfile.ErrBadResultsDir, root, why, envvar.ResultsDir)
	}
	return &Recorder{runID: c.runID, pkg: pkg, dir: faultdir.Of(root)}, nil
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
// that a record was lost, and the gate refuses the run because of it even if the caller ignores
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
	name := faultdir.RecordName(rec.RunID, rec.Test, rec.Leg)
	root, err := atomicfile.MakeRoot(filepath.Dir(r.dir))
	if err != nil {
		return "", fmt.Errorf("write record %s/%s: %w", rec.Test, rec.Leg, err)
	}
	err = root.Write(faultdir.Name+"/"+name, data, atomicfile.TempPattern(faultdir.RecordTempPattern), atomicfile.KeepTempOnError())
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
