// Package verdict assigns the ten-state verdict of a fault leg from the
// evidence of its runs, and the contract verdict of a surface from its
// legs'.
//
// The leg verdict is a pure function of the evidence, decided in a fixed
// order (the first rule that matches wins):
//
//  1. NOT-RUN: no run of the leg was attempted.
//  2. INCONCLUSIVE-env: a capability was missing before the run (the fault
//     layer could not run).
//  3. FAIL-reproducible / FAIL-nondeterministic: a run failed on its own
//     account (an oracle or assertion, not the fault failing to fire);
//     reproducible when the rerun with the same seed failed again. A FAIL
//     outranks every later rule, including an unproven fault.
//  4. INCONCLUSIVE-fault-not-proven: a test of the leg failed before its
//     fault was armed (its setup failed: evidence about the setup, not the
//     claim under fault, so never a FAIL), or a fault was armed and not
//     proven to land, or none was armed at all.
//  5. PARTIAL-surface: the test passed but reported no oracle.
//  6. INCONCLUSIVE-oracle-too-weak: an oracle could not decide (any result
//     but "held": "unknown", or one nobody defined).
//  7. PARTIAL-model: an oracle checked fewer operations than the run
//     produced.
//  8. INCONCLUSIVE-oracle-too-weak, again: two or more seeds that all ran
//     one schedule (their records carry one schedule digest). The seeds
//     were reruns of one schedule, not a budget of schedules: the schedule
//     is not seeded, so nothing tells a hardened leg from a lucky one.
//  9. PASS-hardening when the hardening budget was met: that many seeds,
//     that many distinct schedules among them, and at least CoverageFloor
//     faults fired across them; else PASS-smoke: a single seed never
//     proves hardening, and neither do seeds that repeat a schedule or
//     land too few faults to say anything about a rare interleaving.
//     Runs whose records carry no schedule (written by an older contested)
//     count as distinct.
//
// Beside the ten there is NOT-AT-LEVEL: the registry says the leg does not
// run at this CONTESTED_LEVEL (its surface's levels key). It is a statement
// of the plan, not a verdict on evidence, so Assign never returns it; the
// judge that knows the level assigns it, and Surface leaves it out of the
// roll-up. A leg that should run at this level and did not is NOT-RUN.
package verdict

import (
	"fmt"
	"strings"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/seed"
)

// CoverageFloor is the fewest fired faults across a leg's seeds that can
// support PASS-hardening; under it a lever's coverage is thin. A workload
// generated fewer than five times across all seeds says little about a
// rare interleaving (the simulation method's under-covered rule). The
// default hardening budget, three seeds of two scheduled faults each,
// clears it.
const CoverageFloor = 5

// Verdict is one of the ten leg verdicts.
type Verdict string

// The ten verdicts, spelled as the methods literature spells them.
const (
	PassSmoke                  Verdict = "PASS-smoke"
	PassHardening              Verdict = "PASS-hardening"
	FailReproducible           Verdict = "FAIL-reproducible"
	FailNondeterministic       Verdict = "FAIL-nondeterministic"
	InconclusiveEnv            Verdict = "INCONCLUSIVE-env"
	InconclusiveOracleTooWeak  Verdict = "INCONCLUSIVE-oracle-too-weak"
	InconclusiveFaultNotProven Verdict = "INCONCLUSIVE-fault-not-proven"
	PartialSurface             Verdict = "PARTIAL-surface"
	PartialModel               Verdict = "PARTIAL-model"
	NotRun                     Verdict = "NOT-RUN"
	// NotAtLevel is not one of the ten: the leg does not run at this level.
	NotAtLevel Verdict = "NOT-AT-LEVEL"
)

// All lists the ten verdicts in decision order (NOT-AT-LEVEL is not one).
var All = []Verdict{NotRun, InconclusiveEnv, FailReproducible, FailNondeterministic, InconclusiveFaultNotProven,
	PartialSurface, InconclusiveOracleTooWeak, PartialModel, PassHardening, PassSmoke}

// Pass reports whether v is one of the two passes.
func (v Verdict) Pass() bool { return v == PassSmoke || v == PassHardening }

// Fail reports whether v is one of the two failures.
func (v Verdict) Fail() bool { return v == FailReproducible || v == FailNondeterministic }

// BeforeArming opens the reason of a leg whose test failed before its
// fault was armed; FailedBeforeArming looks for it.
const BeforeArming = "failed before its fault was armed:"

// Run is the evidence of one seed's run of a leg.
type Run struct {
	Seed       int64  `json:"seed"`
	Attempted  bool   `json:"attempted"`             // the leg's test ran
	EnvMissing string `json:"env_missing,omitempty"` // what was missing before the run
	// Failed: the test failed for a reason of its own (an oracle, an
	// assertion), not merely because its fault did not fire.
	Failed      bool   `json:"failed"`
	FailureText string `json:"failure,omitempty"`
	// FailedBeforeArming is the failure of a test of the leg that failed
	// with no fault armed (no record names it: its setup failed, or it
	// called t.Fatal before its first Arm). It is evidence about the
	// setup, not about the claim under fault, so it is never Failed.
	FailedBeforeArming string `json:"failed_before_arming,omitempty"`
	// Reproduced is set for a failed run that was rerun with the same seed:
	// true when the rerun failed too.
	Reproduced *bool                   `json:"reproduced,omitempty"`
	Armed      int                     `json:"armed"`
	Fired      int                     `json:"fired"`
	Oracles    []faultrecord.OracleRun `json:"oracles,omitempty"`
	// Unchecked names tests of the leg that reported no oracle while
	// another test of the same leg did: the run is PARTIAL-surface all the
	// same, since part of it was never checked.
	Unchecked []string `json:"unchecked,omitempty"`
	// Schedule identifies the schedule the leg's faults ran by in this run
	// (the digests its records carry); empty when they carry none.
	Schedule string `json:"schedule,omitempty"`
}

// Assign decides a leg's verdict from its runs. hardeningSeeds is the
// surface's hardening budget in seeds. It returns the verdict and a
// one-line reason that cites the evidence.
func Assign(runs []Run, hardeningSeeds int) (Verdict, string) {
	attempted := 0
	for _, r := range runs {
		if r.EnvMissing != "" {
			return InconclusiveEnv, "a capability was missing before the run: " + r.EnvMissing
		}
		if r.Attempted {
			attempted++
		}
	}
	if attempted == 0 {
		return NotRun, "declared but no run of it was attempted"
	}
	for _, r := range runs {
		if !r.Failed {
			continue
		}
		switch {
		case r.Reproduced == nil:
			// Without a rerun there is no reproducer: the strict reading
			// of the tree, said plainly, and what settles it.
			return FailNondeterministic, fmt.Sprintf("%s failed, and no rerun has shown yet whether it reproduces (the run ended before its reruns; its replay settles it): %s", say(r.Seed), r.FailureText)
		case *r.Reproduced:
			return FailReproducible, fmt.Sprintf("%s failed, and again on rerun: %s", say(r.Seed), r.FailureText)
		}
		return FailNondeterministic, fmt.Sprintf("%s failed once and passed on rerun: %s", say(r.Seed), r.FailureText)
	}
	for _, r := range runs {
		if r.FailedBeforeArming != "" {
			return InconclusiveFaultNotProven, fmt.Sprintf("%s: %s %s", say(r.Seed), BeforeArming, r.FailedBeforeArming)
		}
	}
	armed, fired := 0, 0
	for _, r := range runs {
		if !r.Attempted {
			continue
		}
		if r.Armed == 0 {
			return InconclusiveFaultNotProven, fmt.Sprintf("%s ran without arming its fault", say(r.Seed))
		}
		if r.Fired < r.Armed {
			return InconclusiveFaultNotProven, fmt.Sprintf("%s armed %d faults and %d were proven to land", say(r.Seed), r.Armed, r.Fired)
		}
		armed += r.Armed
		fired += r.Fired
	}
	// Rules 5, 6 and 7 each look at every seed before the next rule does,
	// so the verdict does not depend on the order of the seeds or oracles.
	for _, r := range runs {
		if r.Attempted && len(r.Oracles) == 0 {
			return PartialSurface, fmt.Sprintf("%s passed but reported no oracle: no model-level check ran", say(r.Seed))
		}
		if r.Attempted && len(r.Unchecked) > 0 {
			return PartialSurface, fmt.Sprintf("%s: %s reported no oracle: part of the leg was never checked", say(r.Seed), strings.Join(r.Unchecked, ", "))
		}
	}
	for _, r := range runs {
		for _, o := range r.Oracles {
			switch o.Result {
			case "held":
			case "unknown":
				return InconclusiveOracleTooWeak, fmt.Sprintf("%s: oracle %s could not decide: %s", say(r.Seed), o.Name, o.Detail)
			default:
				// Only "held" is a decision in the leg's favour: a result
				// nobody defined is not one.
				return InconclusiveOracleTooWeak, fmt.Sprintf("%s: oracle %s reported %q, not held: %s", say(r.Seed), o.Name, o.Result, o.Detail)
			}
		}
	}
	checked := 0
	for _, r := range runs {
		for _, o := range r.Oracles {
			if o.OpsChecked < o.OpsProduced {
				return PartialModel, fmt.Sprintf("%s: oracle %s checked %d of %d operations", say(r.Seed), o.Name, o.OpsChecked, o.OpsProduced)
			}
			checked += o.OpsChecked
		}
	}
	distinct, unrecorded := schedules(runs)
	if attempted > 1 && unrecorded == 0 && distinct == 1 {
		return InconclusiveOracleTooWeak, fmt.Sprintf("%d seeds ran one schedule (%s): the schedule is not seeded, so the seeds were reruns; drive the workload through leg.Step, or let the schedule's parameters vary", attempted, short(firstSchedule(runs)))
	}
	evidence := fmt.Sprintf("%d faults fired of %d armed over %d seeds, %d distinct schedules; oracles checked %d operations", fired, armed, attempted, distinct+unrecorded, checked)
	if unrecorded > 0 {
		evidence += fmt.Sprintf(" (%d seeds recorded no schedule)", unrecorded)
	}
	switch {
	case attempted < hardeningSeeds:
		return PassSmoke, fmt.Sprintf("%s (hardening needs %d seeds)", evidence, hardeningSeeds)
	case distinct+unrecorded < hardeningSeeds:
		return PassSmoke, fmt.Sprintf("%s (hardening needs %d distinct schedules)", evidence, hardeningSeeds)
	case fired < CoverageFloor:
		return PassSmoke, fmt.Sprintf("%s (hardening needs %d fired faults: coverage is thin)", evidence, CoverageFloor)
	}
	return PassHardening, evidence
}

// schedules counts the distinct schedules the attempted runs ran, and the
// attempted runs that recorded none.
func schedules(runs []Run) (distinct, unrecorded int) {
	seen := map[string]bool{}
	for _, r := range runs {
		switch {
		case !r.Attempted:
		case r.Schedule == "":
			unrecorded++
		case !seen[r.Schedule]:
			seen[r.Schedule] = true
			distinct++
		}
	}
	return distinct, unrecorded
}

func firstSchedule(runs []Run) string {
	for _, r := range runs {
		if r.Attempted && r.Schedule != "" {
			return r.Schedule
		}
	}
	return ""
}

// short clips a schedule key for a reason line.
func short(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// Contract is a surface's verdict.
type Contract string

// The contract verdicts. INCONCLUSIVE is a surface whose legs neither all
// passed nor any failed: not green, and not a component defect. NOT AT
// THIS LEVEL is a surface none of whose legs runs at this level: nothing
// was judged, and nothing is wrong.
const (
	Green          Contract = "GREEN"
	Red            Contract = "RED"
	CannotRun      Contract = "CANNOT RUN"
	Inconclusive   Contract = "INCONCLUSIVE"
	NotAtThisLevel Contract = "NOT AT THIS LEVEL"
)

// Surface rolls leg verdicts up: RED if any leg failed, CANNOT RUN if the
// layer could not run, GREEN only if every leg passed. NOT-AT-LEVEL legs
// are left out; a surface with only those is NOT AT THIS LEVEL, and one
// with no legs at all is INCONCLUSIVE.
func Surface(legs []Verdict) Contract {
	if len(legs) == 0 {
		return Inconclusive
	}
	judged := legs[:0:0]
	for _, v := range legs {
		if v != NotAtLevel {
			judged = append(judged, v)
		}
	}
	if len(judged) == 0 {
		return NotAtThisLevel
	}
	green, env := true, false
	for _, v := range judged {
		if v.Fail() {
			return Red
		}
		env = env || v == InconclusiveEnv
		green = green && v.Pass()
	}
	switch {
	case env:
		return CannotRun
	case green:
		return Green
	}
	return Inconclusive
}

// say names a run's seed, or says it is unknown (0: no record named it).
func say(s int64) string { return seed.Seed(s).Say() }
