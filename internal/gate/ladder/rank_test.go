package ladder

import (
	"context"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/capacity"
	"github.com/contested/contested/internal/faultlayer/noise"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gate/verdict"
	"github.com/contested/contested/internal/registry"
	"github.com/contested/contested/internal/testlog"
)

// passingLeg is a module whose leg m.p/reset passes every run alone.
func passingLeg(t *testing.T) Options {
	t.Helper()
	return packageModule(t, map[string]string{"p/p_test.go": `package p

import "testing"

func TestPContract(t *testing.T) {
	t.Run("reset", func(t *testing.T) {})
}
`})
}

// TestAViolationIsTheComponentsWhateverTheLoad: a leg whose oracle named
// a violation in the battery (a job delivered twice) is the component's
// FAIL-nondeterministic when it passes alone, the verdict the surfaces
// table gives it, although the battery ran beside a noisy neighbour and
// the machine was saturated: load makes a test late, not wrong. No rerun
// beside a neighbour is spent on it, since none could change the answer.
func TestAViolationIsTheComponentsWhateverTheLoad(t *testing.T) {
	opts := passingLeg(t)
	opts.Noise = &noise.Evidence{Spec: noise.Spec{CPU: 2 * runtime.NumCPU()}, Seed: 7}
	opts.Capacity = &capacity.Report{Saturated: true, Contended: []string{"load: 5.0 per CPU"}}
	opts.Contracts = map[string]*contract.Result{"m.p": {Surface: "m.p", Contract: verdict.Green, Legs: []verdict.Leg{{Lever: "reset", Verdict: verdict.PassSmoke}}}}
	opts.Seen = &battery.Result{Tests: []battery.Test{{Package: "example.com/m/p", Name: "TestPContract/reset", Action: "fail",
		Failure: "p_test.go:9: oracle delivered-once: VIOLATED [2 anomalies]: job 7 delivered twice, 30 s apart"}}}
	o, err := Walk(context.Background(), "example.com/m/p.TestPContract/reset", opts)
	if err != nil {
		t.Fatal(err)
	}
	o.Write(testlog.Writer(t))
	if o.Owner != Component || o.Verdict != Finding(verdict.FailNondeterministic) {
		t.Fatalf("owner %s, verdict %q; want the component's FAIL-nondeterministic", o.Owner, o.Verdict)
	}
	if !strings.Contains(o.Violation, "delivered twice") {
		t.Errorf("violation %q does not name the oracle's", o.Violation)
	}
	if c := o.Capacity; c != nil && c.Beside != nil {
		t.Errorf("reran it %d times beside a neighbour: no such rerun can change who owns a violation", c.Beside.Ran)
	}
}

// TestDecideRanksTheFailuresOwnEvidenceAboveLoad: a test that failed every
// rerun alone is never capacity's, nor is one whose oracle named a
// violation; capacity owns a failure only when it disappeared on a quiet
// machine and its text is consistent with timing.
func TestDecideRanksTheFailuresOwnEvidenceAboveLoad(t *testing.T) {
	s := registry.Surface{ID: "adopter.stock", Owner: "stock-team"}
	green := contract.Result{Contract: verdict.Green, Legs: []verdict.Leg{leg("burst", verdict.PassSmoke)}}
	saturated := &capacity.Report{Saturated: true, Contended: []string{"load: 5.5 per CPU"}}
	tests := []struct {
		name      string
		reruns    Reruns
		reason    string
		violation string
		owner     Owner
		verdict   Finding
	}{
		{"consistent alone is the test author's", Reruns{Runs: 2, Failures: 2, Class: Consistent}, "report_test.go:12: got 3 rows, want 4", "", TestAuthor, "GREEN contract, consistent battery failure"},
		{"consistent alone with a timing text is still the test author's", Reruns{Runs: 2, Failures: 2, Class: Consistent}, "report took 4s, over its 2s bound", "", TestAuthor, "GREEN contract, consistent battery failure"},
		{"a violation that passes alone is not capacity", Reruns{Runs: 2, Class: Passes}, "took too long", "oracle x: VIOLATED", TestAuthor, "GREEN contract, flaky battery"},
		{"passing alone with a text of no time is not capacity", Reruns{Runs: 2, Class: Passes}, "the rig does not say it was kept", "", TestAuthor, "GREEN contract, flaky battery"},
		{"flaky on a quiet machine is not capacity", Reruns{Runs: 2, Failures: 1, Class: Flaky}, "timed out after 4s", "", TestAuthor, "GREEN contract, flaky battery"},
		{"passing alone with a timing text is capacity", Reruns{Runs: 2, Class: Passes}, "timed out after 4s", "", Capacity, "GREEN contract, saturated run"},
		{"failing alone only while busy, with a timing text, is capacity", Reruns{Runs: 2, Failures: 1, Busy: 1, Class: Flaky}, "deadline exceeded", "", Capacity, "GREEN contract, saturated run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &Outcome{Test: "TestStockReport", Reruns: tt.reruns, Reason: tt.reason, Violation: tt.violation}
			res := green
			decide(o, s, &res, Options{Capacity: saturated})
			if o.Owner != tt.owner || o.Verdict != tt.verdict {
				t.Fatalf("owner %s, verdict %q; want %s, %q (action %q)", o.Owner, o.Verdict, tt.owner, tt.verdict, o.Action)
			}
		})
	}
}

// TestAPlainTestIsCapacitysOnlyWhenItsTextIsOfTime: a test no surface
// lists that passes alone after failing in a saturated battery is
// capacity's only when its failure speaks of time; otherwise it fails only
// in the battery, and the action says the load does not explain it. One
// whose oracle named a violation is its author's, said as such.
func TestAPlainTestIsCapacitysOnlyWhenItsTextIsOfTime(t *testing.T) {
	saturated := &CapacityEvidence{Saturated: true, Contended: []string{"load: 5.5 per CPU"}}
	tests := []struct {
		name      string
		reason    string
		violation string
		verdict   Finding
		owner     Owner
		says      string
	}{
		{"timing text", "no reply within 2s", "", "saturated run", Capacity, "still fix it"},
		{"no timing text", "the rig does not say it was kept", "", "fails only in the battery", TestAuthor, "load does not explain it"},
		{"a violation", "oracle unique: VIOLATED", "oracle unique: VIOLATED", "oracle violation", TestAuthor, "a busy machine does not cause"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &Outcome{Test: "TestRig", Reruns: Reruns{Runs: 2, Class: Passes}, Reason: tt.reason, Violation: tt.violation, Capacity: saturated}
			decidePlain(o, "example.com/m/r", battery.Test{})
			if o.Owner != tt.owner || o.Verdict != tt.verdict || !strings.Contains(o.Action, tt.says) {
				t.Fatalf("owner %s, verdict %q, action %q; want %s, %q, saying %q", o.Owner, o.Verdict, o.Action, tt.owner, tt.verdict, tt.says)
			}
		})
	}
}

// TestInterferenceFromAnotherRunIsNamedAsSuch: a test that passes alone
// and failed while another run on this Docker host removed one of this
// run's containers is interference, the infrastructure's, never
// capacity's, even in a saturated run; interference outside the test's
// window is not its evidence.
func TestInterferenceFromAnotherRunIsNamedAsSuch(t *testing.T) {
	started := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	removal := Interference{At: started.Add(2 * time.Second), What: "container contested-rig-ab12 of this run was removed by run 20261202-0958 (sweep) while its owner was alive"}
	tests := []struct {
		name  string
		at    time.Time
		owner Owner
	}{
		{"during the test", removal.At, Infrastructure},
		{"long before the test", started.Add(-time.Minute), TestAuthor},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := packageModule(t, map[string]string{"r/r_test.go": "package r\n\nimport \"testing\"\n\nfunc TestRigKept(t *testing.T) {}\n"})
			opts.Reruns = 1
			e := removal
			e.At = tt.at
			opts.Interference = []Interference{e}
			opts.Capacity = &capacity.Report{Saturated: true, Contended: []string{"load: 5.5 per CPU"}}
			opts.Seen = &battery.Result{Tests: []battery.Test{{Package: "example.com/m/r", Name: "TestRigKept", Action: "fail", Started: started, Elapsed: 5 * time.Second,
				Failure: "r_test.go:5: the rig was not up within 2s"}}}
			o, err := Walk(context.Background(), "example.com/m/r.TestRigKept", opts)
			if err != nil {
				t.Fatal(err)
			}
			if o.Owner != tt.owner {
				t.Fatalf("owner %s, verdict %q, action %q; want %s", o.Owner, o.Verdict, o.Action, tt.owner)
			}
			if tt.owner == Infrastructure && (!strings.HasPrefix(o.Action, "interference: another run on this Docker host") || !strings.Contains(o.Action, "contested-rig-ab12")) {
				t.Errorf("action %q does not name the interference", o.Action)
			}
		})
	}
}

// TestAPassInTheLastValidateIsAnsweredFromIt: a test the last validate
// run on this code saw pass is NO FAILURE from that evidence alone (no
// rerun, no layer), and the answer says how to rerun it; one it saw fail,
// a parent whose subtest failed, or one it never ran must be walked.
func TestAPassInTheLastValidateIsAnsweredFromIt(t *testing.T) {
	seen := &battery.Result{Tests: []battery.Test{
		{Package: "example.com/m/p", Name: "TestPContract/reset", Action: "pass", Elapsed: 2 * time.Second},
		{Package: "example.com/m/p", Name: "TestPContract/burst", Action: "fail"},
		{Package: "example.com/m/p", Name: "TestPContract", Action: "fail"},
	}}
	tests := []struct {
		id       string
		answered bool
	}{
		{"TestPContract/reset", true},
		{"example.com/m/p.TestPContract/reset", true},
		{"TestPContract/burst", false},
		{"TestPContract", false},
		{"TestOther", false},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			o, ok := FromSeen(tt.id, Options{Seen: seen, SeenRunID: "r7"})
			if ok != tt.answered {
				t.Fatalf("answered %v, want %v", ok, tt.answered)
			}
			if ok && (!o.NoFailure() || !strings.Contains(o.Action, "run r7") || !strings.Contains(o.Action, "-rerun")) {
				t.Errorf("verdict %s, action %q; want NO FAILURE naming the run and -rerun", o.Verdict, o.Action)
			}
		})
	}
	if _, ok := FromSeen("TestPContract/reset", Options{}); ok {
		t.Error("answered without a battery")
	}
}

// busyQueue is a run queue that stays at n.
type busyQueue float64

func (q busyQueue) Avg() (float64, bool) { return float64(q), true }

// TestTheWaitForAQuietMachineIsBoundedOverTheRun: a machine that does not
// quieten is waited for once, for no longer than the patience the queue
// is given to fall, and not again in the same run: a RED run with two
// failing legs does not wait thirty seconds twice for each.
func TestTheWaitForAQuietMachineIsBoundedOverTheRun(t *testing.T) {
	defer func(p time.Duration) { quietPatience = p }(quietPatience)
	quietPatience = 300 * time.Millisecond
	busy := busyQueue(10 * float64(runtime.NumCPU()))
	quiet := NewQuiet()
	var out strings.Builder
	start := time.Now()
	waitQuiet(context.Background(), busy, quiet, "TestA/reset", &out)
	first := time.Since(start)
	if first > 5*time.Second || first < quietPatience {
		t.Errorf("the first wait took %s; want about the patience, %s", first, quietPatience)
	}
	if !strings.Contains(out.String(), "did not quieten") {
		t.Errorf("the wait does not say it gave up:\n%s", out.String())
	}
	start = time.Now()
	for range 3 {
		waitQuiet(context.Background(), busy, quiet, "TestB/isolate", io.Discard)
	}
	if again := time.Since(start); again > time.Second {
		t.Errorf("three more waits in the same run took %s: a machine that did not quieten was waited for again", again)
	}
	start = time.Now()
	waitQuiet(context.Background(), busyQueue(0), NewQuiet(), "TestC", io.Discard)
	if d := time.Since(start); d > time.Second {
		t.Errorf("a quiet machine was waited for, %s", d)
	}
}
