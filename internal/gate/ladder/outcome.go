package ladder

import (
	"time"

	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gate/verdict"
	"github.com/contested/contested/internal/replayenv"
)

// Surface is the registry entry a test maps to.
type Surface struct {
	ID       string `json:"id"`
	Class    string `json:"class"`
	Owner    string `json:"owner"`
	Behavior string `json:"behavior"`
	Oracle   string `json:"oracle"`
	Where    string `json:"where"` // file:line of the entry
}

// The rerun classes: what the test did when rerun alone.
const (
	Consistent = "consistent" // it failed every rerun
	Flaky      = "flaky"      // some reruns failed and some passed
	Passes     = "passes"     // it passed every rerun
	NotRerun   = "not rerun"  // no rerun finished (the budget, an interrupt)
	// PackageFails: its package failed before the test ran, every rerun.
	PackageFails = "package fails"
	// NeverRuns: its package passed every rerun without running it.
	NeverRuns = "never runs"
)

// Reruns is what the failing test did when rerun alone.
type Reruns struct {
	Runs     int `json:"runs"`
	Failures int `json:"failures"`
	// NotRun counts the failed runs in which the test never ran: its
	// package failed first (does not build, TestMain exited).
	NotRun int `json:"not_run,omitempty"`
	// Absent counts the passing runs in which the test never ran: its
	// package passed without it (a TestMain that returns before m.Run, a
	// build constraint that leaves the file out).
	Absent int    `json:"absent,omitempty"`
	Class  string `json:"class"`
	// Seed is the seed the reruns ran with: the one the failing leg drew
	// when it started (0: the test drew none, it is not a leg).
	Seed int64 `json:"seed,omitempty"`
	// Reason is the failure the last failing rerun reported.
	Reason string `json:"reason,omitempty"`
	// Busy counts the failed reruns during which the machine's run queue
	// averaged four per core or more although the rerun waited for it to
	// quieten (other work held the machine); BusyRunQueue is the highest
	// such run queue per core.
	Busy         int     `json:"busy,omitempty"`
	BusyRunQueue float64 `json:"busy_run_queue_per_core,omitempty"`
	// SameWay says the first rerun failed as the battery did (the same
	// oracle, or the same failure but for its figures): that confirmed
	// the failure, and no second rerun ran.
	SameWay bool `json:"same_way,omitempty"`
}

// allBusy reports whether every rerun alone failed, each while other work
// saturated the machine. The failure is still called consistent (a
// deterministic failure is by far the likelier), with the caveat.
func (r Reruns) allBusy() bool {
	return r.Runs > 0 && r.Busy == r.Runs
}

// failsOnlyWhenBusy reports whether the test passed a rerun alone and
// failed only those that ran while other work held the machine.
func (r Reruns) failsOnlyWhenBusy() bool {
	return r.Busy > 0 && r.Busy == r.Failures && r.Failures < r.Runs
}

// History is what the flake history says of the failing test: context,
// never a vote. The class of a failure is decided by this run's evidence.
type History struct {
	Runs     int `json:"runs"`
	Failures int `json:"failures"`
	// FirstFailingRun and FirstFailingCommit are the oldest failing run
	// among them and its commit; Dirty says the work tree it ran from had
	// changes the commit does not hold (Diff is their digest).
	FirstFailingRun    string `json:"first_failing_run,omitempty"`
	FirstFailingCommit string `json:"first_failing_commit,omitempty"`
	Dirty              bool   `json:"dirty,omitempty"`
	Diff               string `json:"diff,omitempty"`
	// LastFailingCommit is the commit of the newest failing run.
	LastFailingCommit string `json:"last_failing_commit,omitempty"`
	// Current says the runs counted include the run being arbitrated.
	Current bool `json:"this_run_included,omitempty"`
}

// CapacityEvidence is what the machine gave the test: the capacity samples
// taken while it failed in the battery, the neighbour the battery ran
// beside, and what the test did when rerun beside one.
type CapacityEvidence struct {
	// Saturated and Contended are the samples of the test's window.
	Saturated      bool     `json:"saturated"`
	Contended      []string `json:"contended,omitempty"`
	PeakLoadPerCPU float64  `json:"peak_load_per_cpu"`
	Samples        int      `json:"samples"`
	// Neighbour is the battery's neighbour, in words, when one was armed.
	Neighbour string `json:"neighbour,omitempty"`
	// Beside are the reruns beside a neighbour; BesideEvidence what that
	// neighbour did and the slowdown it caused.
	Beside         *Count `json:"beside,omitempty"`
	BesideEvidence string `json:"beside_evidence,omitempty"`
	// Fragile: the test passed alone and failed beside the neighbour.
	Fragile bool `json:"fragile"`
}

// Count is how many runs ran and how many failed.
type Count struct {
	Ran    int `json:"ran"`
	Failed int `json:"failed"`
}

// Outcome is where the ladder ended.
type Outcome struct {
	Test      string           `json:"test"`
	Package   string           `json:"package,omitempty"`
	Surface   *Surface         `json:"surface,omitempty"`
	Step      int              `json:"step"` // 1, 2 or 3: the step that decided
	Contract  verdict.Contract `json:"contract,omitempty"`
	Legs      []verdict.Leg    `json:"legs,omitempty"`
	Reruns    Reruns           `json:"reruns"`
	Owner     Owner            `json:"owner"`
	OwnerName string           `json:"owner_name,omitempty"` // the team, for a component
	Verdict   Finding          `json:"verdict"`              // the finer verdict that decided
	Action    string           `json:"action"`
	Evidence  []string         `json:"evidence,omitempty"`
	Contended []string         `json:"contended,omitempty"` // for capacity
	// Seed and Replay are the failing run's seed and the command that
	// replays it (a leg's; none for a test that drew no seed).
	Seed   int64  `json:"seed,omitempty"`
	Replay string `json:"replay,omitempty"`
	// Reason is the failure as the test reported it in the battery (its
	// t.Error or t.Fatal message, the oracle's violation, the panic).
	Reason string `json:"reason,omitempty"`
	// Violation is the violation an oracle named in this failure (a
	// record of the battery or of a rerun, or the failure's text): it
	// outranks every load figure.
	Violation string `json:"violation,omitempty"`
	// Interference is what another run on this Docker host did to this
	// run's resources while the test ran.
	Interference []string          `json:"interference,omitempty"`
	Capacity     *CapacityEvidence `json:"capacity,omitempty"`
	History      *History          `json:"history,omitempty"`
	// PackageFailure is what kept the test from running in its reruns.
	PackageFailure *Plain `json:"package_failure,omitempty"`
	// Incomplete says what the walk did not reach (the budget ended, the
	// run was interrupted); the owner and action are then what the
	// evidence gathered so far supports.
	Incomplete string        `json:"incomplete,omitempty"`
	Took       time.Duration `json:"took_ns"`
	// Runs is what the walk ran, for the flake history: each rerun of the
	// test, then each seed of the contract when the walk ran it.
	Runs []contract.SeedRun `json:"-"`
	// replay are the variables the test's package read in the battery,
	// which every command that reruns it carries (alone).
	replay []replayenv.Var
}

// NoFailure reports whether the ladder found no failure to arbitrate.
func (o *Outcome) NoFailure() bool { return o.Verdict == NoFailure }
