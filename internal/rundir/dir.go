package rundir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/envvar"
)

// Dir is a results directory: resolved from CONTESTED_RESULTS_DIR against
// the module root, checked once by the command that owns the run, and the
// one place that names what lies in it. It travels as this one value; a
// callee asks it for a path (Validate, Fault, Join) instead of naming its
// own. The zero Dir is no directory.
type Dir string

// The artifacts a results directory holds, relative to it
// (docs/reference/artifacts.md). Artifacts and Plans say which a new run
// moves aside and which it keeps.
const (
	ValidateJSON  = "validate.json"
	CapacityJSON  = "capacity.json"
	PreflightJSON = "preflight.json"
	ShardJSON     = "shard.json"
	MergeJSON     = "merge.json"
	FindingsMD    = "findings.md"
	FindingsJSON  = "findings.json"
	PlanMD        = "plan.md"
	PlanJSON      = "plan.json"
	FaultDir      = "fault"
	LegsDir       = "legs"
	LadderDir     = "ladder"
	BatteryDir    = "battery"
	HistoryDir    = "history"
	ClusterDir    = "cluster"
	DegradedDir   = "degraded"
	ContestedDir  = "contested"
	ShardsDir     = "shards"
	MutantsDir    = "mutants"
	BenchDir      = "bench"
	Linearizable  = "linearizability"
)

// ErrNoModuleRoot means a relative results directory has no module root
// to be resolved against.
var ErrNoModuleRoot = errors.New("no module root to resolve the results directory against")

// Resolve is the results directory of the module at moduleRoot, as a test
// process resolves it: CONTESTED_RESULTS_DIR as is (cleaned) when it is
// absolute; otherwise (relative, or unset and so "test-results") against
// moduleRoot, never against the working directory, because go test runs
// each package in its own directory and the records of one run must land
// in one place. It is not checked: the command that started the test did
// (Prepare).
func Resolve(moduleRoot string) (Dir, error) {
	v := os.Getenv(envvar.ResultsDir)
	if v == "" {
		v = atomicfile.DefaultResultsDir
	}
	if filepath.IsAbs(v) {
		return Dir(filepath.Clean(v)), nil
	}
	if moduleRoot == "" {
		return "", fmt.Errorf("%w: %s=%q is relative", ErrNoModuleRoot, envvar.ResultsDir, v)
	}
	return Dir(filepath.Join(moduleRoot, v)), nil
}

// Prepare resolves the results directory of the module at moduleRoot and
// checks and readies it once, before a command starts anything
// (atomicfile.PrepareResultsDir): it comes back absolute with its
// ancestors' links resolved, the path every later step and every child
// uses. A directory that can never hold artifacts (/, a system directory,
// the home directory, the module root, a file, a link, read-only, one
// that holds a link) is an error wrapping atomicfile.ErrBadResultsDir
// that says what to set.
func Prepare(moduleRoot string) (Dir, error) {
	d, err := Resolve(moduleRoot)
	if err != nil {
		return "", err
	}
	p, err := atomicfile.PrepareResultsDir(string(d), moduleRoot)
	return Dir(p), err
}

// String is the directory's path.
func (d Dir) String() string { return string(d) }

// Join is a path under the directory.
func (d Dir) Join(elem ...string) string {
	return filepath.Join(append([]string{string(d)}, elem...)...)
}

// Validate is validate.json.
func (d Dir) Validate() string { return d.Join(ValidateJSON) }

// Fault is the fault directory, where the records are.
func (d Dir) Fault() string { return d.Join(FaultDir) }

// Ladder is ladder/, the walks of the arbitration ladder.
func (d Dir) Ladder() string { return d.Join(LadderDir) }

// History is history/, the flake history and the reuse certificates.
func (d Dir) History() string { return d.Join(HistoryDir) }
