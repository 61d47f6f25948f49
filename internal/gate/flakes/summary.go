package flakes

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/contested/contested/internal/terminal"
)

// Summary is one test's trend over the last runs that ran it.
type Summary struct {
	Package string `json:"package"`
	Test    string `json:"test"`
	// Runs are the runs that ran the test, oldest first, at most the last
	// asked for.
	Runs   []Run `json:"runs"`
	Failed int   `json:"failed"`
	// FirstFailure is the oldest failing run among them.
	FirstFailure *Run `json:"first_failure,omitempty"`
	// Legs are the test's fault legs, each with its own count.
	Legs []Leg `json:"legs"`
	// FlakyAt are the revisions (Run.Where) at which the test both failed
	// and passed: within one run, or in two runs of the same commit with
	// the same uncommitted changes. Only those make it flaky: a failure at
	// one revision and a pass at another is the code changing.
	FlakyAt []string `json:"flaky_at,omitempty"`
}

// Run is one run of a test.
type Run struct {
	RunID  string `json:"run_id"`
	Commit string `json:"commit,omitempty"`
	// Dirty says the run's work tree had changes Commit does not hold;
	// Diff is their digest.
	Dirty  bool      `json:"dirty,omitempty"`
	Diff   string    `json:"diff,omitempty"`
	Time   time.Time `json:"time"`
	Failed bool      `json:"failed"`
	// Passed says the test itself passed in the run (a rerun after a
	// failure, or its only outcome).
	Passed bool `json:"passed,omitempty"`
}

// revision is the code a run ran, as the record keeps it; "" when the
// record does not say (no commit): such a run is the same code as no other.
func (r Run) revision() string {
	if r.Commit == "" {
		return ""
	}
	return fmt.Sprintf("%s\x00%v\x00%s", r.Commit, r.Dirty, r.Diff)
}

// Where says where a run ran from: "commit abc123", "commit abc123 with
// uncommitted changes (diff 9f2e…)", or "(unknown commit)".
func (r Run) Where() string {
	if r.Commit == "" {
		return "(unknown commit)"
	}
	s := "commit " + short(r.Commit)
	if r.Dirty {
		s += " with uncommitted changes"
		if r.Diff != "" {
			s += " (diff " + r.Diff + ")"
		}
	}
	return s
}

// Leg is one fault leg of a test over the runs: the subtest that ran it,
// counted on its own.
type Leg struct {
	Leg string `json:"leg"`
	// Test is the subtest that ran the leg (TestX/reset); two subtests of
	// one lever are two legs.
	Test   string `json:"test,omitempty"`
	Runs   int    `json:"runs"`
	Failed int    `json:"failed"`
	// Seeds are the seeds of its failing runs.
	Seeds []int64 `json:"failing_seeds"`
}

// name is how a summary of test names the leg: its lever, when its
// subtest is test's lever-named child (TestX/reset under TestX); else its
// subtest's path below test (store/reset), or its whole path.
func (l Leg) name(test string) string {
	rel := strings.TrimPrefix(l.Test, test+"/")
	if l.Test == "" || rel == l.Leg {
		return l.Leg
	}
	if rel == l.Test && l.Test == test {
		return l.Leg
	}
	return rel
}

// Rate is the share of runs that failed, 0 with no runs.
func (s Summary) Rate() float64 {
	if len(s.Runs) == 0 {
		return 0
	}
	return float64(s.Failed) / float64(len(s.Runs))
}

// Flaky says the test both passed and failed at the same code (FlakyAt);
// Consistent that it failed every run.
func (s Summary) Flaky() bool      { return len(s.FlakyAt) > 0 }
func (s Summary) Consistent() bool { return len(s.Runs) > 0 && s.Failed == len(s.Runs) }

// Summarize is the trend of test (TestX, TestX/sub, or either with its
// package, pkg.TestX) over its last runs (0: all), from outs in the order
// written. A run failed the test when the test or one of its own subtests
// failed in it: a subtest's history is its own, never its parent's nor a
// sibling's (a failure of TestX/reset is no failure of TestX/disconnect),
// and each leg below the test is counted on its own.
func Summarize(outs []Outcome, test string, last int) Summary {
	pkg, name := splitID(outs, test)
	s := Summary{Package: pkg, Test: name, Runs: []Run{}, Legs: []Leg{}}
	byRun := map[string]*Run{}
	var order []string
	type legRun struct {
		failed bool
		seeds  []int64
	}
	legs := map[string]map[string]*legRun{} // the leg's subtest → run → outcome
	legOf := map[string]string{}            // the leg's subtest → its lever
	for _, o := range outs {
		if !Within(o.Test, name) || (pkg != "" && o.Package != pkg) {
			continue
		}
		r := byRun[o.RunID]
		if r == nil {
			r = &Run{RunID: o.RunID, Commit: o.Commit, Dirty: o.Dirty, Diff: o.Diff, Time: o.Time}
			byRun[o.RunID] = r
			order = append(order, o.RunID)
		}
		r.Failed = r.Failed || o.Failed()
		r.Passed = r.Passed || o.Test == name && o.Verdict == "pass"
		if o.Leg != "" {
			if legs[o.Test] == nil {
				legs[o.Test] = map[string]*legRun{}
				legOf[o.Test] = o.Leg
			}
			lr := legs[o.Test][o.RunID]
			if lr == nil {
				lr = &legRun{}
				legs[o.Test][o.RunID] = lr
			}
			lr.failed = lr.failed || o.Failed()
			if o.Failed() && o.Seed != 0 && !slices.Contains(lr.seeds, o.Seed) {
				lr.seeds = append(lr.seeds, o.Seed)
			}
		}
	}
	if last > 0 && len(order) > last {
		order = order[len(order)-last:]
	}
	kept := map[string]bool{}
	for _, id := range order {
		r := *byRun[id]
		kept[id] = true
		s.Runs = append(s.Runs, r)
		if r.Failed {
			s.Failed++
			if s.FirstFailure == nil {
				first := r
				s.FirstFailure = &first
			}
		}
	}
	s.FlakyAt = flakyAt(s.Runs)
	for _, sub := range sortedKeys(legs) {
		l := Leg{Leg: legOf[sub], Test: sub, Seeds: []int64{}}
		for _, id := range order {
			lr, ok := legs[sub][id]
			if !ok {
				continue
			}
			l.Runs++
			if lr.failed {
				l.Failed++
				l.Seeds = append(l.Seeds, lr.seeds...)
			}
		}
		s.Legs = append(s.Legs, l)
	}
	return s
}

// flakyAt are the revisions, oldest first, at which runs both failed and
// passed the test: one run that did both, or runs of one recorded
// revision of which one failed and another did not.
func flakyAt(runs []Run) []string {
	type seen struct{ failed, passed bool }
	byRev := map[string]*seen{}
	var out []string
	add := func(r Run) {
		if w := r.Where(); !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	for _, r := range runs {
		if r.Failed && r.Passed {
			add(r)
			continue
		}
		rev := r.revision()
		if rev == "" {
			continue
		}
		v := byRev[rev]
		if v == nil {
			v = &seen{}
			byRev[rev] = v
		}
		v.failed = v.failed || r.Failed
		v.passed = v.passed || !r.Failed
		if v.failed && v.passed {
			add(r)
		}
	}
	return out
}

// Within reports whether test is name or one of its subtests.
func Within(test, name string) bool {
	return test == name || strings.HasPrefix(test, name+"/")
}

// splitID finds the package of a test id "pkg.TestX" among the outcomes'
// packages; a bare name has none (any package).
func splitID(outs []Outcome, id string) (pkg, name string) {
	for _, o := range outs {
		if p, n, ok := strings.Cut(id, o.Package+"."); ok && p == "" && o.Package != "" {
			return o.Package, n
		}
	}
	return "", id
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Write prints the summary for people: the rate, the first failing
// commit, each leg, and one mark per run, oldest first (. passed, F
// failed).
func (s Summary) Write(w io.Writer) {
	if len(s.Runs) == 0 {
		fmt.Fprintf(w, "history: %s: no run in the history\n", terminal.Escape(s.Test))
		return
	}
	fmt.Fprintf(w, "history: %s failed %d of the last %d runs (%.0f%%)", terminal.Escape(s.Test), s.Failed, len(s.Runs), 100*s.Rate())
	switch {
	case s.Flaky():
		fmt.Fprintf(w, ": flaky (failed and passed at %s)", terminal.Escape(strings.Join(s.FlakyAt, "; ")))
	case s.Consistent():
		fmt.Fprint(w, ": failed every run")
	case s.Failed > 0:
		fmt.Fprint(w, ": not flaky: it never both failed and passed at the same code, so the code changed between its failures and its passes")
	}
	fmt.Fprintln(w)
	if f := s.FirstFailure; f != nil {
		fmt.Fprintf(w, "  first failing run %s on %s (%s)\n", terminal.Escape(f.RunID), terminal.Escape(f.Where()), f.Time.UTC().Format(time.RFC3339))
	}
	for _, l := range s.Legs {
		fmt.Fprintf(w, "  leg %-17s failed %d of %d runs", terminal.Escape(l.name(s.Test)), l.Failed, l.Runs)
		if len(l.Seeds) > 0 {
			seeds := make([]string, len(l.Seeds))
			for i, x := range l.Seeds {
				seeds[i] = fmt.Sprint(x)
			}
			fmt.Fprintf(w, "; seeds that failed: %s", strings.Join(seeds, ", "))
		}
		fmt.Fprintln(w)
	}
	var marks strings.Builder
	for _, r := range s.Runs {
		if r.Failed {
			marks.WriteByte('F')
		} else {
			marks.WriteByte('.')
		}
	}
	fmt.Fprintf(w, "  trend (oldest first): %s\n", marks.String())
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

func orUnknown(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return s
}

// Failing is the trend of every test (package-qualified) that failed in
// any of its last runs, by test id, and how many tests the history holds:
// what history prints without a test and what the report draws.
func Failing(outs []Outcome, last int) (sums []Summary, tests int) {
	var ids []string
	for _, o := range outs {
		if top, _, _ := strings.Cut(o.Test, "/"); !slices.Contains(ids, o.Package+"."+top) {
			ids = append(ids, o.Package+"."+top)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		if s := Summarize(outs, id, last); s.Failed > 0 {
			sums = append(sums, s)
		}
	}
	return sums, len(ids)
}
