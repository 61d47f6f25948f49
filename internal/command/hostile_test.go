package command

import (
	"strings"
	"testing"

	"github.com/fatih/color"

	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gate/ladder"
	"github.com/contested/contested/internal/gate/verdict"
)

// TestThePlainSummariesShowHostileTextAsData: test names, failure text
// and registry fields holding a carriage return, a newline and escape
// sequences (a cursor move, a retitle) reach the terminal as escapes, in
// the battery's, the arbitration's and a contract's summary alike.
func TestThePlainSummariesShowHostileTextAsData(t *testing.T) {
	color.NoColor = true
	hostile := map[string]string{
		"a carriage return": "x\r::error title=x::y",
		"a new line":        "x\n::error title=x::y",
		"a cursor move":     "x\x1b[2A\x1b[2K",
		"a retitle":         "x\x1b]0;owned\x07",
		"a C1 control":      "x\u009b2J",
	}
	for name, h := range hostile {
		t.Run(name, func(t *testing.T) {
			var out strings.Builder
			res := &battery.Result{Tests: []battery.Test{{Package: "example.com/m", Name: "TestX" + h, Action: "fail"}}}
			writeBatterySummary(&out, res, []ladder.Plain{
				{Package: "example.com/m", Test: "TestX" + h, FirstLine: "failed: " + h, Owner: "o" + h, Action: "a" + h},
				{Package: "example.com/m" + h, What: "does not build", FirstLine: "f" + h, Owner: "o" + h, Action: "a" + h}})
			writeLadderSummary(&out, &ValidateReport{Ladder: []*ladder.Outcome{{Package: "example.com/m", Test: "TestX" + h, Owner: ladder.Component,
				OwnerName: "team" + h, Verdict: ladder.Finding("v" + h), Action: "a" + h, Replay: "r" + h, Evidence: []string{"e" + h}, Incomplete: "i" + h}},
				NotArbitrated: []string{"example.com/m.TestY" + h}})
			WriteContractSummary(&out, &contract.Result{Surface: "s" + h, Behavior: "b" + h, Oracle: "o" + h,
				Legs: []verdict.Leg{{Lever: "reset", Verdict: verdict.FailReproducible, Reason: "r" + h, Injector: "i" + h, Victim: "v" + h, Replay: "p" + h}}})
			if strings.ContainsAny(out.String(), "\r\x1b\x07\u009b") {
				t.Errorf("a control character reaches the terminal: %q", out.String())
			}
			for _, line := range strings.Split(out.String(), "\n") {
				if strings.HasPrefix(line, "::") {
					t.Errorf("a value starts a line of its own: %q", line)
				}
			}
		})
	}
}
