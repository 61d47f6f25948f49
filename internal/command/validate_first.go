package command

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fatih/color"

	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/gate"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gate/ladder"
	"github.com/contested/contested/internal/legstart"
	"github.com/contested/contested/internal/rundir"
	"github.com/contested/contested/internal/terminal"
)

// firstVerdict gives a run that is RED by the time the battery and the
// gate are done its verdict at once, before the ladder reruns anything:
// on the terminal, in validate.json and in the step summary, each failure
// with its likely owner from its own evidence (ladder.Provisional) and its
// replay, marked confirming. The ladder then confirms; a run stopped
// before it ends (Ctrl-C, a CI job's timeout) keeps this verdict, marked
// unconfirmed, and is RED, never GREEN.
func (v *validation) firstVerdict(ctx context.Context, res *battery.Result, verified *gate.Report) {
	if res.OK() && verified.Certified {
		return
	}
	rep := v.rep
	starts, _, _ := legstart.Read(v.env.ResultsDir.String())
	records, _ := contract.ReadRecords(v.faultDir())
	lo := ladder.Options{Env: v.env, Registry: v.reg, Seen: res, SeenRunID: v.env.RunID, Starts: legstart.OfRun(starts, v.env.RunID), Records: records, Replay: v.replay}
	rep.BatteryFailures = nil
	for _, t := range contract.LeafFailures(res) {
		rep.BatteryFailures = append(rep.BatteryFailures, ladder.Provisional(ctx, t, lo))
	}
	for _, p := range res.FailedPackages() {
		rep.BatteryFailures = append(rep.BatteryFailures, ladder.PlainPackage(p, testsRan(res, p.Name)))
	}
	rep.Reasons = validateReasons(res, verified, nil, v.whole, rep.Registry, v.caps)
	rep.Green, rep.Confirming = false, len(contract.LeafFailures(res)) > 0
	rep.FirstVerdictAfter = time.Since(res.Started.Add(res.Elapsed))
	rep.Took = time.Since(v.start)
	state := ""
	if rep.Confirming {
		state = " (confirming)"
	}
	fmt.Fprintf(v.out, "\nvalidate: %s%s %s after the battery: %s\n", color.RedString("RED"), state, rep.FirstVerdictAfter.Round(10*time.Millisecond), terminal.Escape(strings.Join(rep.Reasons, "; ")))
	for _, p := range rep.BatteryFailures {
		what := p.Package + " " + p.Test
		if p.Test == "" {
			what = "package " + p.Package + " " + p.What
		}
		fmt.Fprintf(v.out, "  %s\n      likely owner %s: %s\n", terminal.Escape(what), terminal.Escape(p.Owner), terminal.Escape(p.FirstLine))
		if p.Replay != "" {
			fmt.Fprintf(v.out, "      replay: %s\n", terminal.Escape(p.Replay))
		}
	}
	if path, err := saveJSON(v.env.ResultsDir, rundir.ValidateJSON, rep); err != nil {
		notSaved(v.out, "validate", path, err)
	} else if rep.Confirming {
		fmt.Fprintf(v.out, "validate: saved %s (RED; the ladder confirms each owner next: stopped before it ends, the run keeps this verdict, unconfirmed)\n", path)
	}
	if rep.Confirming {
		run := rep.ciRun()
		run.Confirming = true
		publishCI(v.env.ModuleRoot, run, v.out)
	}
}

// unconfirmed are the failures whose likely owner no ladder walk
// confirmed: the budget or a signal ended the ladder first.
func unconfirmed(failures []ladder.Plain) []string {
	var out []string
	for _, p := range failures {
		if p.Test != "" && (p.Confirming || !p.Arbitrated || p.Incomplete != "") {
			out = append(out, p.Package+"."+p.Test)
		}
	}
	return out
}
