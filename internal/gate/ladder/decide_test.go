package ladder

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/battery/batterytest"
	"github.com/contested/contested/internal/capacity"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/faultlayer"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gate/verdict"
	"github.com/contested/contested/internal/registry"
	"github.com/contested/contested/internal/rundir"
	"github.com/contested/contested/internal/runenv"
	"github.com/contested/contested/internal/testlog"
)

// fixtureOptions returns ladder options over the adopter fixture with no
// fault layer behind them: the layer variables name one that does not
// answer, and the surface's contract is given as already run GREEN. A
// ladder that went past step 2 would rerun the test against that dead
// layer and read GREEN: never CANNOT RUN.
func fixtureOptions(t *testing.T) Options {
	t.Helper()
	dir, err := filepath.Abs("../../../testdata/adopter")
	if err != nil {
		t.Fatal(err)
	}
	regPath := filepath.Join(dir, "contested-surfaces.toml")
	reg, err := registry.Load(regPath)
	if err != nil {
		t.Fatal(err)
	}
	env := runenv.Env{ModuleRoot: dir, Registry: regPath, ResultsDir: rundir.Dir(t.TempDir())}.Attach(
		[]string{envvar.Layer + "=external", envvar.ToxiproxyURL + "=http://127.0.0.1:1", envvar.PostgresDSN + "=postgres://nobody@127.0.0.1:1/none"}, "")
	// The battery the failure was reported from.
	seen := &battery.Result{Tests: []battery.Test{{Package: "example.com/adopter", Name: "TestStockContract/reset", Action: "fail"}}}
	return Options{Env: env, Registry: reg, Reruns: 1, Out: testlog.Writer(t), Seen: seen, Binaries: batterytest.Binaries(t),
		Contracts: map[string]*contract.Result{"adopter.stock": {Surface: "adopter.stock", Contract: verdict.Green,
			Legs: []verdict.Leg{{Lever: "burst", Verdict: verdict.PassSmoke}, {Lever: "reset", Verdict: verdict.PassSmoke}}}}}
}

// TestAFailedPreflightAlwaysCannotRun: whatever else is known, a preflight
// that failed (with or without an error from bringing the layer up), that
// did not run, or that checked nothing ends the ladder at step 2 with
// CANNOT RUN, owned by the fault layer, saying what failed.
func TestAFailedPreflightAlwaysCannotRun(t *testing.T) {
	leases := faultlayer.Check{Name: "lease table", Detail: "relation fault_port_leases does not exist", Fix: "run the layer's migration"}
	version := faultlayer.Check{Name: "toxiproxy /version", OK: true, Detail: "2.12.0"}
	exposed := faultlayer.Check{Name: "control API", Hard: true, Detail: "published on 0.0.0.0:8474", Fix: "publish on 127.0.0.1 only"}
	tests := []struct {
		name string
		pf   *faultlayer.Preflight
		says string
	}{
		{"a check failed, no layer error", &faultlayer.Preflight{Checks: []faultlayer.Check{version, leases}}, "fault_port_leases does not exist"},
		{"the first check failed, no layer error", &faultlayer.Preflight{Checks: []faultlayer.Check{leases, version}}, "run the layer's migration"},
		{"a hard check failed, no layer error", &faultlayer.Preflight{Checks: []faultlayer.Check{version, exposed}}, "0.0.0.0:8474"},
		{"no preflight and no layer error", nil, "preflight did not run"},
		{"a preflight that checked nothing", &faultlayer.Preflight{}, "no checks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := fixtureOptions(t)
			opts.Preflight = tt.pf
			o, err := Walk(context.Background(), "TestStockContract/reset", opts)
			if err != nil {
				t.Fatal(err)
			}
			if o.Step != 2 || o.Owner != FaultLayer || o.Contract != verdict.CannotRun || o.Verdict != contractFinding(verdict.CannotRun) {
				t.Fatalf("step %d, owner %s, contract %s, verdict %s; want step 2, fault layer, CANNOT RUN", o.Step, o.Owner, o.Contract, o.Verdict)
			}
			if !strings.Contains(o.Action, tt.says) || !strings.Contains(o.Action, "repair the fault layer") {
				t.Errorf("action %q does not say to repair the layer and what failed (%q)", o.Action, tt.says)
			}
			if o.Reruns.Runs != 0 {
				t.Errorf("the test was rerun %d times against a layer that failed preflight", o.Reruns.Runs)
			}
		})
	}
}

func leg(lever string, v verdict.Verdict) verdict.Leg {
	return verdict.Leg{Lever: lever, Verdict: v, Reason: "because " + lever, FailedRun: 7, Replay: "CONTESTED_SEED=7 go test -run " + lever}
}

// TestDecide reads each contract verdict into its owner, verdict and
// action: a RED contract names the failing leg (not the first leg), and an
// INCONCLUSIVE one is never read as GREEN (the component is not said to
// hold its contract) and names only the legs that are not passes.
func TestDecide(t *testing.T) {
	s := registry.Surface{ID: "adopter.stock", Owner: "stock-team", Behavior: "an order is applied once"}
	saturated := &capacity.Report{Saturated: true, Contended: []string{"load: 5.5 per CPU"}}
	tests := []struct {
		name     string
		res      contract.Result
		reruns   Reruns
		capacity *capacity.Report
		owner    Owner
		verdict  Finding
		says     []string
		never    []string
	}{
		{"red names the failing leg", contract.Result{Contract: verdict.Red, Legs: []verdict.Leg{leg("reset", verdict.PassSmoke), leg("pool", verdict.NotAtLevel), leg("burst", verdict.FailReproducible)}},
			Reruns{Runs: 3, Failures: 3, Class: "consistent"}, nil, Component, Finding(verdict.FailReproducible), []string{"leg burst", "seed 7", "CONTESTED_SEED=7 go test -run burst"}, []string{"leg reset"}},
		{"red with a nondeterministic failure", contract.Result{Contract: verdict.Red, Legs: []verdict.Leg{leg("burst", verdict.InconclusiveFaultNotProven), leg("reset", verdict.FailNondeterministic)}},
			Reruns{Runs: 3, Failures: 1, Class: "flaky"}, nil, Component, Finding(verdict.FailNondeterministic), []string{"leg reset"}, []string{"leg burst"}},
		{"inconclusive is the test author's, never green", contract.Result{Contract: verdict.Inconclusive, Legs: []verdict.Leg{leg("reset", verdict.PassSmoke), leg("pool", verdict.NotAtLevel), leg("burst", verdict.InconclusiveFaultNotProven)}},
			Reruns{Runs: 3, Failures: 3, Class: "consistent"}, saturated, TestAuthor, Finding(verdict.Inconclusive), []string{"burst is INCONCLUSIVE-fault-not-proven (because burst)", "decisive"}, []string{"reset is", "pool is", "holds its contract", "capacity"}},
		{"a leg that failed before arming is its setup's to fix, not the component's", contract.Result{Contract: verdict.Inconclusive, Legs: []verdict.Leg{leg("reset", verdict.PassSmoke),
			{Lever: "burst", Verdict: verdict.InconclusiveFaultNotProven, Reason: "seed 7: failed before its fault was armed: setup: no table", Runs: []verdict.Run{{Seed: 7, Attempted: true, FailedBeforeArming: "setup: no table"}}}}},
			Reruns{Runs: 3, Failures: 3, Class: "consistent"}, nil, TestAuthor, Finding(verdict.Inconclusive), []string{"fix the leg's setup", "leg burst failed before its fault was armed: setup: no table", "not about the claim under fault"}, []string{"decisive", "reset is"}},
		{"cannot run is the fault layer's", contract.Result{Contract: verdict.CannotRun, Legs: []verdict.Leg{leg("burst", verdict.InconclusiveEnv)}},
			Reruns{}, nil, FaultLayer, Finding(verdict.CannotRun), []string{"repair the fault layer"}, nil},
		{"not at this level says to walk at another level", contract.Result{Contract: verdict.NotAtThisLevel, Level: 1, Legs: []verdict.Leg{leg("burst", verdict.NotAtLevel)}},
			Reruns{Runs: 3, Failures: 3, Class: "consistent"}, nil, TestAuthor, Finding(verdict.NotAtThisLevel), []string{"level 1", "CONTESTED_LEVEL"}, nil},
		{"green and flaky is the test author's", contract.Result{Contract: verdict.Green, Legs: []verdict.Leg{leg("burst", verdict.PassSmoke)}},
			Reruns{Runs: 3, Failures: 1, Class: "flaky"}, nil, TestAuthor, "GREEN contract, flaky battery", []string{"without loosening it", "failed 1 of 3 reruns"}, nil},
		{"green and consistent is the test author's", contract.Result{Contract: verdict.Green, Legs: []verdict.Leg{leg("burst", verdict.PassSmoke)}},
			Reruns{Runs: 3, Failures: 3, Class: "consistent"}, nil, TestAuthor, "GREEN contract, consistent battery failure", []string{"holds its contract in isolation"}, nil},
		{"green in a saturated run, passing alone, failing in time, is capacity, still a fix", contract.Result{Contract: verdict.Green, Legs: []verdict.Leg{leg("burst", verdict.PassSmoke)}},
			Reruns{Runs: 3, Class: "passes", Reason: "no reply within 2s"}, saturated, Capacity, "GREEN contract, saturated run", []string{"load: 5.5 per CPU", "still fix it"}, nil},
		{"green in an unsaturated run is not capacity", contract.Result{Contract: verdict.Green, Legs: []verdict.Leg{leg("burst", verdict.PassSmoke)}},
			Reruns{Runs: 3, Failures: 1, Class: "flaky"}, &capacity.Report{Saturated: false, Contended: []string{"load: 0.4 per CPU"}}, TestAuthor, "GREEN contract, flaky battery", nil, []string{"capacity"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &Outcome{Reruns: tt.reruns}
			res := tt.res
			decide(o, s, &res, Options{Capacity: tt.capacity})
			if o.Owner != tt.owner || o.Verdict != tt.verdict {
				t.Fatalf("owner %s, verdict %q; want %s, %q (action %q)", o.Owner, o.Verdict, tt.owner, tt.verdict, o.Action)
			}
			if tt.owner == Component && o.OwnerName != s.Owner {
				t.Errorf("owner name %q, want the surface's team %q", o.OwnerName, s.Owner)
			}
			for _, want := range tt.says {
				if !strings.Contains(o.Action, want) {
					t.Errorf("action %q does not say %q", o.Action, want)
				}
			}
			for _, not := range tt.never {
				if strings.Contains(o.Action, not) {
					t.Errorf("action %q says %q", o.Action, not)
				}
			}
		})
	}
}

// TestARedLegSaysOnlyWhatWasRecorded: the action and evidence of a RED
// contract name the seed, the replay and each side's landing evidence
// only when a record holds them, and say what is missing otherwise: never
// "seed 0", an empty "reproduce with", or an empty "injector: " or
// "victim: " line.
func TestARedLegSaysOnlyWhatWasRecorded(t *testing.T) {
	s := registry.Surface{ID: "adopter.stock", Owner: "stock-team", Behavior: "an order is applied once"}
	tests := []struct {
		name        string
		leg         verdict.Leg
		says, never []string
	}{
		{"a leg with nothing recorded", verdict.Leg{Lever: "burst", Verdict: verdict.FailReproducible, Reason: "boom"},
			[]string{"seed unknown", "no replay was recorded", "landing evidence: missing: "},
			[]string{"seed 0", "reproduce with ;", "reproduce with  ", "CONTESTED_SEED=0"}},
		{"a leg whose victim saw nothing recorded", verdict.Leg{Lever: "burst", Verdict: verdict.FailReproducible, Reason: "boom", FailedRun: 7, Replay: "CONTESTED_SEED=7 go test", Injector: "toxic read back"},
			[]string{"seed 7", "reproduce with CONTESTED_SEED=7 go test", "injector: toxic read back", "victim: missing: "},
			[]string{"seed unknown", "injector: missing"}},
		{"a leg with every side recorded", verdict.Leg{Lever: "burst", Verdict: verdict.FailReproducible, Reason: "boom", FailedRun: 7, Replay: "CONTESTED_SEED=7 go test", Injector: "toxic read back", Victim: "ECONNRESET"},
			[]string{"injector: toxic read back", "victim: ECONNRESET"},
			[]string{"missing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &Outcome{}
			decide(o, s, &contract.Result{Contract: verdict.Red, Legs: []verdict.Leg{tt.leg}}, Options{})
			all := o.Action + "\n" + strings.Join(o.Evidence, "\n") + "\n"
			for _, e := range o.Evidence {
				if e == "injector: " || e == "victim: " {
					t.Errorf("evidence holds the empty line %q", e)
				}
			}
			for _, w := range tt.says {
				if !strings.Contains(all, w) {
					t.Errorf("action and evidence lack %q:\n%s", w, all)
				}
			}
			for _, n := range tt.never {
				if strings.Contains(all, n) {
					t.Errorf("action and evidence say %q:\n%s", n, all)
				}
			}
		})
	}
}

// TestAPlainTestsDecisionNamesTheTestAndItsFailure: a failing test of a
// surface that is none of its fault legs armed no fault, so the ladder's
// action opens with the test and its failure, and the contract's leg is
// named as the contract's, run apart from it; a leg's own failure still
// reads as the leg's.
func TestAPlainTestsDecisionNamesTheTestAndItsFailure(t *testing.T) {
	s := registry.Surface{ID: "adopter.stock", Owner: "stock-team", Behavior: "an order is applied once", Legs: []string{"reset", "burst"}}
	red := contract.Result{Contract: verdict.Red, Legs: []verdict.Leg{{Lever: "burst", Verdict: verdict.FailReproducible, Reason: "exactly-once violated", FailedRun: 7, Replay: "CONTESTED_SEED=7 go test", Injector: "toxic read back", Victim: "ECONNRESET"}}}
	green := contract.Result{Contract: verdict.Green, Legs: []verdict.Leg{leg("burst", verdict.PassSmoke)}}
	tests := []struct {
		name        string
		test        string
		res         contract.Result
		says, never []string
	}{
		{"a plain test beside a RED contract", "TestStockReport", red,
			[]string{"TestStockReport, a plain test of adopter.stock that arms no fault, failed: report_test.go:5: want 2 rows", "adopter.stock's contract, run in isolation apart from it, is RED: its leg burst",
				"the contract's leg burst, in isolation: exactly-once violated", "the contract's leg burst, injector: toxic read back"},
			[]string{"issue with the leg and the seed", "\ninjector: "}},
		{"a plain test beside a GREEN contract", "TestStockReport", green,
			[]string{"TestStockReport, a plain test of adopter.stock that arms no fault, failed: report_test.go:5: want 2 rows; fix the test"},
			[]string{"injector", "victim"}},
		{"a leg is still a leg", "TestStockContract/burst", red,
			[]string{"fix adopter.stock (an order is applied once): leg burst is FAIL-reproducible", "\ninjector: toxic read back"},
			[]string{"plain test"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &Outcome{Test: tt.test, Reason: "report_test.go:5: want 2 rows", Reruns: Reruns{Runs: 3, Failures: 3, Class: Consistent}}
			res := tt.res
			decide(o, s, &res, Options{})
			all := o.Action + "\n" + strings.Join(o.Evidence, "\n")
			for _, w := range tt.says {
				if !strings.Contains(all, w) {
					t.Errorf("decision lacks %q:\n%s", w, all)
				}
			}
			for _, n := range tt.never {
				if strings.Contains(all, n) {
					t.Errorf("decision says %q:\n%s", n, all)
				}
			}
		})
	}
}
