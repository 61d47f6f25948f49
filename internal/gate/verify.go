package gate

import (
	"cmp"
	"context"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/capability"
	"github.com/contested/contested/internal/gotest"
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
	// Dir is the fault directory, faultrecord.FaultDir of the run's results directory
	// (contested/runenv). It is required, and its base name must be "fault" (see
	// faultrecord.ErrNotFaultDir).
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
// the report was written; a refusal wraps [ErrRefused] (and [faultrecord.ErrResultsDir] when the directory
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
	if !faultrecord.IsFaultDir(dir) {
		return nil, fmt.Errorf("verify %s: %w", dir, faultrecord.ErrNotFaultDir)
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
			refused = fmt.Errorf("verify %s: %w: %w: %w", dir, ErrRefused, faultrecord.ErrResultsDir, sc.dirErr)
		}
		errs = append(errs, refused)
	}
	if err := rep.writeFile(dir); err != nil {
		errs = append(errs, err)
	}
	return rep, errors.Join(errs...)
}

type inventoryResult struct {
	names []string
	err   error
}

// scanResult is the merged tally of every file in the fault directory.
type scanResult struct {
	tally
	dirMissing bool
	dirErr     error // listing the directory failed
}

// tally is one worker's share; workers never share one, so no locking on the hot path.
type tally struct {
	records    int // *.json files seen (valid or not)
	read       int
	armed      int
	fired      int
	byClass    map[string]ClassCount
	unfired    []Unfired
	unreadable []Unreadable
	stale      []string
}

func (t *tally) merge(o *tally) {
	t.records += o.records
	t.read += o.read
	t.armed += o.armed
	t.fired += o.fired
	for c, n := range o.byClass {
		m := t.byClass[c]
		m.Armed += n.Armed
		m.Fired += n.Fired
		t.byClass[c] = m
	}
	t.unfired = append(t.unfired, o.unfired...)
	t.unreadable = append(t.unreadable, o.unreadable...)
	t.stale = append(t.stale, o.stale...)
}

// scan lists dir in batches and hands record files to a bounded pool of readers. Names are
// classified by suffix and prefix only.
func scan(ctx context.Context, d *atomicfile.Dir, st stampState, opts Options) scanResult {
	res := scanResult{tally: tally{byClass: map[string]ClassCount{}}}
	if d == nil {
		return res
	}
	var surfaces map[string]struct{}
	if opts.Surfaces != nil {
		surfaces = make(map[string]struct{}, len(opts.Surfaces))
		for _, s := range opts.Surfaces {
			surfaces[s] = struct{}{}
		}
	}
	workers := opts.Workers
	if workers <= 0 {
		// Reading a record is mostly syscalls (openat, fstat, read, close) that block in the
		// kernel, so a few more readers than CPUs keep the CPUs busy; more only adds contention.
		workers = min(4*runtime.GOMAXPROCS(0), 64)
	}
	jobs := make(chan []string, workers)
	tallies := make([]tally, workers)
	var wg sync.WaitGroup
	for i := range workers {
		tallies[i].byClass = map[string]ClassCount{}
		r := &reader{dir: d, stamp: st, surfaces: surfaces, t: &tallies[i]}
		wg.Go(func() {
			for batch := range jobs {
				if ctx.Err() != nil {
					continue // drain so the lister never blocks
				}
				for _, name := range batch {
					r.read(name)
				}
			}
		})
	}
	list(ctx, d, &res, jobs)
	close(jobs)
	wg.Wait()
	for i := range tallies {
		res.merge(&tallies[i])
	}
	return res
}

// list reads dir's entries in batches and sends the record files to jobs in batches; what is
// not a record to read (a leftover temporary record, a link or other non-regular file) goes to
// res as unreadable, and a listing error to res.dirErr.
func list(ctx context.Context, d *atomicfile.Dir, res *scanResult, jobs chan<- []string) {
	const batchSize = 256
	for {
		entries, err := d.ReadDir(1024)
		batch := make([]string, 0, batchSize)
		for _, e := range entries {
			name := e.Name()
			switch faultrecord.Classify(name) {
			case faultrecord.KindRecordTemp:
				res.unreadable = append(res.unreadable, Unreadable{File: name,
					Reason: "incomplete write: a writer died before renaming this temporary record, so its fault has no evidence"})
			case faultrecord.KindRecord:
				// A link, directory, FIFO, socket or device is never opened. (A file system
				// that does not give types in listings gets the same refusals from the loader.)
				if t := e.Type(); t != 0 {
					res.records++
					res.unreadable = append(res.unreadable, Unreadable{File: name, Reason: notARecord(t)})
					continue
				}
				batch = append(batch, name)
				if len(batch) == batchSize {
					jobs <- batch
					batch = make([]string, 0, batchSize)
				}
			}
		}
		if len(batch) > 0 {
			jobs <- batch
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			res.dirErr = err
			return
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// reader reads record files for one worker, reusing its buffer and record value.
type reader struct {
	dir      *atomicfile.Dir
	stamp    stampState
	surfaces map[string]struct{}
	t        *tally
	buf      []byte
	rec      faultrecord.Record
}

func (r *reader) read(name string) {
	t := r.t
	t.records++
	data, mtime, err := r.dir.ReadFile(name, r.buf, faultrecord.MaxRecordSize)
	r.buf = data[:0]
	if err != nil {
		t.unreadable = append(t.unreadable, Unreadable{File: name, Reason: err.Error()})
		return
	}
	if r.stamp.present && !mtime.After(r.stamp.mtime) {
		t.stale = append(t.stale, name)
	}
	rec := &r.rec
	if err := faultrecord.ParseRecordInto(data, rec); err != nil {
		t.unreadable = append(t.unreadable, Unreadable{File: name, Reason: strings.TrimPrefix(err.Error(), faultrecord.ErrInvalidRecord.Error()+": ")})
		return
	}
	if r.surfaces != nil {
		if _, ok := r.surfaces[rec.Surface]; !ok {
			t.unreadable = append(t.unreadable, Unreadable{File: name, Reason: fmt.Sprintf("surface %s is not in the registry", rec.Surface)})
			return
		}
	}
	t.read++
	t.armed++
	c := t.byClass[rec.Class]
	c.Armed++
	if rec.Fired {
		t.fired++
		c.Fired++
	} else {
		t.unfired = append(t.unfired, Unfired{File: name, RunID: rec.RunID, Test: rec.Test, Package: rec.Package,
			Surface: rec.Surface, Class: rec.Class, Leg: rec.Leg, Seed: rec.Seed, Replay: rec.Replay})
	}
	t.byClass[rec.Class] = c
}

func buildReport(dir string, opts Options, st stampState, sc scanResult, inv inventoryResult) *Report {
	rep := &Report{
		Schema:               ReportSchema,
		Mode:                 opts.Mode,
		Dir:                  dir,
		RunID:                st.runID,
		StampPresent:         st.present,
		RecordsRead:          sc.read,
		RecordsUnreadable:    len(sc.unreadable),
		Unreadable:           sc.unreadable,
		Stale:                sc.stale,
		Armed:                sc.armed,
		Fired:                sc.fired,
		Unfired:              sc.unfired,
		ByClass:              sc.byClass,
		RecordingClasses:     sortedUnique(opts.RecordingClasses),
		ClassesWithZeroFired: []string{},
		SelfTests:            []SelfTest{},
	}
	if rep.Unreadable == nil {
		rep.Unreadable = []Unreadable{}
	}
	if rep.Stale == nil {
		rep.Stale = []string{}
	}
	if rep.Unfired == nil {
		rep.Unfired = []Unfired{}
	}
	slices.SortFunc(rep.Unreadable, func(a, b Unreadable) int { return strings.Compare(a.File, b.File) })
	slices.Sort(rep.Stale)
	slices.SortFunc(rep.Unfired, func(a, b Unfired) int {
		return cmpStrings(a.Test, b.Test, a.Surface, b.Surface, a.Leg, b.Leg, a.File, b.File)
	})
	for _, c := range rep.RecordingClasses {
		rep.ByClass[c] = rep.ByClass[c]
	}
	for _, c := range opts.KnownClasses {
		rep.ByClass[c] = rep.ByClass[c]
	}
	for _, c := range sortedKeys(rep.ByClass) {
		if rep.ByClass[c].Fired == 0 && !slices.Contains(rep.RecordingClasses, c) {
			rep.ClassesWithZeroFired = append(rep.ClassesWithZeroFired, c)
		}
	}

	rep.Phases = []Phase{
		phase1(dir, opts.Mode, st, sc),
		phase2(dir, sc),
		phase3(rep),
		phase4(rep),
		phase5(rep),
		phase6(rep, opts, inv),
	}
	if len(opts.Reused) > 0 {
		rep.Reused = opts.Reused
		countReused(rep)
	}
	if opts.Shard {
		rep.Shard = true
		for _, i := range []int{3, 4} {
			if p := &rep.Phases[i]; !p.OK {
				p.OK = true
				p.Detail = "deferred to the union of the shards (program-gate -merge): " + p.Detail
			}
		}
	}
	rep.Certified = true
	for _, p := range rep.Phases {
		rep.Certified = rep.Certified && p.OK
	}
	return rep
}

func phase1(dir string, mode Mode, st stampState, sc scanResult) Phase {
	p := Phase{Number: 1, Name: phaseThisRun}
	stampPath := filepath.Join(dir, faultrecord.StampName)
	switch {
	case st.err != nil:
		p.Detail = fmt.Sprintf("cannot examine gate stamp %s: %v", stampPath, st.err)
	case !st.present && mode == Paired:
		p.Detail = fmt.Sprintf("no gate stamp at %s: the pairing broke (no purge+stamp before the battery), or this verification already passed once", stampPath)
	case !st.present:
		p.OK = true
		p.Detail = fmt.Sprintf("no gate stamp at %s (standalone: announced, not fatal); the age of %d record files was not checked", stampPath, sc.records)
	case len(sc.stale) > 0:
		p.Detail = fmt.Sprintf("%d of %d record files are not newer than the stamp of %s (run %q): %s",
			len(sc.stale), sc.records, st.mtime.UTC().Format(time.RFC3339Nano), st.runID, listSome(sortedCopy(sc.stale)))
	default:
		p.OK = true
		p.Detail = fmt.Sprintf("all %d record files postdate the stamp of %s (run %q)", sc.records, st.mtime.UTC().Format(time.RFC3339Nano), st.runID)
		if mode == Standalone {
			p.Detail += "; standalone: the stamp is left in place"
		}
	}
	return p
}

func phase2(dir string, sc scanResult) Phase {
	p := Phase{Number: 2, Name: phaseAllRead}
	switch {
	case sc.dirErr != nil:
		p.Detail = fmt.Sprintf("cannot read fault directory %s: %v", dir, sc.dirErr)
	case len(sc.unreadable) > 0:
		items := make([]string, 0, len(sc.unreadable))
		for _, u := range sortedUnreadable(sc.unreadable) {
			items = append(items, u.File+": "+u.Reason)
		}
		p.Detail = fmt.Sprintf("%d unreadable of %d files: %s", len(sc.unreadable), sc.records+countTemps(sc.unreadable), listSome(items))
	case sc.dirMissing:
		p.OK = true
		p.Detail = fmt.Sprintf("no fault directory at %s: no record files", dir)
	default:
		p.OK = true
		p.Detail = fmt.Sprintf("all %d record files read", sc.read)
	}
	return p
}

func phase3(rep *Report) Phase {
	p := Phase{Number: 3, Name: phaseAllFired}
	if len(rep.Unfired) == 0 {
		p.OK = true
		p.Detail = fmt.Sprintf("all %d armed faults fired", rep.Armed)
		return p
	}
	items := make([]string, 0, len(rep.Unfired))
	for _, u := range rep.Unfired {
		items = append(items, fmt.Sprintf("%s %s/%s/%s seed %d", u.Test, u.Surface, u.Class, u.Leg, u.Seed))
	}
	p.Detail = fmt.Sprintf("%d of %d armed faults did not fire: %s", len(rep.Unfired), rep.Armed, listSome(items))
	return p
}

func phase4(rep *Report) Phase {
	p := Phase{Number: 4, Name: phaseAnyFired}
	if rep.Fired == 0 {
		p.Detail = fmt.Sprintf("zero faults fired (%d armed): a battery that executed no faults proves nothing", rep.Armed)
		return p
	}
	p.OK = true
	p.Detail = fmt.Sprintf("%d faults fired", rep.Fired)
	return p
}

func phase5(rep *Report) Phase {
	p := Phase{Number: 5, Name: phaseClasses, OK: true}
	var zero, fired []string
	for _, c := range rep.RecordingClasses {
		if n := rep.ByClass[c].Fired; n == 0 {
			zero = append(zero, c)
		} else {
			fired = append(fired, fmt.Sprintf("%s %d", c, n))
		}
	}
	switch {
	case len(rep.RecordingClasses) == 0:
		p.Detail = "no recording classes configured"
	case len(zero) > 0:
		p.OK = false
		p.Detail = "recording classes with zero fired: " + strings.Join(zero, ", ")
	default:
		p.Detail = "every recording class fired: " + strings.Join(fired, ", ")
	}
	if len(rep.ClassesWithZeroFired) > 0 {
		p.Detail += "; classes_with_zero_fired (not recording classes): " + strings.Join(rep.ClassesWithZeroFired, ", ")
	}
	return p
}

func phase6(rep *Report, opts Options, inv inventoryResult) Phase {
	p := Phase{Number: 6, Name: phaseSelfTests}
	names := sortedUnique(opts.SelfTests)
	if len(names) == 0 {
		p.OK = true
		p.Detail = "no self-tests configured"
		return p
	}
	// Names read past a test file that does not parse are declared: they
	// prove their tests present; only an absence stays in doubt.
	partial := errors.Is(inv.err, gotest.ErrUnparsed)
	msg := ""
	if inv.err != nil {
		msg = inv.err.Error()
		if len(msg) > maxDetailOutput {
			msg = msg[:maxDetailOutput] + "…"
		}
	}
	switch {
	case opts.Inventory == nil:
		p.Detail = "no test inventory to check the self-tests against"
	case inv.err != nil && !partial:
		p.Detail = "test inventory: " + msg
	}
	have := make(map[string]struct{}, len(inv.names))
	for _, n := range inv.names {
		have[n] = struct{}{}
	}
	var missing []string
	for _, n := range names {
		_, ok := have[n]
		ok = ok && (inv.err == nil || partial) && opts.Inventory != nil
		rep.SelfTests = append(rep.SelfTests, SelfTest{Name: n, Present: ok})
		if !ok {
			missing = append(missing, n)
		}
	}
	if p.Detail != "" {
		return p
	}
	if len(missing) > 0 {
		p.Detail = fmt.Sprintf("self-tests missing from the inventory of %d tests (deleted or renamed): %s", len(inv.names), strings.Join(missing, ", "))
		if partial {
			p.Detail += "; or declared in a test file that does not parse (fix it): " + msg
		}
		return p
	}
	p.OK = true
	p.Detail = fmt.Sprintf("all %d self-tests present: %s", len(names), strings.Join(names, ", "))
	if partial {
		p.Detail += " (some test files do not parse; the battery reports their packages)"
	}
	return p
}

// writeFile writes the report atomically to dir/fault-report.json, never through a symbolic
// link (see atomicfile).
func (r *Report) writeFile(dir string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("write fault report: %w", err)
	}
	if !faultrecord.IsFaultDir(dir) {
		return fmt.Errorf("write fault report in %s: %w", dir, faultrecord.ErrNotFaultDir)
	}
	root, err := atomicfile.MakeRoot(filepath.Dir(dir))
	if err != nil {
		return fmt.Errorf("write fault report: %w", err)
	}
	if err := root.Write(faultrecord.FaultDirName+"/"+faultrecord.ReportName, append(data, '\n'), atomicfile.TempPattern(faultrecord.ReportTempPattern)); err != nil {
		return fmt.Errorf("write fault report: %w", err)
	}
	return nil
}

// notARecord says why a directory entry of type t (not a regular file) is not read.
func notARecord(t fs.FileMode) string {
	switch {
	case t&fs.ModeSymlink != 0:
		return "a symbolic link: never followed (a record is a regular file a leg wrote)"
	case t&fs.ModeNamedPipe != 0:
		return "not a regular file (FIFO): never opened"
	case t&fs.ModeDevice != 0:
		return "not a regular file (device): never opened"
	case t&fs.ModeSocket != 0:
		return "not a regular file (socket): never opened"
	case t.IsDir():
		return "not a regular file (directory)"
	}
	return "not a regular file (" + t.String() + ")"
}

func listSome(items []string) string {
	if len(items) <= maxListed {
		return strings.Join(items, "; ")
	}
	return strings.Join(items[:maxListed], "; ") + fmt.Sprintf("; (+%d more, see %s)", len(items)-maxListed, faultrecord.ReportName)
}

func countTemps(us []Unreadable) int {
	n := 0
	for _, u := range us {
		if faultrecord.Classify(u.File) == faultrecord.KindRecordTemp {
			n++
		}
	}
	return n
}

func sortedUnique(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	out = slices.Compact(out)
	if out == nil {
		out = []string{}
	}
	return out
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

func sortedUnreadable(us []Unreadable) []Unreadable {
	out := slices.Clone(us)
	slices.SortFunc(out, func(a, b Unreadable) int { return strings.Compare(a.File, b.File) })
	return out
}

func sortedKeys(m map[string]ClassCount) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// cmpStrings compares pairs (a0,b0), (a1,b1), ... lexicographically.
func cmpStrings(pairs ...string) int {
	for i := 0; i+1 < len(pairs); i += 2 {
		if c := strings.Compare(pairs[i], pairs[i+1]); c != 0 {
			return c
		}
	}
	return 0
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
