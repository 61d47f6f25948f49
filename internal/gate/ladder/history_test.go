package ladder

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/contested/contested/internal/gate/flakes"
)

// history is n runs of m.TestC, the runs in failing failing.
func history(n int, failing ...int) []flakes.Outcome {
	var out []flakes.Outcome
	for i := range n {
		v := "pass"
		for _, f := range failing {
			if f == i {
				v = "fail"
			}
		}
		out = append(out, flakes.Outcome{Schema: flakes.Schema, RunID: fmt.Sprintf("run-%d", i), Commit: fmt.Sprintf("c%d", i), Package: "m", Test: "TestC", Verdict: v})
	}
	return out
}

// TestTheHistoryIsContextNeverAVote: what the flake history holds of a
// test is read into the outcome (runs, failures, the first and last
// failing commits), and nothing of it changes the class of this run's
// reruns.
func TestTheHistoryIsContextNeverAVote(t *testing.T) {
	for _, tc := range []struct {
		name    string
		history []flakes.Outcome
		want    *History
	}{
		{"no history", nil, nil},
		{"a history that passed", history(20, 4, 9, 17), &History{Runs: 20, Failures: 3, FirstFailingRun: "run-4", FirstFailingCommit: "c4", LastFailingCommit: "c17"}},
		{"only the last 20 runs", history(30, 0, 1, 2), &History{Runs: 20}},
		{"another package's test", func() []flakes.Outcome {
			h := history(5, 1)
			for i := range h {
				h[i].Package = "other"
			}
			return h
		}(), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fromHistory(tc.history, "m", "TestC", "", false)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("history (-want +got):\n%s", diff)
			}
		})
	}
	dirty := history(3, 1)
	dirty[1].Dirty, dirty[1].Diff = true, "9f2e41c0ab12"
	h := fromHistory(dirty, "m", "TestC", "", false)
	if !h.Dirty || !strings.Contains(h.Say(), "commit c1 with uncommitted changes (diff 9f2e41c0ab12)") {
		t.Errorf("a failing run from a dirty tree reads %q", h.Say())
	}
}

// TestSayNamesTheFirstFailingRun: the history names its first failing run
// with its commit, without one when the run has none, and no run when it
// holds no failure.
func TestSayNamesTheFirstFailingRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    History
		want string
	}{
		{"with its commit", History{Runs: 5, Failures: 1, FirstFailingRun: "run-2", FirstFailingCommit: "c2"}, "failed in 1 of its last 5 runs (first failing run run-2, commit c2)"},
		{"without a commit", History{Runs: 5, Failures: 1, FirstFailingRun: "run-2"}, "failed in 1 of its last 5 runs (first failing run run-2)"},
		{"no failure", History{Runs: 5}, "failed in 0 of its last 5 runs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.h.Say(); got != tc.want {
				t.Errorf("Say() = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestTheHistoryCountsTheRunBeingArbitrated: the run whose failure is
// arbitrated is one of the test's runs, and the history says so, whether
// the history read holds it yet (validate reads it before appending) or
// already does (arbitrate after validate): never "failed in 0 of its last
// 2 runs" for a failing run.
func TestTheHistoryCountsTheRunBeingArbitrated(t *testing.T) {
	appended := history(3, 2)
	appended[2].RunID = "now"
	for _, tc := range []struct {
		name    string
		history []flakes.Outcome
		failed  bool
		want    string
	}{
		{"not yet in the history", history(2), true, "failed in 1 of its last 3 runs, this one included"},
		{"already in the history", appended, true, "failed in 1 of its last 3 runs, this one included"},
		{"no history before it", nil, true, "failed in 1 of its last 1 runs, this one included"},
		{"a passing run", history(2, 0), false, "failed in 1 of its last 3 runs, this one included"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := fromHistory(tc.history, "m", "TestC", "now", tc.failed)
			if h == nil || !strings.HasPrefix(h.Say(), tc.want) {
				t.Fatalf("history %+v says %q; want %q", h, h.Say(), tc.want)
			}
		})
	}
}

// TestALegsHistoryIsItsOwn: the ladder walking TestX/disconnect reads the
// runs in which that leg failed, never those in which only its sibling
// crash-and-resume (or the parent alone) failed, and names its own first
// failing run.
func TestALegsHistoryIsItsOwn(t *testing.T) {
	var outs []flakes.Outcome
	add := func(run int, test, leg, verdict string) {
		outs = append(outs, flakes.Outcome{Schema: flakes.Schema, RunID: fmt.Sprintf("run-%d", run), Commit: fmt.Sprintf("c%d", run), Package: "m", Test: test, Leg: leg, Verdict: verdict})
	}
	for i := range 6 {
		crash, disc, parent := "pass", "pass", "pass"
		if i == 1 || i == 2 {
			crash, parent = "fail", "fail"
		}
		if i == 4 {
			disc, parent = "fail", "fail"
		}
		add(i, "TestX", "", parent)
		add(i, "TestX/crash-and-resume", "crash-and-resume", crash)
		add(i, "TestX/disconnect", "disconnect", disc)
	}
	h := fromHistory(outs, "m", "TestX/disconnect", "", false)
	if h == nil || h.Runs != 6 || h.Failures != 1 || h.FirstFailingRun != "run-4" {
		t.Fatalf("the disconnect leg's history %+v (%s); want 1 failure of 6, first run-4", h, h.Say())
	}
	h = fromHistory(outs, "m", "TestX/crash-and-resume", "", false)
	if h == nil || h.Failures != 2 || h.FirstFailingRun != "run-1" {
		t.Errorf("the crash-and-resume leg's history %+v; want 2 failures, first run-1", h)
	}
}
