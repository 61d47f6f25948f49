package gate

import (
	"cmp"
	"context"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/capability"
	"github.com/contested/contested/internal/faultdir"
)

// Errors that callers branch on with [errors.Is].
var (
	// ErrRefused means the gate did not certify the run: at least one phase failed.
	ErrRefused = errors.New("fault gate refused")
	// ErrInvalidOptions means [Options] cannot drive a verification (for example, no mode).
	ErrInvalidOptions = errors.New("invalid verify options")
)

// Mode says which of the two verifications runs. The difference is all in phase 1 and in what
// happens to the stamp.
type Mode int

const (
	// Paired is the verification inside validate, right after the battery that followed
	// [Purge] and [WriteStamp]. A missing stamp is a hard failure (the pairing broke, or this
	// verification already passed once); on success the stamp is consumed, so the same record
	// set can never certify twice; on failure everything is left in place for triage.
	Paired Mode = iota + 1
	// Standalone is program-gate: verification of whatever records are on disk, for triage. A
	// missing stamp is announced, not fatal; a present stamp is never consumed.
	Standalone
)

var (
	_ encoding.TextMarshaler   = Mode(0)
	_ encoding.TextUnmarshaler = (*Mode)(nil)
	_ fmt.Stringer             = Mode(0)
)

// String returns "paired", "standalone" or "mode(N)".
func (m Mode) String() string {
	switch m {
	case Paired:
		return "paired"
	case Standalone:
		return "standalone"
	}
	return "mode(" + strconv.Itoa(int(m)) + ")"
}

// MarshalText writes the mode as its name, so the report says "paired" rather than 1.
func (m Mode) MarshalText() ([]byte, error) {
	if m != Paired && m != Standalone {
		return nil, fmt.Errorf("marshal mode: %w: %s", ErrInvalidOptions, m)
	}
	return []byte(m.String()), nil
}

// UnmarshalText reads "paired" or "standalone", so a report can be read back and re-checked.
func (m *Mode) UnmarshalText(b []byte) error {
	switch string(b) {
	case "paired":
		*m = Paired
	case "standalone":
		*m = Standalone
	default:
		return fmt.Errorf("unmarshal mode %q: %w", b, ErrInvalidOptions)
	}
	return nil
}

// Options drive one [Verify]. Dir and Mode are required; everything else has a usable zero value.
type Options struct {
	// Dir is the fault directory, faultdir.Of the run's results directory
	// (internal/runenv). It is required, and its base name must be "fault" (see
	// faultdir.ErrNotFaultDir).
	Dir string
	// Mode is Paired (inside validate) or Standalone (program-gate).
	Mode Mode
	// RecordingClasses are the classes that must fire at least once (phase 5): the registry's
	// [gate] recording_classes.
	RecordingClasses []string
	// KnownClasses are the other classes the registry knows. A known class with no record is
	// still named in classes_with_zero_fired, which a record-only view could not do.
	KnownClasses []string
	// Surfaces, when non-nil, is the set of registered surface ids; a record naming any other
	// surface is unreadable. Nil skips the check (a non-nil empty slice registers nothing).
	Surfaces []string
	// SelfTests are the test names that must exist in the inventory (phase 6): the registry's
	// [gate] self_tests. Names are compared exactly with the inventory's (top-level) names.
	SelfTests []string
	// Inventory returns the test names of the module (for example internal/gotest.List bound
	// to the module root). It runs concurrently with the reading of records. It is only
	// called when SelfTests is not empty; nil then fails phase 6.
	Inventory func(ctx context.Context) ([]string, error)
	// Shard says the records are one shard's of a battery split across
	// machines (validate -shard=I/N): phases 4 and 5 (faults executed at
	// all, every recording class fired) are the union's to judge, by
	// program-gate -merge, so a shard that owned no contract test is not
	// refused for them; their details still say what this shard fired.
	Shard bool
	// Reused is the evidence of the surfaces validate reused instead of
	// running (their certificates' faults, fired in the earlier certified
	// runs they name). Phases 4 and 5 count it as that evidence, said so
	// in their details, never as this run's: Armed, Fired and ByClass stay
	// this run's own.
	Reused []ReusedEvidence
	// Workers bounds how many record files are read at once. Zero means 4×GOMAXPROCS, at most 64.
	Workers int

	_ struct{} // disallow positional literals
}

// ReportSchema is the "schema" of fault-report.json.
const ReportSchema = "contested/faultreport@1"

// Report is the accounting of one verification, written to fault/fault-report.json. Every list
// is sorted and no field depends on the time of verification, so two verifications of the same
// files give byte-identical reports.
type Report struct {
	Schema    string `json:"schema"`
	Certified bool   `json:"certified"`
	Mode      Mode   `json:"mode"`
	// Dir is the fault directory that was verified.
	Dir string `json:"dir"`
	// RunID is the run id written in the stamp, if a readable stamp was present.
	RunID         string `json:"run_id,omitempty"`
	StampPresent  bool   `json:"stamp_present"`
	StampConsumed bool   `json:"stamp_consumed"`
	// Shard says phases 4 and 5 were left to the union of the shards
	// (Options.Shard).
	Shard bool `json:"shard,omitempty"`
	// Reused is the earlier runs' evidence phases 4 and 5 counted for the
	// surfaces this run reused (Options.Reused).
	Reused []ReusedEvidence `json:"reused,omitempty"`
	// Phases holds all six phases in order, whether or not an earlier one failed.
	Phases []Phase `json:"phases"`
	// RecordsRead counts valid records; RecordsUnreadable counts entries of Unreadable.
	RecordsRead       int          `json:"records_read"`
	RecordsUnreadable int          `json:"records_unreadable"`
	Unreadable        []Unreadable `json:"unreadable"`
	// Stale lists record files not newer than the stamp (phase 1).
	Stale   []string  `json:"stale"`
	Armed   int       `json:"armed"`
	Fired   int       `json:"fired"`
	Unfired []Unfired `json:"unfired"`
	// ByClass counts armed and fired per class, over classes seen in records, recording
	// classes and known classes.
	ByClass              map[string]ClassCount `json:"by_class"`
	RecordingClasses     []string              `json:"recording_classes"`
	ClassesWithZeroFired []string              `json:"classes_with_zero_fired"`
	SelfTests            []SelfTest            `json:"self_tests"`
	// Surfaces are the registered surfaces' contract verdicts, reported
	// beside the six phases (they do not change them); empty until a
	// caller judges them (see SurfaceVerdict).
	Surfaces []SurfaceVerdict `json:"surfaces,omitempty"`
	// Capabilities is the capability matrix of the run that produced the
	// records (validate's), when it worked one out: what each leg, stage
	// and test needs, and whether this machine has it.
	Capabilities capability.Matrix `json:"capabilities,omitempty"`
}

// Phase is the outcome of one of the six phases.
type Phase struct {
	Number int    `json:"number"`
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Unreadable is a file in the fault directory that could not be taken as a valid record.
type Unreadable struct {
	File   string `json:"file"`
	Reason string `json:"reason"`
}

// Unfired is an armed fault that never fired: the test set up an injection that the code path
// never reached. It carries what is needed to replay it.
type Unfired struct {
	File    string `json:"file"`
	RunID   string `json:"run_id"`
	Test    string `json:"test"`
	Package string `json:"package"`
	Surface string `json:"surface"`
	Class   string `json:"class"`
	Leg     string `json:"leg"`
	Seed    int64  `json:"seed"`
	Replay  string `json:"replay"`
}

// ClassCount is how many faults of one class were armed and fired.
type ClassCount struct {
	Armed int `json:"armed"`
	Fired int `json:"fired"`
}

// SelfTest says whether one pinned self-test is in the test inventory.
type SelfTest struct {
	Name    string `json:"name"`
	Present bool   `json:"present"`
}

// The six phase names (docs/concepts/gate.md).
const (
	phaseThisRun    = "records belong to this run"
	phaseAllRead    = "every record file was read"
	phaseAllFired   = "every armed fault fired"
	phaseAnyFired   = "faults executed at all"
	phaseClasses    = "every recording class fired"
	phaseSelfTests  = "self-tests exist in the test inventory"
	maxListed       = 10   // names listed in a phase detail before "(+N more)"
	maxDetailOutput = 4000 // bytes of inventory error kept in the phase 6 detail
)

// Verify runs the six verification phases (docs/concepts/gate.md) over the records in opts.Dir, writes
// the report to fault-report.json in that directory and returns it.
//
// All six phases are evaluated and recorded even when an earlier one fails, so that one report
// shows every reason a run was refused. The error is nil exactly when the run is certified and
// the report was written; a refusal wraps [ErrRefused] (and [faultdir.ErrUnreadable] when the directory
// could not be listed); a failure to write the report is returned as well, joined.
//
// Verify deletes nothing except, in Paired mode on success, the stamp (which makes it
// single-use). Consuming is a claim only one verification can win (see claimStamp): if it
// fails (the stamp vanished or was replaced since it was read, or could not be renamed), phase
// 1 fails, so two paired verifications of one record set never both certify, and a stamp that
// survives a success never lets the same records certify again. A cancelled ctx returns ctx's
// error and no report.
func Verify(ctx context.Context, opts Options) (*Report, error) {
	if opts.Mode != Paired && opts.Mode != Standalone {
		return nil, fmt.Errorf("verify fault records: %w: mode %s", ErrInvalidOptions, opts.Mode)
	}
	if opts.Dir == "" {
		return nil, fmt.Errorf("verify fault records: %w: no fault directory", ErrInvalidOptions)
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("verify fault records: %w", err)
	}
	if !faultdir.Is(dir) {
		return nil, fmt.Errorf("verify %s: %w", dir, faultdir.ErrNotFaultDir)
	}

	// The inventory (the module's test files, listed and parsed) may take a second or two; read it while reading records.
	var inv inventoryResult
	invDone := make(chan struct{})
	if len(opts.SelfTests) > 0 && opts.Inventory != nil {
		go func() {
			defer close(invDone)
			inv.names, inv.err = opts.Inventory(ctx)
		}()
	} else {
		close(invDone)
	}

	fd, dirMissing, dirErr := openFaultDir(dir)
	if fd != nil {
		defer fd.Close()
	}
	st := readStamp(fd)
	sc := scan(ctx, fd, st, opts)
	sc.dirMissing, sc.dirErr = dirMissing, dirErr
	<-invDone
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("verify %s: %w", dir, err)
	}

	rep := buildReport(dir, opts, st, sc, inv)
	if rep.Certified && opts.Mode == Paired {
		note, err := claimStamp(fd, st)
		if err != nil {
			rep.Phases[0].OK = false
			rep.Phases[0].Detail += fmt.Sprintf("; consume stamp: %v", err)
			rep.Certified = false
		} else {
			rep.StampConsumed = true
		}
		rep.Phases[0].Detail += note
	}

	var errs []error
	if !rep.Certified {
		var failed []string
		for _, p := range rep.Phases {
			if !p.OK {
				failed = append(failed, strconv.Itoa(p.Number))
			}
		}
		refused := fmt.Errorf("verify %s: %w (phase %s failed)", dir, ErrRefused, strings.Join(failed, ", "))
		if sc.dirErr != nil {
			refused = fmt.Errorf("verify %s: %w: %w: %w", dir, ErrRefused, faultdir.ErrUnreadable, sc.dirErr)
		}
		errs = append(errs, refused)
	}
	if err := rep.writeFile(dir); err != nil {
		errs = append(errs, err)
	}
	return rep, errors.Join(errs...)
}

// writeFile writes the report atomically to dir/fault-report.json, never through a symbolic
// link (see atomicfile).
func (r *Report) writeFile(dir string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("write fault report: %w", err)
	}
	if !faultdir.Is(dir) {
		return fmt.Errorf("write fault report in %s: %w", dir, faultdir.ErrNotFaultDir)
	}
	root, err := atomicfile.MakeRoot(filepath.Dir(dir))
	if err != nil {
		return fmt.Errorf("write fault report: %w", err)
	}
	if err := root.Write(faultdir.Name+"/"+faultdir.ReportName, append(data, '\n'), atomicfile.TempPattern(faultdir.ReportTempPattern)); err != nil {
		return fmt.Errorf("write fault report: %w", err)
	}
	return nil
}

// ReusedEvidence is a reused surface's faults: what fired for it in the
// earlier certified run it was reused from.
type ReusedEvidence struct {
	Surface string `json:"surface"`
	Class   string `json:"class"`
	Fired   int    `json:"fired"`
	RunID   string `json:"run_id"`
}

// countReused lets phases 4 and 5 stand on the reused surfaces' earlier
// evidence where this run's own is missing, and says so: a fault a reused
// surface fired is evidence of the run that fired it, not of this one.
func countReused(rep *Report) {
	byClass := map[string]int{}
	total := 0
	var runs []string
	for _, e := range rep.Reused {
		byClass[e.Class] += e.Fired
		total += e.Fired
		if !slices.Contains(runs, e.RunID) {
			runs = append(runs, e.RunID)
		}
	}
	slices.Sort(runs)
	if p := &rep.Phases[3]; !p.OK && total > 0 {
		p.OK = true
		p.Detail = fmt.Sprintf("no fault fired in this run (%d armed); the reused surfaces' %d faults fired in earlier certified runs (%s), their evidence, not this run's", rep.Armed, total, strings.Join(runs, ", "))
	} else if p.OK && total > 0 {
		p.Detail += fmt.Sprintf(" in this run; the reused surfaces' %d fired in earlier certified runs (%s)", total, strings.Join(runs, ", "))
	}
	p := &rep.Phases[4]
	var fromReuse, still []string
	for _, c := range rep.RecordingClasses {
		if rep.ByClass[c].Fired > 0 {
			continue
		}
		if byClass[c] > 0 {
			fromReuse = append(fromReuse, fmt.Sprintf("%s %d", c, byClass[c]))
		} else {
			still = append(still, c)
		}
	}
	if len(fromReuse) == 0 {
		return
	}
	if len(still) == 0 {
		p.OK = true
		var own []string
		for _, c := range rep.RecordingClasses {
			if n := rep.ByClass[c].Fired; n > 0 {
				own = append(own, fmt.Sprintf("%s %d", c, n))
			}
		}
		p.Detail = "every recording class has evidence; fired in this run: " + cmp.Or(strings.Join(own, ", "), "none")
	}
	p.Detail += "; fired only in the earlier certified runs of reused surfaces: " + strings.Join(fromReuse, ", ")
}
