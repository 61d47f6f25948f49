package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/gate/cisummary"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gate/ladder"
	"github.com/contested/contested/internal/gate/shard"
	"github.com/contested/contested/internal/rundir"
	"github.com/contested/contested/internal/supervise"
	"github.com/contested/contested/internal/terminal"
)

// ciSystem is the CI system the command runs under, from its environment.
func ciSystem() cisummary.CI { return cisummary.Detect(os.Getenv) }

// publishCI shows a verdict where the CI shows it (cisummary.Publish):
// under GitHub Actions the job's summary and an annotation per failing
// test; elsewhere nothing. A summary that cannot be written is said, and
// changes no verdict.
func publishCI(dir string, run cisummary.Run, out io.Writer) {
	if err := cisummary.Publish(context.Background(), ciSystem(), run, dir, out); err != nil {
		fmt.Fprintf(out, "contested: %s\n", terminal.Inert(err.Error()))
	}
	if ciSystem().GitHub {
		supervise.Summarized()
	}
}

// endCI shows, under GitHub Actions, how a command that gave no verdict
// ended (cisummary.PublishEnd): what happened, why, the exit code and
// what to do, in the job's summary and as an annotation. A command that
// published its verdict already is left as it is.
func endCI(target string, code int, err error) {
	c := ciSystem()
	if !c.GitHub || cisummary.Published() {
		return
	}
	why := ""
	if err != nil {
		why = err.Error()
	}
	e := cisummary.End{Command: target, Code: code, Why: why}
	switch {
	case errors.Is(err, ErrInterrupted):
		e.What = "STOPPED"
		e.Repair = []string{"the run was stopped before it finished and gave no verdict: run it again",
			"what it left is reaped by the next run, or by go tool mage sweep"}
	case code == ExitCannotRun:
		e.What = "CANNOT RUN"
		e.Repair = append(cannotRunRepair(), "go tool mage fault-preflight -required names each failed check and how to repair it; docs/how-to/ci.md says what the job needs")
	case code == ExitUsage:
		e.What = "BAD INPUT"
		e.Repair = []string{"fix the input the error names (a variable, a flag, the registry), then run it again"}
	default:
		e.What = "FAILED"
		e.Repair = []string{"read the job's log above for what failed; test-results/ holds the evidence"}
	}
	if perr := cisummary.PublishEnd(c, e, currentOutput()); perr != nil {
		fmt.Fprintf(os.Stderr, "contested: %s\n", terminal.Inert(perr.Error()))
	}
	supervise.Summarized()
}

// ciRun is validate's verdict as CI shows it.
func (r *ValidateReport) ciRun() cisummary.Run {
	cmd := "validate"
	if r.Shard != "" {
		cmd += " -shard=" + r.Shard
	}
	return cisummary.Run{Command: cmd, RunID: r.RunID, Layer: r.Layer, Green: r.Green, Reasons: r.Reasons,
		Surfaces: r.Surfaces, Failures: r.BatteryFailures, Ladder: r.Ladder, Capabilities: r.Capabilities, Took: r.Took, Reuse: r.Reuse.summary()}
}

// mergeRun is program-gate -merge's verdict as CI shows it. Under a CI its
// failures are the ones the shards' validate.json list (battery_failures:
// owner and action from each shard's ladder), and a failure of the union's
// battery that none lists is a plain one; outside CI it has none, and the
// merge's reports stay as they were.
func mergeRun(res *shard.Result, rep *MergeReport) cisummary.Run {
	run := cisummary.Run{Command: "program-gate -merge", RunID: res.SharedRunID, Green: rep.Green, Reasons: rep.Reasons, Surfaces: rep.Surfaces}
	if ciSystem().Any() {
		run.Failures = shardFailures(res)
	}
	return run
}

// shardFailures are the failures the shards' validate.json list, then
// each failure of the union's battery that none of them lists.
func shardFailures(res *shard.Result) []ladder.Plain {
	var out []ladder.Plain
	listed := map[string]bool{}
	for _, s := range res.Shards {
		var v struct {
			Failures []ladder.Plain `json:"battery_failures"`
		}
		r, err := atomicfile.OpenRoot(s.Dir)
		if err != nil || r.ReadJSON(rundir.ValidateJSON, &v, maxValidateJSON) != nil {
			continue
		}
		for _, f := range v.Failures {
			listed[f.Package+"."+f.Test] = true
			out = append(out, f)
		}
	}
	if res.Battery == nil {
		return out
	}
	for _, t := range contract.LeafFailures(res.Battery) {
		if !listed[t.ID()] {
			out = append(out, ladder.PlainTest(t))
		}
	}
	for _, p := range res.Battery.FailedPackages() {
		if !listed[p.Name+"."] {
			out = append(out, ladder.PlainPackage(p, testsRan(res.Battery, p.Name)))
		}
	}
	return out
}

// maxValidateJSON bounds a shard's validate.json read for its failures.
const maxValidateJSON = 256 << 20
