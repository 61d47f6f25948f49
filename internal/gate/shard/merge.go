package shard

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/faultdir"
	"github.com/contested/contested/internal/gate"
	"github.com/contested/contested/internal/gotest"
)

// Errors a merge returns, for errors.Is.
var (
	// ErrRefused: at least one shard was refused (missing, duplicated,
	// foreign, tampered, stale, uncertified, already merged, or the shards'
	// ownership does not cover the inventory exactly once), or the union's
	// six phases refused.
	ErrRefused = errors.New("merge refused")
	// ErrBadInput: the merge cannot start (no directory, a directory that
	// is not a shard's, the union's own directory among the shards).
	ErrBadInput = errors.New("bad merge input")
)

// ClaimName is the file a certified merge creates beside each shard's
// manifest: the shard has been certified as part of a union, and no later
// merge certifies it again. It is the only file a merge writes into a
// shard's directory, and nothing there is ever deleted.
const ClaimName = "shard.merged.json"

// Kind is why a shard was refused.
type Kind string

// The kinds of refusal.
const (
	Missing     Kind = "missing"     // no directory holds shard i of N
	Duplicate   Kind = "duplicate"   // two directories hold shard i of N: a shard run twice
	Foreign     Kind = "foreign"     // another run, split, count or module
	Tampered    Kind = "tampered"    // records differ from the manifest's digests
	Stale       Kind = "stale"       // records that do not postdate the shard's own stamp
	Uncertified Kind = "uncertified" // the shard's own verification refused it
	Ownership   Kind = "ownership"   // a test of the inventory owned by no shard or by two
	Claimed     Kind = "claimed"     // already certified by an earlier merge
)

// Refusal is one reason the merge refused, naming the shard (and its
// directory) at fault.
type Refusal struct {
	Kind   Kind   `json:"kind"`
	Shard  string `json:"shard,omitempty"` // "2/3"
	Dir    string `json:"dir,omitempty"`
	Detail string `json:"detail"`
}

// String is "shard 2/3 (dir): tampered: detail".
func (r Refusal) String() string {
	who := "shards"
	if r.Shard != "" {
		who = "shard " + r.Shard
	}
	if r.Dir != "" {
		who += " (" + r.Dir + ")"
	}
	return fmt.Sprintf("%s: %s: %s", who, r.Kind, r.Detail)
}

// MergeOptions drive one [Merge].
type MergeOptions struct {
	// Dirs are the shards' results directories (each holds shard.json,
	// validate.json and fault/), or directories that hold one as
	// test-results/.
	Dirs []string
	// ResultsDir is the merge's own results directory: the union's records
	// go to its fault/ (purged and stamped first, as validate does), with
	// its fault-report.json. It must not be one of Dirs.
	ResultsDir string
	// Inventory is the module's tests, package by package: every one must
	// be owned by exactly one shard.
	Inventory []gotest.Package
	// Gate carries the registry's side of the union's verification:
	// recording classes, known classes, surfaces, self-tests and inventory.
	// Dir and Mode are the merge's.
	Gate gate.Options
}

// Shard is one directory of a merge as the merge saw it.
type Shard struct {
	Dir      string    `json:"dir"`
	Manifest *Manifest `json:"-"`
	Shard    string    `json:"shard"`
	RunID    string    `json:"run_id"`
	Records  int       `json:"records"`
	OK       bool      `json:"ok"`
}

// Result is a merge's accounting.
type Result struct {
	Schema      string    `json:"schema"`
	Certified   bool      `json:"certified"`
	SharedRunID string    `json:"shared_run_id"`
	Total       int       `json:"total"`
	Shards      []Shard   `json:"shards"`
	Refusals    []Refusal `json:"refusals"`
	// Union is the six phases over every shard's records, run only when no
	// shard was refused.
	Union *gate.Report `json:"union,omitempty"`
	// Battery is the union of the shards' test outcomes.
	Battery *battery.Result `json:"-"`
	// Claimed are the shard directories this merge claimed.
	Claimed []string `json:"claimed,omitempty"`
}

// ResultSchema is the "schema" of merge.json.
const ResultSchema = "contested/merge@1"

// Merge certifies the union of the shards in opts.Dirs (see the package
// doc). Every check runs and every refusal is listed, each naming its
// shard; when none refuses, the union's records are copied into
// opts.ResultsDir's fault directory under a fresh stamp and verified
// paired (the stamp is consumed on success), and on success each shard's
// directory gets its claim. The error is nil exactly when the union is
// certified; a refusal wraps [ErrRefused], input that cannot be merged
// [ErrBadInput]. Nothing in a shard's directory is changed or deleted but
// the claim.
func Merge(ctx context.Context, opts MergeOptions) (*Result, error) {
	shards, err := load(opts)
	if err != nil {
		return nil, err
	}
	res := &Result{Schema: ResultSchema, Refusals: []Refusal{}}
	for _, s := range shards {
		spec := s.m.Shard.String()
		if s.unread != nil {
			spec = "?" // its manifest says nothing this merge can read
		}
		res.Shards = append(res.Shards, Shard{Dir: s.dir, Manifest: s.m, Shard: spec, RunID: s.m.RunID, Records: s.m.Records})
	}
	res.Total, res.SharedRunID = checkAgreement(shards, res)
	checkCoverage(shards, res.Total, res)
	for _, s := range shards {
		if s.foreign {
			continue
		}
		checkShard(s, res)
	}
	checkOwnership(shards, opts.Inventory, res)
	refused := map[string]bool{}
	for _, r := range res.Refusals {
		refused[r.Dir] = true
	}
	for i := range res.Shards {
		res.Shards[i].OK = !refused[res.Shards[i].Dir]
	}
	slices.SortStableFunc(res.Refusals, func(a, b Refusal) int {
		// Refusals that name a shard first, in shard order; the shards' joint ones last.
		return cmp.Or(boolOrder(a.Shard == "", b.Shard == ""), strings.Compare(a.Shard, b.Shard), strings.Compare(a.Dir, b.Dir))
	})
	if len(res.Refusals) > 0 {
		return res, fmt.Errorf("%w: %s", ErrRefused, summarize(res.Refusals))
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res.Battery = unionBattery(shards)
	union, err := verifyUnion(ctx, shards, res.SharedRunID, opts)
	res.Union = union
	if union == nil {
		return res, err
	}
	if !union.Certified {
		return res, fmt.Errorf("%w: the union's six phases refused: %w", ErrRefused, err)
	}
	for _, s := range shards {
		if cerr := claim(s.dir, res.SharedRunID, s.m.Shard); cerr != nil {
			res.Refusals = append(res.Refusals, Refusal{Kind: Claimed, Shard: s.m.Shard.String(), Dir: s.dir, Detail: cerr.Error()})
			continue
		}
		res.Claimed = append(res.Claimed, s.dir)
	}
	if len(res.Refusals) > 0 {
		return res, fmt.Errorf("%w: %s", ErrRefused, summarize(res.Refusals))
	}
	res.Certified = true
	return res, err
}

// loaded is one shard directory and its manifest.
type loaded struct {
	dir     string
	m       *Manifest
	foreign bool
	// unread says why the manifest could not be read (nil when it was):
	// a link, too large, not a regular file, or not a manifest.
	unread  error
	battery *battery.Result
}

// load reads every directory's manifest. A directory that does not exist
// or holds no manifest, one given twice, and the merge's own results
// directory are bad input; a manifest that does not parse is a tampered
// shard, refused later with the others.
func load(opts MergeOptions) ([]*loaded, error) {
	if len(opts.Dirs) == 0 {
		return nil, fmt.Errorf("%w: no shard directory: give each shard's results directory, such as program-gate -merge shards/1 shards/2 shards/3", ErrBadInput)
	}
	own, _ := realPath(opts.ResultsDir)
	seen := map[string]string{}
	var out []*loaded
	for _, d := range opts.Dirs {
		dir, err := realPath(d)
		if err != nil {
			return nil, fmt.Errorf("%w: shard directory %s: %v", ErrBadInput, d, err)
		}
		if _, err := os.Lstat(filepath.Join(dir, ManifestName)); errors.Is(err, fs.ErrNotExist) {
			if _, err := os.Lstat(filepath.Join(dir, "test-results", ManifestName)); err == nil {
				dir = filepath.Join(dir, "test-results")
			}
		}
		if prev, ok := seen[dir]; ok {
			return nil, fmt.Errorf("%w: %s and %s are the same directory: give each shard's directory once", ErrBadInput, prev, d)
		}
		seen[dir] = d
		if own != "" && dir == own {
			return nil, fmt.Errorf("%w: %s is the merge's own results directory, whose fault/ the union replaces: give each shard its own directory (download the shards elsewhere, or set CONTESTED_RESULTS_DIR for the merge)", ErrBadInput, d)
		}
		m, err := ReadManifest(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("%w: %s holds no %s: give the results directory a validate -shard=I/N run wrote (its test-results/)", ErrBadInput, d, ManifestName)
		case err != nil:
			m = &Manifest{}
			out = append(out, &loaded{dir: dir, m: m, foreign: true, unread: err})
			continue
		}
		out = append(out, &loaded{dir: dir, m: m})
	}
	return out, nil
}

// unreadManifest says what a shard's manifest is when it could not be
// read: a symbolic link, too large, not a regular file (all refused before
// anything is read), or not a manifest a shard wrote.
func unreadManifest(err error) string {
	switch {
	case err == nil:
		return ManifestName + " is not the manifest this shard's split needs"
	case errors.Is(err, atomicfile.ErrSymlink):
		return ManifestName + " is a symbolic link, never followed: a shard writes its manifest as a file"
	case errors.Is(err, atomicfile.ErrTooLarge):
		return fmt.Sprintf("%s is too large to be a manifest a shard wrote (%s), and was not read", ManifestName, strings.TrimPrefix(causeOf(err), atomicfile.ErrTooLarge.Error()+": "))
	case errors.Is(err, atomicfile.ErrNotRegular):
		return fmt.Sprintf("%s is %s, never read", ManifestName, causeOf(err))
	}
	return fmt.Sprintf("%s does not parse or is not a shard manifest (edited after the shard wrote it?): %s", ManifestName, causeOf(err))
}

// causeOf is the last part of an error's text: what the loader found,
// without the path it already named.
func causeOf(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 && !strings.Contains(msg[i:], "schema") {
		return msg[i+2:]
	}
	return msg
}

// readClaim reads a shard's claim with the loader's rules: a link or a
// FIFO in its place is an error, never followed or waited on.
func readClaim(dir string) ([]byte, error) {
	r, err := atomicfile.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return r.ReadFile(ClaimName, maxManifestSize)
}

// realPath is p absolute with its links resolved; it must be a directory.
func realPath(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("not a directory")
	}
	return real, nil
}

// verifyUnion copies every shard's records into the merge's fault
// directory, after a purge and a fresh stamp, and runs the six phases
// paired over them: the union certifies once.
func verifyUnion(ctx context.Context, shards []*loaded, shared string, opts MergeOptions) (*gate.Report, error) {
	dir := faultdir.Of(opts.ResultsDir)
	if err := gate.Purge(dir); err != nil {
		return nil, fmt.Errorf("purge the union's fault directory: %w", err)
	}
	if err := gate.WriteStamp(dir, shared+"-merge"); err != nil {
		return nil, fmt.Errorf("stamp the union's fault directory: %w", err)
	}
	// A record must be strictly newer than the stamp: let the file
	// system's clock (coarser than time.Now on most kernels) pass it.
	if st, err := os.Stat(filepath.Join(dir, faultdir.StampName)); err == nil {
		for time.Since(st.ModTime()) < 20*time.Millisecond {
			time.Sleep(5 * time.Millisecond)
		}
	}
	root, err := atomicfile.OpenRoot(opts.ResultsDir)
	if err != nil {
		return nil, fmt.Errorf("open the merge's results directory: %w", err)
	}
	for _, s := range shards {
		files, err := ReadRecordFiles(faultdir.Of(s.dir))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			name := faultdir.Name + "/" + s.m.Shard.Tag() + "-" + f.Name
			if err := root.Write(name, f.Data); err != nil {
				return nil, fmt.Errorf("copy shard %s's records: %w", s.m.Shard, err)
			}
		}
	}
	o := opts.Gate
	o.Dir, o.Mode, o.Shard = dir, gate.Paired, false
	return gate.Verify(ctx, o)
}

// unionBattery is the shards' test outcomes as one battery's.
func unionBattery(shards []*loaded) *battery.Result {
	u := &battery.Result{Packages: []battery.Package{}, Tests: []battery.Test{}}
	for _, s := range shards {
		b := s.battery
		if b == nil {
			continue
		}
		if u.Started.IsZero() || b.Started.Before(u.Started) {
			u.Started = b.Started
		}
		u.Packages = append(u.Packages, b.Packages...)
		u.Tests = append(u.Tests, b.Tests...)
		u.Elapsed = max(u.Elapsed, b.Elapsed)
		u.ExitCode = max(u.ExitCode, b.ExitCode)
	}
	return u
}

// claimFile is the content of a shard's claim.
type claimFile struct {
	Schema      string    `json:"schema"`
	SharedRunID string    `json:"shared_run_id"`
	Shard       Spec      `json:"shard"`
	MergedAt    time.Time `json:"merged_at"`
}

// claim creates the shard's claim, exclusively: of two merges of one
// shard, one claims it.
func claim(dir, shared string, s Spec) error {
	b, _ := json.MarshalIndent(claimFile{Schema: "contested/shard-claim@1", SharedRunID: shared, Shard: s, MergedAt: time.Now().UTC()}, "", "  ")
	f, err := os.OpenFile(filepath.Join(dir, ClaimName), os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("another merge claimed it at the same time: a shard certifies once")
		}
		return fmt.Errorf("claim it: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

const maxNamed = 5

func some(items []string) string {
	if len(items) <= maxNamed {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:maxNamed], ", ") + fmt.Sprintf(" (+%d more)", len(items)-maxNamed)
}

func summarize(rs []Refusal) string {
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		parts = append(parts, r.String())
	}
	return strings.Join(parts, "; ")
}

// boolOrder orders false before true.
func boolOrder(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
