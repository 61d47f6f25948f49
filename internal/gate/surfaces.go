package gate

import (
	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/battery"
)

// SurfaceVerdict is one registered surface's contract verdict, judged from a
// battery's records and test outcomes with the rules of `mage contested`
// (docs/concepts/verdicts.md). Verify does not compute it: the gate's six
// phases stay what they are, and validate (or program-gate) fills
// [Report.Surfaces] beside them and saves the report again.
type SurfaceVerdict struct {
	ID string `json:"id"`
	// Verdict is GREEN, RED, INCONCLUSIVE, CANNOT RUN or NOT AT THIS LEVEL.
	Verdict string       `json:"verdict"`
	Owner   string       `json:"owner,omitempty"`
	Level   int          `json:"level,omitempty"`
	Legs    []LegVerdict `json:"legs"`
	// Reused is set when validate did not run the surface but reused its
	// verdict from the earlier certified run it names: its legs' faults
	// are that run's evidence, not this run's.
	Reused *battery.Reused `json:"reused,omitempty"`
	// Deeper says why validate ran the surface over more seeds than the
	// battery's one, when it did (its inputs changed since a certificate).
	Deeper string `json:"deeper,omitempty"`
}

// LegVerdict is one leg of a [SurfaceVerdict]: one of the ten leg verdicts,
// or NOT-AT-LEVEL when the registry does not run the leg at this level.
type LegVerdict struct {
	Leg     string                  `json:"leg"`
	Verdict string                  `json:"verdict"`
	Reason  string                  `json:"reason,omitempty"`
	Armed   int                     `json:"armed"`
	Fired   int                     `json:"fired"`
	Oracles []faultrecord.OracleRun `json:"oracles"`
	// Levels are the levels the leg runs at, when its surface restricts it.
	Levels []int    `json:"levels,omitempty"`
	Tests  []string `json:"tests,omitempty"`
	Replay string   `json:"replay,omitempty"`
	// Missing are the capabilities the leg could not run without, when it
	// is NOT-RUN for lack of them; Reason names each and what provides it.
	Missing []string `json:"missing_capabilities,omitempty"`
	// Decision is the arbitration ladder's decision on the leg's failing
	// test, when the ladder walked it: the one owner every writer shows.
	Decision *Decision `json:"decision,omitempty"`
}

// Decision is who owns one failure and why, as the arbitration ladder
// decided it. Every writer (terminal, validate.json, JUnit, step summary,
// HTML, issue body) renders this one value, so a surface's leg and the
// arbitration of its failing test cannot name two owners.
type Decision struct {
	Test string `json:"test"`
	// Owner is the owner in words: "component (stock-team)", "test
	// author", "capacity", "infrastructure", "fault layer", or "none".
	Owner   string `json:"owner"`
	Verdict string `json:"verdict"`
	Action  string `json:"action,omitempty"`
}

// Say is the decision in a few words: "owner component (stock-team):
// FAIL-reproducible".
func (d Decision) Say() string { return "owner " + d.Owner + ": " + d.Verdict }

// Save writes the report again to fault-report.json in r.Dir, atomically:
// for a caller that added [Report.Surfaces] after Verify.
func (r *Report) Save() error { return r.writeFile(r.Dir) }
