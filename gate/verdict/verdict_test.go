package verdict

import (
	"testing"

	"github.com/contested/contested/faultrecord"
)

func TestAssign(t *testing.T) {
	yes, no := true, false
	held := []faultrecord.OracleRun{{Name: "exactly-once", OpsProduced: 10, OpsChecked: 10, Result: "held"}}
	pass := func(seed int64) Run { return Run{Seed: seed, Attempted: true, Armed: 1, Fired: 1, Oracles: held} }
	tests := []struct {
		name string
		runs []Run
		want Verdict
	}{
		{"nothing attempted", []Run{{Seed: 1}}, NotRun},
		{"no runs at all", nil, NotRun},
		{"layer missing", []Run{{Seed: 1, EnvMissing: "fault-preflight failed"}}, InconclusiveEnv},
		{"failed and reproduced", []Run{pass(1), {Seed: 2, Attempted: true, Failed: true, Reproduced: &yes, Armed: 1, Fired: 1}}, FailReproducible},
		{"failed, rerun passed", []Run{{Seed: 2, Attempted: true, Failed: true, Reproduced: &no, Armed: 1, Fired: 1}}, FailNondeterministic},
		{"failed, not rerun", []Run{{Seed: 2, Attempted: true, Failed: true, Armed: 1, Fired: 1}}, FailNondeterministic},
		{"part of the leg reported no oracle", []Run{{Seed: 1, Attempted: true, Armed: 1, Fired: 1, Oracles: held, Unchecked: []string{"TestX/reset"}}}, PartialSurface},
		{"failure outranks an unproven fault", []Run{{Seed: 2, Attempted: true, Failed: true, Reproduced: &yes, Armed: 1, Fired: 0}}, FailReproducible},
		{"armed, not fired", []Run{{Seed: 1, Attempted: true, Armed: 2, Fired: 1, Oracles: held}}, InconclusiveFaultNotProven},
		{"never armed", []Run{{Seed: 1, Attempted: true, Oracles: held}}, InconclusiveFaultNotProven},
		{"no oracle", []Run{{Seed: 1, Attempted: true, Armed: 1, Fired: 1}}, PartialSurface},
		{"oracle undecided", []Run{{Seed: 1, Attempted: true, Armed: 1, Fired: 1, Oracles: []faultrecord.OracleRun{{Name: "linearizable", Result: "unknown"}}}}, InconclusiveOracleTooWeak},
		{"oracle checked a subset", []Run{{Seed: 1, Attempted: true, Armed: 1, Fired: 1, Oracles: []faultrecord.OracleRun{{Name: "x", OpsProduced: 10, OpsChecked: 7, Result: "held"}}}}, PartialModel},
		{"one seed is smoke", []Run{pass(1)}, PassSmoke},
		{"three seeds are hardening", []Run{pass(1), pass(2), pass(3)}, PassHardening},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason := Assign(tt.runs, 3)
			if got != tt.want {
				t.Errorf("Assign = %s (%s), want %s", got, reason, tt.want)
			}
			if reason == "" {
				t.Error("no reason given")
			}
		})
	}
}

func TestSurface(t *testing.T) {
	tests := []struct {
		name string
		legs []Verdict
		want Contract
	}{
		{"all pass", []Verdict{PassHardening, PassSmoke}, Green},
		{"one fails", []Verdict{PassHardening, FailNondeterministic}, Red},
		{"layer down", []Verdict{InconclusiveEnv, InconclusiveEnv}, CannotRun},
		{"red outranks cannot run", []Verdict{FailReproducible, InconclusiveEnv}, Red},
		{"red outranks cannot run in any order", []Verdict{InconclusiveEnv, FailReproducible}, Red},
		{"one unproven", []Verdict{PassHardening, InconclusiveFaultNotProven}, Inconclusive},
		{"not run is not green", []Verdict{PassHardening, NotRun}, Inconclusive},
		{"no legs", nil, Inconclusive},
		{"a leg not at this level is left out", []Verdict{PassSmoke, NotAtLevel}, Green},
		{"not at this level does not hide a failure", []Verdict{NotAtLevel, FailReproducible}, Red},
		{"not at this level does not hide a leg that did not run", []Verdict{NotAtLevel, NotRun}, Inconclusive},
		{"no leg at this level", []Verdict{NotAtLevel, NotAtLevel}, NotAtThisLevel},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Surface(tt.legs); got != tt.want {
				t.Errorf("Surface(%v) = %s, want %s", tt.legs, got, tt.want)
			}
		})
	}
}
