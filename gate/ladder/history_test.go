package ladder

import (
	"fmt"
	"strings"
	"testing"

	"github.com/contested/contested/gate/flakes"
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

func TestRerunsWeighTheHistory(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reruns  Reruns
		history []flakes.Outcome
		class   string
		says    string
	}{
		{"no history: the reruns alone", Reruns{Runs: 3, Failures: 3, Class: "consistent"}, nil, "consistent", "failed 3 of 3 reruns (consistent)"},
		{"failing reruns, a history that passed", Reruns{Runs: 3, Failures: 3, Class: "consistent"}, history(20, 4, 9, 17), "flaky", "3 of its last 20 runs in the flake history (first failing run run-4, commit c4)"},
		{"passing reruns, a history that failed", Reruns{Runs: 3, Class: "passes"}, history(5, 2), "flaky", "1 of its last 5 runs"},
		{"failing reruns, a history that always failed", Reruns{Runs: 3, Failures: 3, Class: "consistent"}, history(4, 0, 1, 2, 3), "consistent", "4 of its last 4 runs"},
		{"only the last 20 runs", Reruns{Runs: 3, Class: "passes"}, history(30, 0, 1, 2), "passes", "0 of its last 20 runs"},
		{"a package that does not run", Reruns{Runs: 3, Failures: 3, NotRun: 3, Class: PackageFails}, history(5, 1), PackageFails, "(package fails)"},
		{"a test that never runs", Reruns{Runs: 3, Absent: 3, Class: NeverRuns}, history(5, 1), NeverRuns, "ran in none of 3 reruns, which its package passed (never runs)"},
		{"another package's test", Reruns{Runs: 3, Failures: 3, Class: "consistent"}, func() []flakes.Outcome {
			h := history(5, 1)
			for i := range h {
				h[i].Package = "other"
			}
			return h
		}(), "consistent", "failed 3 of 3 reruns (consistent)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := withHistory(tc.reruns, tc.history, "m", "TestC")
			if r.Class != tc.class || !strings.Contains(r.Say(), tc.says) {
				t.Fatalf("class %q, %q; want %q saying %q", r.Class, r.Say(), tc.class, tc.says)
			}
		})
	}
}

// TestSayNamesTheFirstFailingRun: the flake evidence names the history's
// first failing run with its commit, without one when the run has none,
// and no run when the history holds no failure.
func TestSayNamesTheFirstFailingRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    History
		want string
	}{
		{"with its commit", History{Runs: 5, Failed: 1, FirstFailingRun: "run-2", FirstFailingCommit: "c2"}, "1 of its last 5 runs in the flake history (first failing run run-2, commit c2) (flaky)"},
		{"without a commit", History{Runs: 5, Failed: 1, FirstFailingRun: "run-2"}, "1 of its last 5 runs in the flake history (first failing run run-2) (flaky)"},
		{"no failure", History{Runs: 5}, "0 of its last 5 runs in the flake history (flaky)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.h
			r := Reruns{Runs: 3, Failures: 1, Class: "flaky", History: &h}
			if got := r.Say(); got != "the test failed 1 of 3 reruns and "+tc.want {
				t.Errorf("Say() = %q, want %q", got, "the test failed 1 of 3 reruns and "+tc.want)
			}
		})
	}
}
