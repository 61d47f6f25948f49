package verdict

import (
	"strings"
	"testing"

	"github.com/contested/contested/faultrecord"
)

func TestAssign(t *testing.T) {
	yes, no := true, false
	held := []faultrecord.OracleRun{{Name: "exactly-once", OpsProduced: 10, OpsChecked: 10, Result: "held"}}
	pass := func(seed int64) Run { return Run{Seed: seed, Attempted: true, Armed: 2, Fired: 2, Oracles: held} }
	ran := func(seed int64, schedule string) Run { r := pass(seed); r.Schedule = schedule; return r }
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
		{"three seeds of three schedules are hardening", []Run{ran(1, "a"), ran(2, "b"), ran(3, "c")}, PassHardening},
		{"three seeds of one schedule are reruns, not hardening", []Run{ran(1, "a"), ran(2, "a"), ran(3, "a")}, InconclusiveOracleTooWeak},
		{"two seeds of one schedule are reruns too", []Run{ran(1, "a"), ran(2, "a")}, InconclusiveOracleTooWeak},
		{"three seeds of two schedules are smoke", []Run{ran(1, "a"), ran(2, "b"), ran(3, "a")}, PassSmoke},
		{"a seed that recorded no schedule counts as its own", []Run{ran(1, "a"), ran(2, "a"), pass(3)}, PassSmoke},
		{"one seed is one schedule and smoke", []Run{ran(1, "a")}, PassSmoke},
		{"three seeds under the coverage floor are smoke", []Run{
			{Seed: 1, Attempted: true, Armed: 1, Fired: 1, Oracles: held, Schedule: "a"},
			{Seed: 2, Attempted: true, Armed: 1, Fired: 1, Oracles: held, Schedule: "b"},
			{Seed: 3, Attempted: true, Armed: 2, Fired: 2, Oracles: held, Schedule: "c"}}, PassSmoke},
		{"three seeds at the coverage floor are hardening", []Run{
			{Seed: 1, Attempted: true, Armed: 2, Fired: 2, Oracles: held, Schedule: "a"},
			{Seed: 2, Attempted: true, Armed: 1, Fired: 1, Oracles: held, Schedule: "b"},
			{Seed: 3, Attempted: true, Armed: 2, Fired: 2, Oracles: held, Schedule: "c"}}, PassHardening},
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

// TestTheReasonSaysWhatTheSeedsRan: the reasons name the schedules the
// seeds ran, and why seeds that repeat one are no hardening.
func TestTheReasonSaysWhatTheSeedsRan(t *testing.T) {
	held := []faultrecord.OracleRun{{Name: "exactly-once", OpsProduced: 1, OpsChecked: 1, Result: "held"}}
	run := func(seed int64, s string) Run {
		return Run{Seed: seed, Attempted: true, Armed: 2, Fired: 2, Oracles: held, Schedule: s}
	}
	tests := []struct {
		name string
		runs []Run
		says string
	}{
		{"one schedule", []Run{run(1, "d1"), run(2, "d1"), run(3, "d1")}, "3 seeds ran one schedule (d1): the schedule is not seeded"},
		{"two of three", []Run{run(1, "d1"), run(2, "d2"), run(3, "d1")}, "2 distinct schedules; oracles checked 3 operations (hardening needs 3 distinct schedules)"},
		{"three", []Run{run(1, "d1"), run(2, "d2"), run(3, "d3")}, "6 faults fired of 6 armed over 3 seeds, 3 distinct schedules"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, reason := Assign(tt.runs, 3); !strings.Contains(reason, tt.says) {
				t.Errorf("reason %q, want %q in it", reason, tt.says)
			}
		})
	}
}

// TestAReasonNeverSaysSeedZero: a run no record gave a seed is "seed
// unknown" in every reason, never "seed 0", which no replay can repeat.
func TestAReasonNeverSaysSeedZero(t *testing.T) {
	tests := []struct {
		name string
		run  Run
	}{
		{"a failure", Run{Attempted: true, Failed: true, FailureText: "boom"}},
		{"a run that armed nothing", Run{Attempted: true}},
		{"a fault that did not land", Run{Attempted: true, Armed: 2, Fired: 1}},
		{"a run with no oracle", Run{Attempted: true, Armed: 1, Fired: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, reason := Assign([]Run{tt.run}, 3)
			if strings.Contains(reason, "seed 0") || !strings.Contains(reason, "seed unknown") {
				t.Errorf("reason %q: want seed unknown, never seed 0", reason)
			}
		})
	}
}
