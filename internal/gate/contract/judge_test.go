package contract

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/capability"
	"github.com/contested/contested/internal/gate/verdict"
	"github.com/contested/contested/internal/registry"
	"github.com/contested/contested/internal/seed"
)

// surface is a registered surface with two legs; reset runs only at
// levels 2 and 3.
func surface() registry.Surface {
	return registry.Surface{ID: "m.stock", Class: "store", Owner: "stock-team", Package: "./stock",
		Legs: []string{"burst", "reset"}, Tests: []string{"TestStock"},
		Levels: registry.Levels{"reset": {2, 3}},
		Budget: registry.Budget{Hardening: registry.Tier{Seeds: 3}}}
}

var held = []faultrecord.OracleRun{{Name: "exactly-once", OpsProduced: 30, OpsChecked: 30, Result: "held"}}

// rec is one record of a leg of TestStock.
func rec(leg string, fired bool, oracles []faultrecord.OracleRun) faultrecord.Record {
	return faultrecord.Record{Test: "TestStock/" + leg, Package: "example.com/m/stock", Surface: "m.stock", Class: "store",
		Leg: leg, Seed: 42, Replay: "CONTESTED_SEED=42 go test ./stock -run '^TestStock$/^" + leg + "$' -count=1",
		Armed: true, Fired: fired, Oracles: oracles}
}

func failedRec(leg string) faultrecord.Record {
	r := rec(leg, true, held)
	r.TestFailed = true
	return r
}

// battery run with these records and outcomes.
func runOf(recs []faultrecord.Record, failures map[string]string, ran, skipped []string, reruns map[string]bool) SeedRun {
	if failures == nil {
		failures = map[string]string{}
	}
	return SeedRun{Records: recs, Failures: failures, Ran: ran, Skipped: skipped, RerunTests: reruns, Passed: len(failures) == 0}
}

func TestJudge(t *testing.T) {
	burstOK := rec("burst", true, held)
	resetOK := rec("reset", true, held)
	tests := []struct {
		name     string
		level    int
		run      SeedRun
		env      string
		want     map[string]verdict.Verdict
		contract verdict.Contract
		says     string // in some leg's reason
	}{
		{"a leg not at this level is NOT-AT-LEVEL, left out of the roll-up", 1,
			runOf([]faultrecord.Record{burstOK}, nil, []string{"TestStock/burst"}, []string{"TestStock/reset"}, nil), "",
			map[string]verdict.Verdict{"burst": verdict.PassSmoke, "reset": verdict.NotAtLevel}, verdict.Green, "runs only at levels 2, 3 (this run: level 1)"},
		{"a leg at this level that never ran is NOT-RUN", 2,
			runOf([]faultrecord.Record{burstOK}, nil, []string{"TestStock/burst"}, nil, nil), "",
			map[string]verdict.Verdict{"burst": verdict.PassSmoke, "reset": verdict.NotRun}, verdict.Inconclusive, "declared at level 2"},
		{"a leg its test skipped at its level is NOT-RUN, naming the skip", 2,
			runOf([]faultrecord.Record{burstOK}, nil, []string{"TestStock/burst"}, []string{"TestStock/reset"}, nil), "",
			map[string]verdict.Verdict{"burst": verdict.PassSmoke, "reset": verdict.NotRun}, verdict.Inconclusive, "TestStock/reset was skipped"},
		{"a leg that ran below its levels is judged on its evidence, and the mismatch said", 1,
			runOf([]faultrecord.Record{burstOK, resetOK}, nil, []string{"TestStock/burst", "TestStock/reset"}, nil, nil), "",
			map[string]verdict.Verdict{"burst": verdict.PassSmoke, "reset": verdict.PassSmoke}, verdict.Green, "yet it ran at level 1"},
		{"a failure below its levels still counts", 1,
			runOf([]faultrecord.Record{burstOK, failedRec("reset")}, map[string]string{"TestStock/reset": "stock_test.go:9: lost a delivery"}, nil, nil, map[string]bool{"TestStock/reset": true}), "",
			map[string]verdict.Verdict{"burst": verdict.PassSmoke, "reset": verdict.FailReproducible}, verdict.Red, "lost a delivery"},
		{"both legs pass at level 2", 2,
			runOf([]faultrecord.Record{burstOK, resetOK}, nil, nil, nil, nil), "",
			map[string]verdict.Verdict{"burst": verdict.PassSmoke, "reset": verdict.PassSmoke}, verdict.Green, ""},
		{"no oracle is PARTIAL-surface", 1,
			runOf([]faultrecord.Record{rec("burst", true, nil)}, nil, nil, nil, nil), "",
			map[string]verdict.Verdict{"burst": verdict.PartialSurface}, verdict.Inconclusive, "no oracle"},
		{"one test of the leg without an oracle is PARTIAL-surface", 1,
			runOf([]faultrecord.Record{burstOK, {Test: "TestStock/x/burst", Package: "example.com/m/stock", Leg: "burst", Seed: 42, Armed: true, Fired: true}}, nil, nil, nil, nil), "",
			map[string]verdict.Verdict{"burst": verdict.PartialSurface}, verdict.Inconclusive, "TestStock/x/burst reported no oracle"},
		{"a subset checked is PARTIAL-model", 1,
			runOf([]faultrecord.Record{rec("burst", true, []faultrecord.OracleRun{{Name: "linearizability", OpsProduced: 779, OpsChecked: 770, Result: "held"}})}, nil, nil, nil, nil), "",
			map[string]verdict.Verdict{"burst": verdict.PartialModel}, verdict.Inconclusive, "checked 770 of 779"},
		{"an undecided oracle is INCONCLUSIVE-oracle-too-weak", 1,
			runOf([]faultrecord.Record{rec("burst", true, []faultrecord.OracleRun{{Name: "linearizability", OpsProduced: 9, OpsChecked: 9, Result: "unknown", Detail: "timed out"}})}, nil, nil, nil, nil), "",
			map[string]verdict.Verdict{"burst": verdict.InconclusiveOracleTooWeak}, verdict.Inconclusive, "timed out"},
		{"armed and not fired is INCONCLUSIVE-fault-not-proven", 1,
			runOf([]faultrecord.Record{rec("burst", false, held)}, map[string]string{"TestStock/burst": "ARMED BUT DID NOT FIRE"}, nil, nil, nil), "",
			map[string]verdict.Verdict{"burst": verdict.InconclusiveFaultNotProven}, verdict.Inconclusive, "1 faults and 0 were proven"},
		{"a leg test that ran without arming is INCONCLUSIVE-fault-not-proven", 1,
			runOf(nil, nil, []string{"TestStock/burst"}, nil, nil), "",
			map[string]verdict.Verdict{"burst": verdict.InconclusiveFaultNotProven}, verdict.Inconclusive, "without arming"},
		{"a failure reproduced on rerun is FAIL-reproducible", 1,
			runOf([]faultrecord.Record{failedRec("burst")}, map[string]string{"TestStock/burst": "stock_test.go:40: exactly-once violated: stock is 31"}, nil, nil, map[string]bool{"TestStock/burst": true}), "",
			map[string]verdict.Verdict{"burst": verdict.FailReproducible}, verdict.Red, "exactly-once violated"},
		{"a failure that passed on rerun is FAIL-nondeterministic", 1,
			runOf([]faultrecord.Record{failedRec("burst")}, map[string]string{"TestStock/burst": "stock_test.go:40: boom"}, nil, nil, map[string]bool{"TestStock/burst": false}), "",
			map[string]verdict.Verdict{"burst": verdict.FailNondeterministic}, verdict.Red, "passed on rerun"},
		{"a failure not rerun says so", 1,
			runOf([]faultrecord.Record{failedRec("burst")}, map[string]string{"TestStock/burst": "stock_test.go:40: boom"}, nil, nil, nil), "",
			map[string]verdict.Verdict{"burst": verdict.FailNondeterministic}, verdict.Red, "no rerun has shown yet whether it reproduces"},
		{"a failure before arming is no FAIL: it says its fault was never armed", 1,
			runOf(nil, map[string]string{"TestStock/burst": "stock_test.go:12: migrate: relation exists"}, nil, nil, map[string]bool{"TestStock/burst": true}), "",
			map[string]verdict.Verdict{"burst": verdict.InconclusiveFaultNotProven}, verdict.Inconclusive, "failed before its fault was armed: stock_test.go:12: migrate"},
		{"an oracle that found a violation before any fault was armed is still a FAIL: the promise broke without one", 1,
			runOf(nil, map[string]string{"TestStock/burst": "stock_test.go:40: oracle exactly-once: VIOLATED: stock is 31"}, nil, nil, map[string]bool{"TestStock/burst": true}), "",
			map[string]verdict.Verdict{"burst": verdict.FailReproducible}, verdict.Red, "oracle exactly-once: VIOLATED"},
		{"a failure after arming outranks a sibling test's failure before arming", 1,
			runOf([]faultrecord.Record{failedRec("burst")}, map[string]string{"TestStock/burst": "stock_test.go:40: exactly-once violated", "TestOther/burst": "other_test.go:9: setup: no table"}, nil, nil, map[string]bool{"TestStock/burst": true}), "",
			map[string]verdict.Verdict{"burst": verdict.FailReproducible}, verdict.Red, "exactly-once violated"},
		{"a violated oracle in a record is a FAIL even if the test passed", 1,
			runOf([]faultrecord.Record{rec("burst", true, []faultrecord.OracleRun{{Name: "conservation", OpsProduced: 5, OpsChecked: 5, Result: "violated", Detail: "money created"}})}, nil, nil, nil, nil), "",
			map[string]verdict.Verdict{"burst": verdict.FailNondeterministic}, verdict.Red, "conservation violated: money created"},
		{"records alone: test_failed is a FAIL", 1,
			runOf([]faultrecord.Record{failedRec("burst")}, nil, nil, nil, nil), "",
			map[string]verdict.Verdict{"burst": verdict.FailNondeterministic}, verdict.Red, "test_failed"},
		{"an unfired fault is not the test's own failure", 1,
			runOf([]faultrecord.Record{rec("burst", false, held)}, map[string]string{"TestStock/burst": "leg.go:1: contested: leg TestStock/burst ARMED BUT DID NOT FIRE"}, nil, nil, map[string]bool{"TestStock/burst": true}), "",
			map[string]verdict.Verdict{"burst": verdict.InconclusiveFaultNotProven}, verdict.Inconclusive, ""},
		{"without a layer: legs at this level INCONCLUSIVE-env, others NOT-AT-LEVEL", 1,
			SeedRun{}, "fault-preflight failed",
			map[string]verdict.Verdict{"burst": verdict.InconclusiveEnv, "reset": verdict.NotAtLevel}, verdict.CannotRun, "fault-preflight failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := Evidence{Level: tt.level, Runs: []SeedRun{tt.run}, EnvMissing: tt.env}
			if tt.env != "" {
				ev.Runs = nil
			}
			legs, c := Judge(surface(), ev)
			got := map[string]verdict.Leg{}
			for _, l := range legs {
				got[l.Lever] = l
			}
			for leg, want := range tt.want {
				if got[leg].Verdict != want {
					t.Errorf("leg %s: %s (%s), want %s", leg, got[leg].Verdict, got[leg].Reason, want)
				}
			}
			if c != tt.contract {
				t.Errorf("contract %s, want %s", c, tt.contract)
			}
			if tt.says != "" {
				found := false
				for _, l := range legs {
					found = found || strings.Contains(l.Reason, tt.says)
				}
				if !found {
					t.Errorf("no leg's reason says %q: %+v", tt.says, legs)
				}
			}
		})
	}
}

func TestJudgeWithNoLegAtThisLevelIsNotAtThisLevel(t *testing.T) {
	s := surface()
	s.Levels = registry.Levels{"burst": {3}, "reset": {2, 3}}
	legs, c := Judge(s, Evidence{Level: 1})
	if c != verdict.NotAtThisLevel {
		t.Fatalf("contract %s, want NOT AT THIS LEVEL: %+v", c, legs)
	}
}

func TestJudgeCarriesArmedFiredOraclesAndReplay(t *testing.T) {
	r := rec("burst", false, held)
	legs, _ := Judge(surface(), Evidence{Level: 1, Runs: []SeedRun{runOf([]faultrecord.Record{r, rec("burst", true, held)}, nil, nil, nil, nil)}})
	b := legs[0]
	if b.Armed != 2 || b.Fired != 1 || len(b.Oracles) != 1 || b.Replay != r.Replay || b.FailedRun != 42 {
		t.Errorf("burst: armed %d fired %d oracles %v replay %q seed %d; want 2, 1, one oracle, the record's replay, seed 42", b.Armed, b.Fired, b.Oracles, b.Replay, b.FailedRun)
	}
	sv := (&Result{Surface: "m.stock", Contract: verdict.Inconclusive, Legs: legs}).Verdict()
	if sv.ID != "m.stock" || sv.Verdict != "INCONCLUSIVE" || len(sv.Legs) != 2 || sv.Legs[0].Armed != 2 || sv.Legs[1].Verdict != "NOT-AT-LEVEL" {
		t.Errorf("surface entry %+v", sv)
	}
	// A leg without oracles still lists them, empty, for validate.json's readers.
	if b, err := json.Marshal(sv.Legs[1]); err != nil || !strings.Contains(string(b), `"oracles":[]`) || !strings.Contains(string(b), `"leg":"reset"`) {
		t.Errorf("the NOT-AT-LEVEL leg is written %s (%v), want its lever as leg and an empty oracles list", b, err)
	}
}

// TestBlocking is validate's rule: which legs keep it from GREEN.
func TestBlocking(t *testing.T) {
	tests := []struct {
		v           verdict.Verdict
		whole, part bool // blocks in a whole battery, in a selected one
	}{
		{verdict.PassSmoke, false, false},
		{verdict.PassHardening, false, false},
		{verdict.NotAtLevel, false, false},
		{verdict.NotRun, true, false},
		{verdict.PartialSurface, true, true},
		{verdict.PartialModel, true, true},
		{verdict.InconclusiveOracleTooWeak, true, true},
		{verdict.InconclusiveFaultNotProven, true, true},
		{verdict.InconclusiveEnv, true, true},
		{verdict.FailReproducible, true, true},
		{verdict.FailNondeterministic, true, true},
	}
	for _, tt := range tests {
		t.Run(string(tt.v), func(t *testing.T) {
			r := &Result{Legs: []verdict.Leg{{Lever: "burst", Verdict: verdict.PassSmoke}, {Lever: "reset", Verdict: tt.v}}}
			if got := len(r.Blocking(true)) > 0; got != tt.whole {
				t.Errorf("whole battery: blocks %v, want %v", got, tt.whole)
			}
			if got := len(r.Blocking(false)) > 0; got != tt.part {
				t.Errorf("selected battery: blocks %v, want %v", got, tt.part)
			}
		})
	}
}

func TestPackageMatches(t *testing.T) {
	tests := []struct {
		module, pattern, pkg string
		want                 bool
	}{
		{"example.com/m", "./stock", "example.com/m/stock", true},
		{"example.com/m", "./stock", "example.com/m/stockx", false},
		{"example.com/m", "./stock", "example.com/m", false},
		{"example.com/m", ".", "example.com/m", true},
		{"example.com/m", ".", "example.com/m/stock", false},
		{"example.com/m", "./...", "example.com/m/a/b", true},
		{"example.com/m", "./examples/...", "example.com/m/examples/ledger", true},
		{"example.com/m", "./examples/...", "example.com/m/cluster", false},
		{"example.com/m", "example.com/m/stock", "example.com/m/stock", true},
		{"example.com/m", "", "example.com/m/anything", true},
		{"example.com/m", "./stock", "", true},
	}
	for _, tt := range tests {
		if got := packageMatches(tt.module, tt.pattern, tt.pkg); got != tt.want {
			t.Errorf("packageMatches(%q, %q, %q) = %v, want %v", tt.module, tt.pattern, tt.pkg, got, tt.want)
		}
	}
}

// TestJudgeBattery: a battery's tests and records go to the surface that
// lists them, in its package only; a surface none of whose tests ran is
// left out; reruns reach the failing test they belong to.
func TestJudgeBattery(t *testing.T) {
	reg, err := registry.Parse("contested-surfaces.toml", []byte(`schema = 1
[gate]
recording_classes = ["store"]
[[surface]]
id = "m.stock"
class = "store"
owner = "stock-team"
behavior = "b"
oracle = "exactly-once"
legs = ["burst", "reset"]
tests = ["TestStock"]
package = "./stock"
levels = { reset = [2, 3] }
[[surface]]
id = "m.queue"
class = "store"
owner = "queue-team"
behavior = "b"
oracle = "exactly-once"
legs = ["burst"]
tests = ["TestQueue"]
package = "./queue"
`))
	if err != nil {
		t.Fatal(err)
	}
	res := &battery.Result{Tests: []battery.Test{
		{Package: "example.com/m/stock", Name: "TestStock", Action: "fail"},
		{Package: "example.com/m/stock", Name: "TestStock/burst", Action: "fail", Output: "stock_test.go:40: exactly-once violated"},
		{Package: "example.com/m/stock", Name: "TestStock/reset", Action: "skip"},
		// Same name, another package: not the surface's.
		{Package: "example.com/m/other", Name: "TestStock/reset", Action: "fail", Output: "other_test.go:1: boom"},
		{Package: "example.com/m/faultlayer", Name: "TestProviders", Action: "fail", Output: "layer_test.go:5: debootstrap"},
	}}
	recs := []faultrecord.Record{failedRec("burst"),
		// An unregistered test's record naming the surface is not its evidence.
		{Test: "TestPoison", Package: "example.com/m/stock", Surface: "m.stock", Leg: "reset", Armed: true}}
	recs[0].Package = "example.com/m/stock"
	recs[0].Replay = "CONTESTED_SEED=42 go test example.com/m/stock -run '^TestStock$/^burst$' -count=1" // as the leg wrote it
	got := JudgeBattery(Battery{Registry: reg, Module: "example.com/m", Result: res, Records: recs, Level: 1,
		Reruns: map[string]bool{"example.com/m/stock.TestStock/burst": true}})
	if len(got) != 1 || got[0].Surface != "m.stock" {
		t.Fatalf("judged %d surfaces (%v), want m.stock alone: m.queue did not run", len(got), got)
	}
	burst, _ := got[0].Leg("burst")
	reset, _ := got[0].Leg("reset")
	if burst.Verdict != verdict.FailReproducible || got[0].Contract != verdict.Red {
		t.Errorf("burst %s (%s), contract %s; want FAIL-reproducible and RED", burst.Verdict, burst.Reason, got[0].Contract)
	}
	if reset.Verdict != verdict.NotAtLevel {
		t.Errorf("reset %s (%s); want NOT-AT-LEVEL: another package's failing TestStock/reset and an unregistered test's record are not its evidence", reset.Verdict, reset.Reason)
	}
	// A battery has no seed of its own: the leg's run takes its record's.
	if len(burst.Runs) != 1 {
		t.Fatalf("burst has %d runs, want the battery's one", len(burst.Runs))
	}
	if seed := burst.Runs[0].Seed; seed != 42 {
		t.Errorf("burst's run has seed %d, want its record's 42", seed)
	}
	if burst.Replay != recs[0].Replay {
		t.Errorf("burst replayed with %q, want its record's %q", burst.Replay, recs[0].Replay)
	}
}

// TestAReplayWithoutAPackageRunsTheModule: a surface that names no
// package is replayed over the whole module (./...), with the seed of the
// run that failed.
func TestAReplayWithoutAPackageRunsTheModule(t *testing.T) {
	s := surface()
	s.Package = ""
	run := runOf([]faultrecord.Record{failedRec("burst")}, map[string]string{"TestStock/burst": "stock_test.go:40: exactly-once violated"}, nil, nil, nil)
	run.Seed = 9
	legs, _ := Judge(s, Evidence{Level: 1, Runs: []SeedRun{run}})
	if len(legs) == 0 {
		t.Fatal("no leg judged")
	}
	if want := seed.Seed(9).Replay(1, "./...", "TestStock/burst"); legs[0].Replay != want {
		t.Errorf("burst replayed with %q, want %q", legs[0].Replay, want)
	}
}

// TestFirstFailureLine: the line that says why a test failed is its first
// file:line message that is not its leg's own unfired-fault report, else
// the first line that is not go test's framing; at most 300 bytes.
func TestFirstFailureLine(t *testing.T) {
	at300 := "x.go:" + strings.Repeat("a", 295)
	tests := []struct{ name, out, want string }{
		{"a file:line message", "=== RUN   TestX\n    x_test.go:12: boom\n--- FAIL: TestX (0.00s)\n", "x_test.go:12: boom"},
		{"past the leg's unfired fault", "    leg.go:1: contested: leg TestX/burst ARMED BUT DID NOT FIRE\n    x_test.go:9: real\n", "x_test.go:9: real"},
		{"past another report of the leg's", "    leg.go:3: contested: leg TestX/burst: healed\n    x_test.go:4: real\n", "x_test.go:4: real"},
		{"past an unfired fault said otherwise", "    ARMED BUT DID NOT FIRE in x.go:3\n    x_test.go:5: real\n", "x_test.go:5: real"},
		{"no file:line: the first line past the framing", "=== RUN   TestX\n--- FAIL: TestX (0.00s)\n\npanic: boom\nmore\nFAIL\n", "panic: boom"},
		{"nothing but framing", "=== RUN   TestX\n--- FAIL: TestX (0.00s)\nFAIL\nexit status 1\n", "see the test output"},
		{"300 bytes are kept whole", at300 + "\n", at300},
		{"301 are cut to 300", at300 + "b\n", at300 + "…"},
		{"a long line without file:line is cut too", strings.Repeat("c", 301), strings.Repeat("c", 300) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FirstFailureLine(tt.out); got != tt.want {
				t.Errorf("FirstFailureLine(%q) = %q, want %q", tt.out, got, tt.want)
			}
		})
	}
}

// TestANotRunLegSaysWhetherItsTestWasSkipped: a leg declared at this level
// that no run attempted names its skipped test when there is one, and
// only then.
func TestANotRunLegSaysWhetherItsTestWasSkipped(t *testing.T) {
	const notRun = "declared at level 1, but no run of it was attempted"
	for _, tc := range []struct {
		name    string
		skipped []string
		want    string
	}{
		{"no test of it ran", nil, notRun},
		{"its test was skipped", []string{"TestStock/burst"}, notRun + ": its test TestStock/burst was skipped (make it run at level 1, or restrict the leg with levels in the registry)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			legs, _ := Judge(surface(), Evidence{Level: 1, Runs: []SeedRun{runOf(nil, nil, nil, tc.skipped, nil)}})
			if len(legs) == 0 {
				t.Fatal("no leg judged")
			}
			if l := legs[0]; l.Verdict != verdict.NotRun || l.Reason != tc.want {
				t.Errorf("burst %s: %q; want NOT-RUN: %q", l.Verdict, l.Reason, tc.want)
			}
		})
	}
}

// TestANotRunLegNamesTheCapabilityItLacked: a leg that did not run because
// the machine lacks a capability its surface needs, or its test skipped
// saying it lacked one, is NOT-RUN naming the capability and the command
// that provides it; a leg that did not run with nothing lacking does not.
func TestANotRunLegNamesTheCapabilityItLacked(t *testing.T) {
	noChromium := capability.Matrix{{Name: capability.Chromium, Detail: "not found on PATH (looked for chromium)", Provide: "apt-get install chromium"},
		{Name: capability.Docker, Present: true}}
	withChromium := capability.Matrix{{Name: capability.Chromium, Present: true}, {Name: capability.Docker, Present: true}}
	const says = "cannot run here: missing capability chromium: not found on PATH (looked for chromium); provide it: apt-get install chromium"
	for _, tc := range []struct {
		name   string
		needs  []string
		caps   capability.Matrix
		lacked map[string][]string
		want   string
	}{
		{"the surface needs it and the machine lacks it", []string{"chromium"}, noChromium, nil,
			"cannot run here: surface m.stock needs chromium (registry needs) and this machine lacks it: missing capability chromium: not found on PATH (looked for chromium); provide it: apt-get install chromium"},
		{"its test skipped saying it lacked it", nil, noChromium, map[string][]string{"TestStock": {"chromium"}}, says},
		{"its test skipped saying so, with no matrix", nil, nil, map[string][]string{"TestStock/burst": {"chromium"}},
			"cannot run here: missing capability chromium; provide it: apt-get install chromium"},
		{"the surface needs it and the machine has it", []string{"chromium"}, withChromium, nil, "declared at level 1, but no run of it was attempted"},
		{"another surface's test lacked it", nil, noChromium, map[string][]string{"TestOther": {"chromium"}}, "declared at level 1, but no run of it was attempted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := surface()
			s.Needs = tc.needs
			run := runOf(nil, nil, nil, nil, nil)
			run.Lacked = tc.lacked
			legs, _ := Judge(s, Evidence{Level: 1, Runs: []SeedRun{run}, Capabilities: tc.caps})
			if l := legs[0]; l.Verdict != verdict.NotRun || l.Reason != tc.want {
				t.Errorf("burst %s: %q; want NOT-RUN: %q", l.Verdict, l.Reason, tc.want)
			}
		})
	}
}

// TestALegWhoseSurfaceNeedsAMissingCapabilityIsNotRun: when the surface's
// registry needs name a capability the machine's probe found missing, its
// legs are NOT-RUN, whatever their tests did without it (passed, fired,
// failed): the surface is never GREEN, so no certificate can stand for it,
// and each leg's reason names the surface, the capability and how to
// provide it.
func TestALegWhoseSurfaceNeedsAMissingCapabilityIsNotRun(t *testing.T) {
	noChromium := capability.Matrix{{Name: capability.Chromium, Detail: "not found on PATH (looked for chromium)", Provide: "apt-get install chromium"},
		{Name: capability.Docker, Present: true}}
	withChromium := capability.Matrix{{Name: capability.Chromium, Present: true}, {Name: capability.Docker, Present: true}}
	passed := runOf([]faultrecord.Record{rec("burst", true, held), rec("reset", true, held)}, nil, []string{"TestStock/burst", "TestStock/reset"}, nil, nil)
	failed := runOf([]faultrecord.Record{failedRec("burst")}, map[string]string{"TestStock/burst": "boom"}, []string{"TestStock/burst"}, nil, nil)
	for _, tc := range []struct {
		name     string
		level    int
		caps     capability.Matrix
		run      SeedRun
		want     map[string]verdict.Verdict
		contract verdict.Contract
		says     string
	}{
		{"a leg whose test passed without the capability is NOT-RUN, and the surface is not GREEN", 2, noChromium, passed,
			map[string]verdict.Verdict{"burst": verdict.NotRun, "reset": verdict.NotRun}, verdict.Inconclusive,
			"cannot run here: surface m.stock needs chromium (registry needs) and this machine lacks it: missing capability chromium: not found on PATH (looked for chromium); provide it: apt-get install chromium; its test ran anyway (1 of 1 armed faults fired), and that run is not judged"},
		{"a leg whose test failed without the capability is NOT-RUN, not a failure of the component", 2, noChromium, failed,
			map[string]verdict.Verdict{"burst": verdict.NotRun, "reset": verdict.NotRun}, verdict.Inconclusive, "surface m.stock needs chromium"},
		{"a leg its test ran below its levels is NOT-RUN too", 1, noChromium, passed,
			map[string]verdict.Verdict{"burst": verdict.NotRun, "reset": verdict.NotRun}, verdict.Inconclusive, "surface m.stock needs chromium"},
		{"a leg not at this level and not run stays NOT-AT-LEVEL", 1, noChromium, runOf([]faultrecord.Record{rec("burst", true, held)}, nil, []string{"TestStock/burst"}, nil, nil),
			map[string]verdict.Verdict{"burst": verdict.NotRun, "reset": verdict.NotAtLevel}, verdict.Inconclusive, "surface m.stock needs chromium"},
		{"with the capability present the same run is judged and GREEN", 2, withChromium, passed,
			map[string]verdict.Verdict{"burst": verdict.PassSmoke, "reset": verdict.PassSmoke}, verdict.Green, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := surface()
			s.Needs = []string{"chromium"}
			legs, contract := Judge(s, Evidence{Level: tc.level, Runs: []SeedRun{tc.run}, Capabilities: tc.caps})
			said := false
			for _, l := range legs {
				if l.Verdict != tc.want[l.Lever] {
					t.Errorf("%s is %s (%s), want %s", l.Lever, l.Verdict, l.Reason, tc.want[l.Lever])
				}
				if l.Verdict == verdict.NotRun && (len(l.Missing) != 1 || l.Missing[0] != "chromium") {
					t.Errorf("%s names missing %v, want [chromium]", l.Lever, l.Missing)
				}
				said = said || tc.says != "" && strings.Contains(l.Reason, tc.says)
			}
			if tc.says != "" && !said {
				t.Errorf("no leg says %q: %+v", tc.says, legs)
			}
			if contract != tc.contract {
				t.Errorf("surface %s, want %s", contract, tc.contract)
			}
			r := &Result{Surface: s.ID, Contract: contract, Legs: legs}
			if blocking := r.Blocking(true); tc.contract != verdict.Green && len(blocking) == 0 {
				t.Errorf("no leg keeps a whole battery from GREEN")
			}
		})
	}
}
