package gate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"time"

	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/faultdir"
)

// stampFile is the content of the gate stamp. Only its mtime matters to phase 1; the run id is
// carried into the report so a reader can tell which validate wrote it.
type stampFile struct {
	Schema    string    `json:"schema"`
	RunID     string    `json:"run_id"`
	WrittenAt time.Time `json:"written_at"`
}

const stampSchema = "contested/gatestamp@1"

// WriteStamp writes dir/.gate-stamp atomically, creating dir if needed. dir must be a fault
// directory ([faultdir.Of]), and neither it nor its results root may be a symbolic link: the stamp
// is never written through one. The stamp's mtime is the reference for phase 1: every record
// must be strictly newer. Write it after [Purge] and before the battery starts.
func WriteStamp(dir, runID string) error {
	if !faultdir.Is(dir) {
		return fmt.Errorf("write gate stamp in %s: %w", dir, faultdir.ErrNotFaultDir)
	}
	data, err := json.Marshal(stampFile{Schema: stampSchema, RunID: runID, WrittenAt: time.Now().UTC()})
	if err != nil {
		return fmt.Errorf("write gate stamp: %w", err)
	}
	root, err := atomicfile.MakeRoot(filepath.Dir(dir))
	if err != nil {
		return fmt.Errorf("write gate stamp: %w", err)
	}
	if err := root.Write(faultdir.Name+"/"+faultdir.StampName, append(data, '\n'), atomicfile.TempPattern(faultdir.StampTempPattern)); err != nil {
		return fmt.Errorf("write gate stamp: %w", err)
	}
	return nil
}

// Purge removes the previous run's evidence from the fault directory dir before a paired run:
// record files (*.json), leftover temporary record, stamp and report files, and the old
// fault-report.json. It removes nothing else (the stamp itself is replaced by [WriteStamp];
// unknown files and subdirectories stay) and refuses, with [faultdir.ErrNotFaultDir], a directory whose
// base name is not "fault". A missing directory is nothing to purge.
//
// It never acts through a symbolic link: a fault directory (or results root) that is one is
// refused with an error wrapping [faultdir.ErrUnreadable] and [atomicfile.ErrSymlink], and nothing is
// deleted; a record name that is a link is unlinked, never followed.
func Purge(dir string) error {
	if !faultdir.Is(dir) {
		return fmt.Errorf("purge %s: %w", dir, faultdir.ErrNotFaultDir)
	}
	root, err := atomicfile.OpenRoot(filepath.Dir(dir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("purge %s: %w: %w", dir, faultdir.ErrUnreadable, err)
	}
	d, err := root.OpenDir(faultdir.Name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("purge %s: %w: %w", dir, faultdir.ErrUnreadable, err)
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	if err != nil {
		return fmt.Errorf("purge %s: %w: %w", dir, faultdir.ErrUnreadable, err)
	}
	var errs []error
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		switch faultdir.Classify(e.Name()) {
		case faultdir.KindRecord, faultdir.KindRecordTemp, faultdir.KindOtherTemp, faultdir.KindReport:
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

// stampState is what phase 1 knows about the stamp.
type stampState struct {
	present bool
	mtime   time.Time
	data    []byte // its content, to tell it from a stamp written later
	runID   string
	err     error // the stamp exists but could not be examined
}

// claimPattern names a claimed stamp: ".gate-stamp-" and ".tmp" make it a leftover temporary
// file that Verify ignores and Purge removes.
const claimPattern = ".gate-stamp-claim-%016x.tmp"

// errStampGone and errStampReplaced say why a certified paired verification could not consume
// its stamp.
var (
	errStampGone     = errors.New("the stamp vanished after it was read (another verification consumed it, or it was removed): these records may not certify twice")
	errStampReplaced = errors.New("the stamp was replaced after it was read (a new purge and stamp began): it is left for that run")
)

// claimStamp consumes the stamp this verification read, st, so that one stamp certifies at
// most once however many verifications run at the same time. The claim is a rename of the stamp
// to a name of this verification's own: of several renames of one file, exactly one succeeds.
// What was taken is then compared with what was read (mtime and content): a stamp written since
// is not this verification's, so it is put back (never over a newer one) and the verification
// refuses. A stamp that is gone when the claim is made refuses too. note reports a claim file
// that could not be removed (the stamp is consumed all the same; Purge removes the file).
func claimStamp(d *atomicfile.Dir, st stampState) (note string, err error) {
	// Only reached after phase 1 passed in Paired mode: the stamp was present, so d is open.
	claim := fmt.Sprintf(claimPattern, rand.Uint64())
	if err := d.Rename(faultdir.StampName, claim); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", errStampGone
		}
		return "", fmt.Errorf("claim it: %w (a stamp that outlives a success would certify these records again)", err)
	}
	data, mtime, rerr := d.ReadFile(claim, nil, maxStampSize)
	switch {
	case rerr != nil:
		err = fmt.Errorf("read back the claimed stamp: %w", rerr)
	case !mtime.Equal(st.mtime) || !bytes.Equal(data, st.data):
		err = errStampReplaced
	}
	if err != nil {
		if lerr := d.Link(claim, faultdir.StampName); lerr != nil && !errors.Is(lerr, fs.ErrExist) {
			err = fmt.Errorf("%w; putting it back failed: %v", err, lerr)
		}
	}
	if rmErr := d.Remove(claim); rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) {
		note = fmt.Sprintf("; the claimed stamp %s could not be removed (the next purge removes it): %v", claim, rmErr)
	}
	return note, err
}

// maxStampSize bounds the stamp read: its content is a few dozen bytes of JSON.
const maxStampSize = 64 << 10

// openFaultDir opens the fault directory dir under its results root, confined: neither may be
// a symbolic link, and every file is read relative to the open directory (see atomicfile). A
// missing root or fault directory is missing; anything else that stops the open is an error.
func openFaultDir(dir string) (d *atomicfile.Dir, missing bool, err error) {
	root, err := atomicfile.OpenRoot(filepath.Dir(dir))
	if err == nil {
		d, err = root.OpenDir(faultdir.Name)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, true, nil
	case err != nil:
		return nil, false, err
	}
	return d, false, nil
}

func readStamp(d *atomicfile.Dir) stampState {
	if d == nil {
		return stampState{}
	}
	data, mtime, err := d.ReadFile(faultdir.StampName, nil, maxStampSize)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return stampState{}
	case err != nil:
		return stampState{err: err}
	}
	st := stampState{present: true, mtime: mtime, data: data}
	// The content is informational: only the mtime is the reference, so a stamp whose content
	// does not parse still works (validate's old stamp format, a touch by hand).
	var s stampFile
	if json.Unmarshal(data, &s) == nil {
		st.runID = s.RunID
	}
	return st
}
