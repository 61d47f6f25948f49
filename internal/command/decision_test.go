package command

import (
	"bytes"
	"strings"
	"testing"

	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/gate/cisummary"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gate/ladder"
	"github.com/contested/contested/internal/gate/report"
	"github.com/contested/contested/internal/gate/verdict"
)

// TestEveryWriterShowsTheLaddersOneOwner: a failing leg whose arbitration
// gave it to capacity (it passed on a quiet machine, its failure speaks of
// time) shows that one owner and verdict wherever it is shown: beside the
// leg in the surfaces table (terminal, step summary, HTML), in the
// arbitration block, in validate.json's battery failures, in JUnit and in
// the issue body; none of them names the component as its owner.
func TestEveryWriterShowsTheLaddersOneOwner(t *testing.T) {
	failed := battery.Test{Package: "example.com/m", Name: "TestLegContract/isolate", Action: "fail", Failure: "m_test.go:9: no reply within 2s"}
	o := &ladder.Outcome{Test: failed.Name, Package: failed.Package, Surface: &ladder.Surface{ID: "m.queue", Owner: "queue-team"}, Step: 3,
		Owner: ladder.Capacity, Verdict: "GREEN contract, saturated run", Action: "record the capacity attribution and still fix it"}
	judged := []*contract.Result{{Surface: "m.queue", Owner: "queue-team", Contract: verdict.Red,
		Legs: []verdict.Leg{{Lever: "isolate", Verdict: verdict.FailNondeterministic, Reason: "seed 4 failed once and passed on rerun", Tests: []string{failed.Name}}}}}
	decideLegs(judged, []*ladder.Outcome{o})
	rep := &ValidateReport{RunID: "r1", Ladder: []*ladder.Outcome{o}, Surfaces: contract.Verdicts(judged),
		BatteryFailures: []ladder.Plain{ladder.PlainTest(failed).With(o)}}
	want := "owner capacity: GREEN contract, saturated run"

	var term bytes.Buffer
	writeSurfaceSummary(&term, judged, 1, "")
	writeLadderSummary(&term, rep)
	var md bytes.Buffer
	if err := cisummary.WriteMarkdown(&md, rep.ciRun()); err != nil {
		t.Fatal(err)
	}
	var html bytes.Buffer
	if err := (report.HTML{}).Write(&html, report.Page{Title: "t", Surfaces: judged, Ladder: rep.Ladder, Plain: rep.BatteryFailures}); err != nil {
		t.Fatal(err)
	}
	var junit bytes.Buffer
	if err := (report.JUnit{}).Write(&junit, report.Page{Battery: &battery.Result{Tests: []battery.Test{failed}}, Plain: rep.BatteryFailures, CI: true}); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct{ name, text, says string }{
		{"terminal surfaces table", term.String(), "arbitrated: " + want},
		{"terminal arbitration", term.String(), "owner capacity; GREEN contract, saturated run"},
		{"step summary", strings.ReplaceAll(md.String(), `\`, ""), "arbitrated: " + want},
		{"HTML", html.String(), "arbitrated: " + want},
		{"validate.json", rep.BatteryFailures[0].Owner + ": " + rep.BatteryFailures[0].Verdict, "capacity: GREEN contract, saturated run"},
		{"JUnit", junit.String(), "owner capacity"},
		{"issue body", o.Issue(), "| owner | capacity |"},
	} {
		if !strings.Contains(w.text, w.says) {
			t.Errorf("%s does not say %q:\n%s", w.name, w.says, w.text)
		}
		if strings.Contains(w.text, "owner component") || strings.Contains(w.text, "queue-team)") {
			t.Errorf("%s names the component as the owner:\n%s", w.name, w.text)
		}
	}
}
