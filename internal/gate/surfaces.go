package gate

import (
	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/gate/verdict"
)

// SurfaceVerdict is one registered surface's contract verdict, judged from a
// battery's records and test outcomes with the rules of `mage contested`
// (docs/concepts/verdicts.md). Verify does not compute it: the gate's six
// phases stay what they are, and validate (or program-gate) fills
// [Report.Surfaces] beside them and saves the report again.
type SurfaceVerdict struct {
	ID string `json:"id"`
	// Verdict is GREEN, RED, INCONCLUSIVE, CANNOT RUN or NOT AT THIS LEVEL.
	Verdict verdict.Contract `json:"verdict"`
	Owner   string           `json:"owner,omitempty"`
	Level   int              `json:"level,omitempty"`
	Legs    []verdict.Leg    `json:"legs"`
	// Reused is set when validate did not run the surface but reused its
	// verdict from the earlier certified run it names: its legs' faults
	// are that run's evidence, not this run's.
	Reused *battery.Reused `json:"reused,omitempty"`
	// Deeper says why validate ran the surface over more seeds than the
	// battery's one, when it did (its inputs changed since a certificate).
	Deeper string `json:"deeper,omitempty"`
}

// Save writes the report again to fault-report.json in r.Dir, atomically:
// for a caller that added [Report.Surfaces] after Verify.
func (r *Report) Save() error { return r.writeFile(r.Dir) }
