package ladder

import (
	"regexp"
	"strings"
	"testing"

	"github.com/contested/contested/internal/gate/verdict"
)

// TestTheSummaryAndTheIssueSayWhereTheLadderEnded: Write and Issue say
// each step the ladder reached and none it did not, the owner (with the
// team, or none), the failing legs with their seeds, and the evidence and
// leg sections only when there is something to put in them.
func TestTheSummaryAndTheIssueSayWhereTheLadderEnded(t *testing.T) {
	stock := &Surface{ID: "adopter.stock", Class: "store", Owner: "stock-team", Behavior: "applied once", Oracle: "exactly-once", Where: "reg.toml:13"}
	failing := verdict.Leg{Lever: "burst", Verdict: verdict.FailReproducible, Reason: "exactly-once violated", FailedRun: 7, Replay: "CONTESTED_SEED=7 go test -run burst"}
	passing := verdict.Leg{Lever: "reset", Verdict: verdict.PassSmoke, Reason: "a | b"}
	tests := []struct {
		name            string
		o               Outcome
		write, notWrite []string
		issue, notIssue []string
	}{
		{"a test no surface lists", Outcome{Test: "TestX", Step: 1},
			[]string{"ladder for TestX\n", "step 1  no surface in the registry lists this test", "owner   none\n"},
			[]string{"step 2", "step 3"},
			[]string{"fix: TestX: the test is not in the registry\n", "| owner | none |", "| failing test | `TestX` |", "| ladder | step 1: "},
			[]string{"| surface |", "the test alone", "**Evidence**", "**Leg verdicts"}},
		{"a fault layer that failed preflight", Outcome{Test: "TestStockContract/reset", Package: "example.com/adopter", Surface: stock, Step: 2,
			Owner: FaultLayer, Verdict: Finding(verdict.CannotRun), Contract: verdict.CannotRun, Action: "repair the fault layer"},
			[]string{"ladder for example.com/adopter TestStockContract/reset\n", "step 1  surface adopter.stock (reg.toml:13), applied once; oracle exactly-once; owner stock-team",
				"step 2  fault-layer preflight FAILED", "owner   fault layer\n"},
			[]string{"step 3", "passed", "none"},
			[]string{"fix: adopter.stock: the fault layer cannot run\n", "| owner | fault layer |", "| failing test | `example.com/adopter TestStockContract/reset` |",
				"| surface | `adopter.stock` (reg.toml:13), class `store` |", "| behaviour | applied once |", "| oracle | exactly-once |", "| ladder | step 2: CANNOT RUN |", "**Action:** repair the fault layer"},
			[]string{"the test alone", "**Evidence**", "**Leg verdicts"}},
		{"a component's failing leg", Outcome{Test: "TestStockContract/burst", Surface: stock, Step: 3, Owner: Component, OwnerName: "stock-team",
			Contract: verdict.Red, Legs: []verdict.Leg{passing, failing}, Reruns: Reruns{Runs: 3, Failures: 3, Class: "consistent"},
			Verdict: Finding(verdict.FailReproducible), Evidence: []string{"leg burst: exactly-once violated"}},
			[]string{"ladder for TestStockContract/burst\n", "step 2  fault-layer preflight passed", "step 3  the test alone: 3 of 3 reruns failed (consistent); the contract in isolation: RED",
				"burst             FAIL-reproducible  exactly-once violated", "owner   component (stock-team)\n", "          leg burst: exactly-once violated\n"},
			[]string{"FAILED", "none"},
			[]string{"fix: adopter.stock: burst leg is FAIL-reproducible \\(seed 7\\)\n", "| owner | component \\(stock-team\\) |", "| the test alone | failed 3 of 3 reruns (consistent) |",
				"| leg | `burst`: FAIL-reproducible |\n| seed | `7` |\n", "\n**Replay (burst):** `CONTESTED_SEED=7 go test -run burst`\n", "**Evidence**\n\n- leg burst: exactly-once violated\n",
				"**Leg verdicts", "| reset | PASS-smoke | a \\| b |"},
			[]string{"`reset`:", "| replay |"}},
		{"a failing leg whose seed is unknown, with a replay a table cell would mangle", Outcome{Test: "TestStockContract/burst", Surface: stock, Step: 3, Owner: Component,
			Contract: verdict.Red, Legs: []verdict.Leg{{Lever: "burst", Verdict: verdict.FailNondeterministic, Reason: "boom", Replay: "go test ./x -run '^A|B$' | tee `out`_*<$(x)>"}},
			Verdict: Finding(verdict.FailNondeterministic)},
			nil, nil,
			[]string{"fix: adopter.stock: burst leg is FAIL-nondeterministic \\(seed unknown\\)\n", "| seed | unknown: ",
				"\n**Replay (burst):** ``go test ./x -run '^A|B$' | tee `out`_*<$(x)>``\n"},
			[]string{"seed 0", "`0`", "CONTESTED_SEED=0", "| replay |", `\|B`}},
		{"a RED contract without a failing leg", Outcome{Test: "TestStockContract/burst", Surface: stock, Step: 3, Owner: Component, Contract: verdict.Red},
			[]string{"owner   component\n"},
			[]string{"owner   component ("},
			[]string{"fix: adopter.stock: contract RED\n", "| owner | component |"},
			[]string{"**Evidence**", "**Leg verdicts"}},
		{"no failure and no contract run", Outcome{Test: "TestStockReport", Surface: stock, Step: 3, Verdict: NoFailure, Reruns: Reruns{Runs: 1, Class: "passes"}},
			[]string{"step 3  the test alone: 0 of 1 reruns failed (passes); the contract in isolation: not run", "owner   none\n"},
			nil,
			[]string{"fix: adopter.stock: NO FAILURE while the contract is \n", "| the test alone | failed 0 of 1 reruns (passes) |"},
			[]string{"**Evidence**", "**Leg verdicts"}},
		{"capacity, with what was contended", Outcome{Test: "TestStockReport", Surface: stock, Step: 3, Owner: Capacity, Contract: verdict.Green,
			Contended: []string{"load: 5.5 per CPU"}},
			[]string{"owner   capacity\n", "  contended load: 5.5 per CPU\n", "the contract in isolation: GREEN"},
			nil,
			[]string{"fix: adopter.stock: failed in a saturated run \\(capacity attribution\\)\n", "**Evidence**\n\n- load: 5.5 per CPU\n"},
			[]string{"**Leg verdicts"}},
		{"a package that does not build", Outcome{Test: "TestStockReport", Surface: stock, Step: 3, Owner: TestAuthor, Verdict: "package " + NotBuilt,
			Reruns: Reruns{Runs: 2, Failures: 2, NotRun: 2, Class: PackageFails}, PackageFailure: &Plain{What: NotBuilt}},
			nil, nil,
			[]string{"fix: adopter.stock: its package does not build\n"}, nil},
		{"a package failure not described", Outcome{Test: "TestStockReport", Surface: stock, Step: 3, Owner: TestAuthor, Verdict: "package fails",
			Reruns: Reruns{Class: PackageFails}, Contract: verdict.Green},
			nil, nil,
			[]string{"fix: adopter.stock: package fails while the contract is GREEN\n"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			tt.o.Write(&b)
			says(t, "Write", b.String(), tt.write, tt.notWrite)
			says(t, "Issue", tt.o.Issue(), tt.issue, tt.notIssue)
		})
	}
}

// says checks that text holds every want and none of never.
func says(t *testing.T, what, text string, want, never []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, text)
		}
	}
	for _, n := range never {
		if strings.Contains(text, n) {
			t.Errorf("%s says %q:\n%s", what, n, text)
		}
	}
}

// codeSpan is a code span on one line, its fence one or two backticks.
var codeSpan = regexp.MustCompile("``[^\n]*?``|`[^`\n]*`")

// TestTheIssueAndTheSummaryShowHostileTextAsData: a test name, a failure
// and registry fields that hold HTML, a javascript: link, an image, a
// carriage return, a newline and escape sequences are shown as written in
// the issue body (never markup, never a line of their own) and in the
// summary (no control character reaches the terminal).
func TestTheIssueAndTheSummaryShowHostileTextAsData(t *testing.T) {
	hostile := map[string]string{
		"a script":           "<script>alert(1)</script>",
		"a javascript: link": "[x](javascript:alert(1))",
		"an image":           "![x](https://evil.example/x.png)",
		"an autolink":        "<javascript:alert(1)>",
		"a carriage return":  "ok\r::error::forged",
		"a new line":         "ok\n# a heading\n| forged | row |",
		"escape sequences":   "\x1b]0;retitled\x07\x1b[2J",
		"a code fence":       "```\ncode\n```",
	}
	for name, h := range hostile {
		t.Run(name, func(t *testing.T) {
			s := &Surface{ID: "s" + h, Class: "store", Owner: "team" + h, Behavior: "b" + h, Oracle: "o" + h, Where: "reg.toml:1"}
			o := Outcome{Test: "TestX/" + h, Package: "example.com/m", Surface: s, Step: 3, Owner: Component, OwnerName: "team" + h,
				Verdict: Finding(verdict.FailReproducible), Action: "fix " + h, Reason: "failed: " + h, Evidence: []string{"e " + h}, Contended: []string{"c " + h},
				Legs: []verdict.Leg{{Lever: "burst", Verdict: verdict.FailReproducible, Reason: "r " + h, FailedRun: 7, Replay: "go test -run '" + h + "'"}}}
			issue := o.Issue()
			// A code span shows what it holds as written.
			prose := codeSpan.ReplaceAllString(issue, "`code`")
			for _, bad := range []string{"<script", "](javascript", "![x]", "<javascript", "\r", "\x1b", "\n# a heading", "\n| forged", "\n```\ncode"} {
				if regexp.MustCompile(`(^|[^\\])`+regexp.QuoteMeta(bad)).MatchString(prose) || strings.Contains(issue, bad) && strings.ContainsAny(bad, "\r\x1b\n") {
					t.Errorf("the issue body holds %q raw:\n%s", bad, issue)
				}
			}
			if got, want := strings.Count(issue, "\n"), strings.Count((&Outcome{Test: "TestX/plain", Package: "example.com/m", Surface: &Surface{ID: "s", Class: "store", Where: "reg.toml:1"},
				Step: 3, Owner: Component, OwnerName: "team", Verdict: "v", Action: "a", Reason: "r", Evidence: []string{"e"}, Contended: []string{"c"},
				Legs: []verdict.Leg{{Lever: "burst", Verdict: verdict.FailReproducible, Reason: "r", FailedRun: 7, Replay: "x"}}}).Issue(), "\n"); got != want {
				t.Errorf("the issue body has %d lines, a plain one %d: a value made lines of its own:\n%s", got, want, issue)
			}
			var w strings.Builder
			o.Write(&w)
			if strings.ContainsAny(w.String(), "\r\x1b\x07") {
				t.Errorf("the summary holds a control character: %q", w.String())
			}
		})
	}
}

// TestTheIssueShowsTheCommandsItsActionNamesAsCode: the issue body's action
// shows the replay and the arbitrate command it names as code spans with
// the command's bytes, the rest of the sentence as escaped text.
func TestTheIssueShowsTheCommandsItsActionNamesAsCode(t *testing.T) {
	replay := "CONTESTED_SEED=7 go test ./my_pkg -run '^TestA_b$' -count=1"
	o := Outcome{Test: "TestA_b", Step: 3, Owner: TestAuthor, Replay: replay,
		Action: "it fails every time alone: reproduce with " + replay + " and fix *it*; walk it again: go tool mage arbitrate TestA_b"}
	says(t, "Issue", o.Issue(), []string{"**Action:** it fails every time alone: reproduce with `" + replay + "` and fix \\*it\\*; walk it again: `go tool mage arbitrate TestA_b`\n"},
		[]string{`my\_pkg`, `arbitrate TestA\_b`})
}
