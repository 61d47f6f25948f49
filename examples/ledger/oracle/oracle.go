// Package oracle gives the ledger's machine checks (conservation, journal, exactly-once, no
// lost ack, decisions, batch order and linearizability) over what a contested contract
// recorded: the client-side history and the ledger's tables read at quiescence.
//
// Every check returns a [Verdict] that cites its evidence (how much it checked) and lists
// each violation it found, so a RED run says which transfer broke which promise. Ambiguous
// outcomes are never counted as successes or failures: an enqueue or transfer whose answer was
// lost may or may not have taken effect, and the checks accept both.
package oracle

import (
	"errors"
	"fmt"
	"strings"

	"github.com/contested/contested/contested"
)

// Oracle names, as they appear in verdicts, test output and fault records.
const (
	Conservation    = "conservation"
	Journal         = "journal"
	ExactlyOnce     = "exactly-once"
	NoLostAck       = "no-lost-ack"
	Linearizability = "linearizability"
	Decisions       = "decisions"
	BatchOrder      = "batch-order"
)

// ErrViolated: the oracle found the promise broken. A Verdict's Err wraps it, or
// contested.ErrInconclusive when the oracle could not decide (a linearizability check that
// ran out of time, a history too weak to judge): never a pass. A leg takes either as is.
var ErrViolated = errors.New("violated")

// maxListed bounds how many violations a verdict spells out; the count is always exact.
const maxListed = 12

// Verdict is what one oracle found.
type Verdict struct {
	Oracle string
	// Produced is how many items the run produced for this oracle (transfer ids, ops,
	// samples) and Checked how many it examined; a check that examined less than was produced
	// says so.
	Produced, Checked int
	// Evidence is the one-line citation: what was checked and how.
	Evidence string
	// Violations lists every broken instance found.
	Violations []string
	// Inconclusive, when set, says why the oracle could not decide.
	Inconclusive string
	// Artifact is a file that shows the failure (a linearizability visualization), if any.
	Artifact string
}

// Held reports whether the promise held: no violation, a decision, and something checked.
func (v Verdict) Held() bool {
	return len(v.Violations) == 0 && v.Inconclusive == "" && v.Checked > 0
}

// Err is nil when the promise held, an error wrapping contested.ErrInconclusive when the
// oracle could not decide, and one wrapping ErrViolated otherwise: what [contested.Leg.Oracle]
// takes.
func (v Verdict) Err() error {
	switch {
	case len(v.Violations) > 0:
		return fmt.Errorf("oracle %s: %w: %s", v.Oracle, ErrViolated, v.summary())
	case v.Inconclusive != "":
		return fmt.Errorf("oracle %s: %w: %s", v.Oracle, contested.ErrInconclusive, v.Inconclusive)
	case v.Checked == 0:
		return fmt.Errorf("oracle %s: %w: nothing was checked (%d produced)", v.Oracle, contested.ErrInconclusive, v.Produced)
	}
	return nil
}

// String is the line a test prints: "oracle <name>: held|VIOLATED|UNKNOWN: ...".
func (v Verdict) String() string {
	var b strings.Builder
	switch {
	case len(v.Violations) > 0:
		fmt.Fprintf(&b, "oracle %s: VIOLATED: %s", v.Oracle, v.summary())
	case v.Inconclusive != "":
		fmt.Fprintf(&b, "oracle %s: UNKNOWN (never green): %s", v.Oracle, v.Inconclusive)
	case v.Checked == 0:
		fmt.Fprintf(&b, "oracle %s: UNKNOWN (never green): nothing checked", v.Oracle)
	default:
		fmt.Fprintf(&b, "oracle %s: held", v.Oracle)
	}
	if v.Evidence != "" {
		fmt.Fprintf(&b, " [%s]", v.Evidence)
	}
	if v.Artifact != "" {
		fmt.Fprintf(&b, "; see %s", v.Artifact)
	}
	return b.String()
}

func (v Verdict) summary() string {
	n := len(v.Violations)
	shown := v.Violations
	if n > maxListed {
		shown = shown[:maxListed]
	}
	s := fmt.Sprintf("%d violation(s): %s", n, strings.Join(shown, "; "))
	if n > maxListed {
		s += fmt.Sprintf("; and %d more", n-maxListed)
	}
	return s
}

func (v *Verdict) violate(format string, args ...any) {
	v.Violations = append(v.Violations, fmt.Sprintf(format, args...))
}
