package verdict

import (
	"testing"

	"github.com/contested/contested/faultrecord"
)

// rollUp is the surface verdict each leg verdict gives beside a passing
// leg, written out rather than derived from Pass and Fail, so that a
// change to either shows here.
var rollUp = map[Verdict]Contract{
	PassSmoke:                  Green,
	PassHardening:              Green,
	NotAtLevel:                 Green,
	FailReproducible:           Red,
	FailNondeterministic:       Red,
	InconclusiveEnv:            CannotRun,
	NotRun:                     Inconclusive,
	InconclusiveFaultNotProven: Inconclusive,
	InconclusiveOracleTooWeak:  Inconclusive,
	PartialSurface:             Inconclusive,
	PartialModel:               Inconclusive,
}

// TestOnlyTheTwoPassesPassAndTheTwoFailsFail: PARTIAL and INCONCLUSIVE
// verdicts are neither; NOT-AT-LEVEL is neither.
func TestOnlyTheTwoPassesPassAndTheTwoFailsFail(t *testing.T) {
	if len(rollUp) != len(All)+1 {
		t.Fatalf("the roll-up table has %d verdicts, All has %d (+ NOT-AT-LEVEL): add the new verdict here", len(rollUp), len(All))
	}
	for v := range rollUp {
		wantPass := v == PassSmoke || v == PassHardening
		wantFail := v == FailReproducible || v == FailNondeterministic
		if v.Pass() != wantPass {
			t.Errorf("%s.Pass() = %v, want %v", v, v.Pass(), wantPass)
		}
		if v.Fail() != wantFail {
			t.Errorf("%s.Fail() = %v, want %v", v, v.Fail(), wantFail)
		}
	}
}

// TestEveryLegVerdictRollsUpAsItShould puts each verdict beside a passing
// leg, in either order, and alone.
func TestEveryLegVerdictRollsUpAsItShould(t *testing.T) {
	for v, want := range rollUp {
		t.Run(string(v), func(t *testing.T) {
			for _, legs := range [][]Verdict{{PassHardening, v}, {v, PassSmoke}, {PassSmoke, v, PassHardening}} {
				if got := Surface(legs); got != want {
					t.Errorf("Surface(%v) = %s, want %s", legs, got, want)
				}
			}
			alone := want
			if v == NotAtLevel {
				alone = NotAtThisLevel
			}
			if got := Surface([]Verdict{v}); got != alone {
				t.Errorf("Surface([%s]) = %s, want %s", v, got, alone)
			}
		})
	}
}

// TestAssignBoundariesAndOrder: the rules at their edges, and the order
// the package comment fixes whatever order the seeds and oracles come in.
func TestAssignBoundariesAndOrder(t *testing.T) {
	held := func(n int) faultrecord.OracleRun {
		return faultrecord.OracleRun{Name: "exactly-once", OpsProduced: n, OpsChecked: n, Result: "held"}
	}
	unknown := faultrecord.OracleRun{Name: "linearizable", OpsProduced: 5, OpsChecked: 5, Result: "unknown", Detail: "timed out"}
	subset := faultrecord.OracleRun{Name: "linearizable", OpsProduced: 10, OpsChecked: 9, Result: "held"}
	run := func(seed int64, oracles ...faultrecord.OracleRun) Run {
		return Run{Seed: seed, Attempted: true, Armed: 2, Fired: 2, Oracles: oracles}
	}
	unfired := Run{Seed: 9, Attempted: true, Armed: 2, Fired: 1, Oracles: []faultrecord.OracleRun{held(3)}}
	silent := Run{Seed: 8, Attempted: true, Armed: 1, Fired: 1}
	tests := []struct {
		name string
		runs []Run
		want Verdict
	}{
		{"one operation unchecked is PARTIAL-model", []Run{run(1, subset)}, PartialModel},
		{"every operation checked passes", []Run{run(1, held(10))}, PassSmoke},
		{"one seed short of the budget is smoke", []Run{run(1, held(1)), run(2, held(1))}, PassSmoke},
		{"exactly the budget is hardening", []Run{run(1, held(1)), run(2, held(1)), run(3, held(1))}, PassHardening},
		{"a seed that did not attempt the leg does not count toward hardening", []Run{run(1, held(1)), run(2, held(1)), {Seed: 3}}, PassSmoke},
		{"a seed that did not attempt the leg is no unproven fault", []Run{{Seed: 3}, run(1, held(1))}, PassSmoke},
		{"a capability missing in any seed is INCONCLUSIVE-env", []Run{run(1, held(1)), {Seed: 2, EnvMissing: "no Docker"}}, InconclusiveEnv},
		{"a failure outranks an undecided oracle", []Run{run(1, unknown), {Seed: 2, Attempted: true, Failed: true, Armed: 1, Fired: 1, Oracles: []faultrecord.OracleRun{held(1)}}}, FailNondeterministic},
		{"an unproven fault outranks a missing oracle", []Run{silent, unfired}, InconclusiveFaultNotProven},
		{"more fired than armed in one seed hides no unfired seed", []Run{{Seed: 1, Attempted: true, Armed: 1, Fired: 2, Oracles: []faultrecord.OracleRun{held(1)}}, unfired}, InconclusiveFaultNotProven},
		{"a missing oracle in a later seed outranks an undecided one", []Run{run(1, unknown), silent}, PartialSurface},
		{"an undecided oracle after a partial one is INCONCLUSIVE-oracle-too-weak", []Run{run(1, subset, unknown)}, InconclusiveOracleTooWeak},
		{"an undecided oracle in a later seed outranks a partial one", []Run{run(1, subset), run(2, unknown)}, InconclusiveOracleTooWeak},
		{"an undecided oracle beside a held one", []Run{run(1, held(3), unknown)}, InconclusiveOracleTooWeak},
		{"a result nobody defined is not held", []Run{run(1, faultrecord.OracleRun{Name: "x", OpsProduced: 1, OpsChecked: 1})}, InconclusiveOracleTooWeak},
		{"a violation in a run not marked failed is not held", []Run{run(1, faultrecord.OracleRun{Name: "x", OpsProduced: 1, OpsChecked: 1, Result: "violated"})}, InconclusiveOracleTooWeak},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason := Assign(tt.runs, 3)
			if got != tt.want {
				t.Errorf("Assign = %s (%s), want %s", got, reason, tt.want)
			}
		})
	}
}
