package ladder

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/faultlayer/noise"
	"github.com/contested/contested/internal/gate/verdict"
	"github.com/contested/contested/internal/legstart"
	"github.com/contested/contested/internal/testlog"
	"github.com/contested/contested/internal/testmodule"
	"github.com/contested/contested/internal/tier"
)

// legModule is a module whose surface m.p has the legs reset and burst in
// TestPContract: reset fails when it runs with seed 42 (and only then),
// burst fails on every other run (a counter file says which), and each leg
// leaves a mark when it runs, so a test can see which legs a rerun ran.
func legModule(t *testing.T) (Options, string) {
	t.Helper()
	tier.Full(t, "go test of a planted module, rerun alone")
	marks := t.TempDir()
	opts := packageModule(t, map[string]string{"p/p_test.go": `package p

import (
	"os"
	"path/filepath"
	"testing"
)

func mark(name string) int {
	dir := os.Getenv("LADDER_MARKS")
	f, _ := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	f.WriteString("x")
	f.Close()
	b, _ := os.ReadFile(filepath.Join(dir, name))
	return len(b)
}

func TestPContract(t *testing.T) {
	t.Run("reset", func(t *testing.T) {
		mark("reset")
		t.Logf("reset: 15 tenures, 15 acquires, 15 loss checks")
		if os.Getenv("CONTESTED_SEED") == "42" {
			t.Fatalf("oracle lock-liveness: VIOLATED: could not acquire the lock within 4s")
		}
	})
	t.Run("burst", func(t *testing.T) {
		if mark("burst")%2 == 1 {
			t.Errorf("oracle exactly-once: VIOLATED")
		}
	})
}
`})
	opts.Registry.Surfaces[0].Legs = []string{"reset", "burst"}
	opts.Env = opts.Env.Attach([]string{"LADDER_MARKS=" + marks}, "")
	return opts, marks
}

func runsOf(t *testing.T, marks, leg string) int {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(marks, leg))
	return len(b)
}

// TestAFailingLegIsRerunAloneWithTheSeedItStartedWith: a leg that failed
// is rerun by itself (its sibling never runs) with the seed its start
// record carries, and failing every rerun is the component's
// FAIL-reproducible, with that seed in the action and the replay, and the
// failure it reported as the reason, never its log line.
func TestAFailingLegIsRerunAloneWithTheSeedItStartedWith(t *testing.T) {
	opts, marks := legModule(t)
	const replay = "CONTESTED_SEED=42 go test ./p -run '^TestPContract$/^reset$' -count=1"
	opts.Starts = []legstart.Start{{Test: "TestPContract/reset", Package: "example.com/m/p", Leg: "reset", Seed: 42, Replay: replay}}
	opts.Seen = &battery.Result{Tests: []battery.Test{{Package: "example.com/m/p", Name: "TestPContract/reset", Action: "fail",
		Failure: "p_test.go:24: oracle lock-liveness: VIOLATED: could not acquire the lock within 4s", Output: "    p_test.go:22: reset: 15 tenures, 15 acquires, 15 loss checks\n    p_test.go:24: oracle lock-liveness: VIOLATED: could not acquire the lock within 4s\n"}}}
	o, err := Walk(context.Background(), "example.com/m/p.TestPContract/reset", opts)
	if err != nil {
		t.Fatal(err)
	}
	o.Write(testlog.Writer(t))
	if o.Owner != Component || o.OwnerName != "p-team" || o.Verdict != Finding(verdict.FailReproducible) || o.Reruns.Class != Consistent || o.Reruns.Seed != 42 {
		t.Fatalf("owner %s (%s), verdict %s, reruns %+v; want the component's FAIL-reproducible, consistent with seed 42", o.Owner, o.OwnerName, o.Verdict, o.Reruns)
	}
	for _, want := range []string{"leg reset", "seed 42", replay, "could not acquire the lock within 4s"} {
		if !strings.Contains(o.Action, want) {
			t.Errorf("action %q lacks %q", o.Action, want)
		}
	}
	if strings.Contains(o.Action, "tenures") || strings.Contains(o.Reason, "tenures") {
		t.Errorf("a log line is given as the reason: %q / %q", o.Reason, o.Action)
	}
	if o.Replay != replay || o.Seed != 42 {
		t.Errorf("replay %q seed %d; want the start record's", o.Replay, o.Seed)
	}
	if n := runsOf(t, marks, "burst"); n != 0 {
		t.Errorf("the sibling leg burst ran %d times in reset's reruns", n)
	}
	if n := runsOf(t, marks, "reset"); n != opts.Reruns {
		t.Errorf("reset ran %d times, want its %d reruns", n, opts.Reruns)
	}
}

// TestAFlakyLegIsNondeterministicAndItsActionNamesIt: a leg that fails
// some reruns and passes others is FAIL-nondeterministic, the component's,
// and the action names that leg, not the surface's first.
func TestAFlakyLegIsNondeterministicAndItsActionNamesIt(t *testing.T) {
	opts, marks := legModule(t)
	opts.Reruns = 3
	// burst's first rerun is its second run, which passes: a first rerun
	// that failed the same way would confirm it at once (below).
	if err := os.WriteFile(filepath.Join(marks, "burst"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts.Seen = &battery.Result{Tests: []battery.Test{{Package: "example.com/m/p", Name: "TestPContract/burst", Action: "fail", Failure: "p_test.go:30: oracle exactly-once: VIOLATED"}}}
	o, err := Walk(context.Background(), "example.com/m/p.TestPContract/burst", opts)
	if err != nil {
		t.Fatal(err)
	}
	if o.Owner != Component || o.Verdict != Finding(verdict.FailNondeterministic) || o.Reruns.Class != Flaky {
		t.Fatalf("owner %s, verdict %s, reruns %+v; want the component's FAIL-nondeterministic, flaky", o.Owner, o.Verdict, o.Reruns)
	}
	if !strings.Contains(o.Action, "leg burst") || strings.Contains(o.Action, "leg reset") {
		t.Errorf("action %q does not name leg burst alone", o.Action)
	}
	// A failure while other work saturated the machine does not count
	// towards the stop: each such failure may cost one more rerun.
	if n := runsOf(t, marks, "burst") - 1; n != o.Reruns.Runs || n != 2+o.Reruns.Busy {
		t.Errorf("burst ran %d times for %d reruns (%d failures busy): a rerun that both failed and passed (flaky) stops at two", n, o.Reruns.Runs, o.Reruns.Busy)
	}
}

// TestAFirstRerunThatFailsTheSameWayConfirmsIt: a leg whose oracle named a
// violation, rerun with its seed, that fails the same way at once is the
// component's FAIL-reproducible after one rerun; no second is spent.
func TestAFirstRerunThatFailsTheSameWayConfirmsIt(t *testing.T) {
	opts, marks := legModule(t)
	opts.Seen = &battery.Result{Tests: []battery.Test{{Package: "example.com/m/p", Name: "TestPContract/burst", Action: "fail", Failure: "p_test.go:30: oracle exactly-once: VIOLATED"}}}
	o, err := Walk(context.Background(), "example.com/m/p.TestPContract/burst", opts)
	if err != nil {
		t.Fatal(err)
	}
	if o.Owner != Component || o.Verdict != Finding(verdict.FailReproducible) || o.Reruns.Class != Consistent || !o.Reruns.SameWay {
		t.Fatalf("owner %s, verdict %s, reruns %+v; want the component's FAIL-reproducible, confirmed the same way", o.Owner, o.Verdict, o.Reruns)
	}
	if n := runsOf(t, marks, "burst"); n != 1 {
		t.Errorf("burst ran %d times, want one rerun", n)
	}
}

// TestATestThatFailsOnlyBesideANeighbourIsCapacityFragile: a test that
// failed in a battery run beside a noisy neighbour, passes alone and fails
// when rerun beside one is capacity-fragile: its author's, with the
// evidence of both sides. The planted test needs a quiet machine: it fails
// when the kernel's run queue holds seven threads per core or more, which
// a neighbour of eight busy threads per core always makes and a machine
// running this battery does not.
func TestATestThatFailsOnlyBesideANeighbourIsCapacityFragile(t *testing.T) {
	opts := packageModule(t, map[string]string{"q/q_test.go": testmodule.QuietTest("q", "TestQuiet", 30)})
	opts.Noise = &noise.Evidence{Spec: noise.Spec{CPU: 8 * runtime.NumCPU()}, Seed: 7}
	opts.Seen = &battery.Result{Tests: []battery.Test{{Package: "example.com/m/q", Name: "TestQuiet", Action: "fail", Failure: "q_test.go:26: 19 threads wait for 2 cores: this test needs a quiet machine"}}}
	o, err := Walk(context.Background(), "example.com/m/q.TestQuiet", opts)
	if err != nil {
		t.Fatal(err)
	}
	o.Write(testlog.Writer(t))
	if o.Reruns.allBusy() {
		// Other work saturated the machine for every rerun alone, and the
		// ladder waits for a quiet machine once per run, not per rerun: a
		// failure every time is consistent, with the caveat.
		if o.Verdict != "consistent failure" || !strings.Contains(o.Action, "every rerun ran while other work saturated the machine") {
			t.Errorf("every rerun alone busy: verdict %q, action %q; want a consistent failure that says so", o.Verdict, o.Action)
		}
		return
	}
	if o.Owner != TestAuthor || o.Verdict != CapacityFragile || (o.Reruns.Class != Passes && !o.Reruns.failsOnlyWhenBusy()) || o.Capacity == nil || !o.Capacity.Fragile {
		t.Fatalf("owner %s, verdict %q, reruns %+v, capacity %+v; want the test author's, capacity-fragile, passing alone (failing only while other work held the machine)", o.Owner, o.Verdict, o.Reruns, o.Capacity)
	}
	for _, want := range []string{"beside a noisy neighbour", "CONTESTED_NOISE=cpu:", "derive its bounds from what it measures"} {
		if !strings.Contains(o.Action, want) {
			t.Errorf("action %q lacks %q", o.Action, want)
		}
	}
	if c := o.Capacity; c.Beside == nil || c.Beside.Failed == 0 || !strings.Contains(c.BesideEvidence, "duty cycle") || !strings.Contains(c.BesideEvidence, "less of the CPU") {
		t.Errorf("capacity evidence %+v; want a failing rerun beside the neighbour, with the neighbour's evidence from both sides", c)
	}
}

// TestATestThatPassesNowIsNoFailureWhateverItsHistory: a test that passes
// its reruns and did not fail in the battery it is arbitrated against has
// nothing to arbitrate, however often its history says it failed; the
// history is given as context.
func TestATestThatPassesNowIsNoFailureWhateverItsHistory(t *testing.T) {
	opts := packageModule(t, map[string]string{"r/r_test.go": "package r\n\nimport \"testing\"\n\nfunc TestFixed(t *testing.T) {}\n"})
	h := history(20, 4, 9, 17)
	for i := range h {
		h[i].Package, h[i].Test = "example.com/m/r", "TestFixed"
	}
	opts.History = h
	opts.Seen = &battery.Result{Tests: []battery.Test{{Package: "example.com/m/r", Name: "TestFixed", Action: "pass"}}}
	o, err := Walk(context.Background(), "example.com/m/r.TestFixed", opts)
	if err != nil {
		t.Fatal(err)
	}
	if !o.NoFailure() || o.Owner != "" {
		t.Fatalf("verdict %s, owner %q; want NO FAILURE and no owner", o.Verdict, o.Owner)
	}
	for _, want := range []string{"failed in 3 of its last 20 runs", "the last on commit c17"} {
		if !strings.Contains(o.Action, want) {
			t.Errorf("action %q lacks the history's context %q", o.Action, want)
		}
	}
}

// TestAFailureAloneWhileOtherWorkHeldTheMachineIsNoFlake: a test rerun
// alone on a machine that other work saturates (a shared runner's other
// jobs: here sixteen busy processes started while its first rerun runs)
// is not flaky on its own for failing that rerun: the ladder counts the
// failure as busy, reruns it once the machine is quiet, and, failing
// beside a neighbour, calls it capacity-fragile, saying which rerun the
// other work spoiled.
func TestAFailureAloneWhileOtherWorkHeldTheMachineIsNoFlake(t *testing.T) {
	signal := t.TempDir()
	opts := packageModule(t, map[string]string{"q/q_test.go": testmodule.QuietTest("q", "TestQuietAlone", 30)})
	opts.Env = opts.Env.Attach([]string{"QUIET_SIGNAL=" + signal}, "")
	opts.Reruns = 2
	opts.Noise = &noise.Evidence{Spec: noise.Spec{CPU: 8 * runtime.NumCPU()}, Seed: 7}
	opts.Seen = &battery.Result{Tests: []battery.Test{{Package: "example.com/m/q", Name: "TestQuietAlone", Action: "fail", Failure: "q_test.go:40: 19 threads wait for 2 cores: this test needs a quiet machine"}}}

	// The other work: busy processes from the first rerun's start to its
	// end, bounded by a minute whatever happens.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() {
		if !appears(ctx, filepath.Join(signal, "started")) {
			return
		}
		var hogs []*exec.Cmd
		for range 8 * runtime.NumCPU() {
			c := exec.CommandContext(ctx, "sh", "-c", "while :; do :; done")
			if c.Start() == nil {
				hogs = append(hogs, c)
			}
		}
		appears(ctx, filepath.Join(signal, "done"))
		for _, c := range hogs {
			c.Process.Kill()
			c.Wait()
		}
	}()
	o, err := Walk(context.Background(), "example.com/m/q.TestQuietAlone", opts)
	if err != nil {
		t.Fatal(err)
	}
	o.Write(testlog.Writer(t))
	if o.Reruns.Busy == 0 || o.Reruns.Busy != o.Reruns.Failures || o.Reruns.BusyRunQueue < busyPerCore {
		t.Fatalf("reruns %+v; want the spoiled rerun's failure counted busy, and no other failure", o.Reruns)
	}
	if o.Reruns.Busy == 2 {
		// Other work (a loaded battery's other packages) saturated the
		// machine for the second rerun too: a failure every time is
		// consistent, the likelier reading, with the caveat.
		if o.Verdict != "consistent failure" || !strings.Contains(o.Action, "every rerun ran while other work saturated the machine") {
			t.Errorf("both reruns busy: verdict %q, action %q; want a consistent failure that says every rerun was busy", o.Verdict, o.Action)
		}
		return
	}
	if o.Reruns.Runs != 2 || o.Reruns.Failures != 1 {
		t.Errorf("reruns %+v; want 1 of 2 failed, that one while the machine was busy", o.Reruns)
	}
	if o.Owner != TestAuthor || o.Verdict != CapacityFragile || o.Capacity == nil || !o.Capacity.Fragile {
		t.Fatalf("owner %s, verdict %q, capacity %+v; want the test author's, capacity-fragile", o.Owner, o.Verdict, o.Capacity)
	}
	for _, want := range []string{"passed 1 of 2 reruns alone (the 1 it failed ran while other work held the machine", "beside a noisy neighbour"} {
		if !strings.Contains(o.Action, want) {
			t.Errorf("action %q lacks %q", o.Action, want)
		}
	}
}

// TestEveryRerunBusyIsConsistentWithTheCaveat: a test whose every rerun
// alone failed while other work saturated the machine is a consistent
// failure (a deterministic failure is by far the likelier, and a shared
// runner is often that busy), and the action says what the machine was;
// one with a quiet failure among them says nothing of it.
func TestEveryRerunBusyIsConsistentWithTheCaveat(t *testing.T) {
	tests := []struct {
		name   string
		busy   int
		caveat bool
	}{
		{"every rerun busy", 2, true},
		{"one quiet failure", 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &Outcome{Test: "TestQuiet", Reruns: Reruns{Runs: 2, Failures: 2, Busy: tt.busy, BusyRunQueue: 7.5, Class: Consistent, Reason: "q_test.go:41: 15 threads waited"}}
			decidePlain(o, "example.com/m/q", battery.Test{})
			if o.Owner != TestAuthor || o.Verdict != "consistent failure" {
				t.Fatalf("owner %s, verdict %q; want the test author's consistent failure", o.Owner, o.Verdict)
			}
			if got := strings.Contains(o.Action, "every rerun ran while other work saturated the machine, run queue up to 7.5 per core"); got != tt.caveat {
				t.Errorf("action %q: says the machine was saturated: %v, want %v", o.Action, got, tt.caveat)
			}
		})
	}
}

// appears waits for path to exist, and reports whether it did before ctx
// ended.
func appears(ctx context.Context, path string) bool {
	for ctx.Err() == nil {
		if _, err := os.Stat(path); err == nil {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}
