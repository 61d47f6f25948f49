package ladder

import "github.com/contested/contested/internal/gate/verdict"

// Finding is what the ladder's evidence showed about a failure: the finer
// verdict that decided its owner. The decision is this value and the
// owner; the action and the evidence lines are prose written from them.
type Finding string

// The findings of a failure no surface lists, and of a contract's test
// whose contract passed in isolation.
const (
	// ConsistentFailure: it fails every rerun alone.
	ConsistentFailure Finding = "consistent failure"
	// OracleViolation: an oracle named a violation, whatever the load.
	OracleViolation Finding = "oracle violation"
	// FlakyAlone: it fails some reruns alone.
	FlakyAlone Finding = "flaky alone"
	// SaturatedRun: it failed on a saturated machine, in words of time,
	// and passes alone.
	SaturatedRun Finding = "saturated run"
	// FailsOnlyInBattery: it passes alone and fails beside the battery.
	FailsOnlyInBattery Finding = "fails only in the battery"
	// CapacityFragile: it passes alone and fails beside a noisy
	// neighbour: it depends on a quiet machine.
	CapacityFragile Finding = "capacity-fragile"
	// GreenSaturated: its contract is GREEN in isolation and the failure
	// came on a saturated machine.
	GreenSaturated Finding = "GREEN contract, saturated run"
	// GreenFlaky: its contract is GREEN in isolation and the test is
	// flaky in the battery.
	GreenFlaky Finding = "GREEN contract, flaky battery"
	// GreenConsistent: its contract is GREEN in isolation and the test
	// fails the battery every time.
	GreenConsistent Finding = "GREEN contract, consistent battery failure"
	// TestNeverRuns: the test never started in its reruns.
	TestNeverRuns Finding = "test never runs"
	// Interfered: another run on this Docker host caused the failure.
	Interfered Finding = "interference"
	// Undecided: the walk ended before the evidence decided.
	Undecided Finding = "undecided"
	// NoFailure: the test did not fail, in the battery it was reported
	// from (Options.Seen) nor in any rerun. There is nothing to
	// arbitrate: no owner, no action to take, no issue.
	NoFailure Finding = "NO FAILURE"
)

// legFinding is a contract leg's verdict as the ladder's finding.
func legFinding(v verdict.Verdict) Finding { return Finding(v) }

// contractFinding is a surface's contract verdict as the ladder's finding.
func contractFinding(c verdict.Contract) Finding { return Finding(c) }

// packageFinding is what kept a test's package from running it.
func packageFinding(what string) Finding { return Finding("package " + what) }
