package ladder

import (
	"strings"

	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/legstart"
)

// Beside reports whether the confirmation of a failing test may run at
// once with others': it is a leg (its own proxy, lease and victim
// database: nothing another leg's rerun touches) whose evidence is an
// oracle's violation, which load does not cause and which needs no quiet
// machine, nor a neighbour run, to be told from capacity. Every other
// failure is confirmed alone, one at a time, as before.
func Beside(t battery.Test, opts Options) bool {
	if _, ok := legstart.Of(opts.Starts, t.Package, t.Name); !ok {
		return false
	}
	if t.Timeout != "" || t.Cause != "" {
		return false
	}
	v := violatedIn(opts.Records, t.Name)
	if v == "" && strings.Contains(contract.Reason(t.Failure, t.Output), "VIOLATED") {
		v = contract.Reason(t.Failure, t.Output)
	}
	return v != "" && !timing.MatchString(v)
}
