package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/fatih/color"

	"github.com/contested/contested/internal/faultdir"
	"github.com/contested/contested/internal/gate"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gate/report"
	"github.com/contested/contested/internal/gate/shard"
	"github.com/contested/contested/internal/gotest"
	"github.com/contested/contested/internal/terminal"
)

// MergeReport is what program-gate -merge found, saved as merge.json under
// the results directory.
type MergeReport struct {
	*shard.Result
	Surfaces []gate.SurfaceVerdict `json:"surfaces"`
	Green    bool                  `json:"green"`
	Reasons  []string              `json:"reasons,omitempty"`
}

// mergeShards is program-gate -merge DIR...: it certifies the union of the
// shards in dirs (shard.Merge) and judges every registered surface over
// the union's records and test outcomes. It needs no fault layer: it runs
// no test. GREEN needs the union certified, every shard's battery passed
// and every registered leg passed; a refused shard exits 1 naming it,
// input that cannot be merged exits 2.
func mergeShards(ctx context.Context, dirs []string, opts ProgramGateOptions) error {
	out := opts.Out
	ws, err := openWorkspace(opts.Dir)
	if err != nil {
		return err
	}
	root, reg := ws.env.ResultsDir, ws.reg
	inv, err := gotest.Packages(ctx, ws.env.ModuleRoot)
	if err != nil && !errors.Is(err, gotest.ErrUnparsed) {
		return fmt.Errorf("%w: list the module's tests: %w", ErrUsage, err)
	}
	fmt.Fprintf(out, "%s %d shard directories into %s\n", bold("program-gate -merge:"), len(dirs), root.Fault())
	res, merr := shard.Merge(ctx, shard.MergeOptions{Dirs: dirs, ResultsDir: root.String(), Inventory: inv, Gate: gate.Options{
		RecordingClasses: reg.Gate.RecordingClasses,
		KnownClasses:     reg.Classes(),
		Surfaces:         reg.IDs(),
		SelfTests:        reg.Gate.SelfTests,
		Inventory:        cachedInventory(ws.env.ModuleRoot),
	}})
	if errors.Is(merr, shard.ErrBadInput) {
		return fmt.Errorf("%w: %w", ErrUsage, merr)
	}
	if res == nil {
		return fmt.Errorf("merge: %w", merr)
	}
	rep := &MergeReport{Result: res, Surfaces: []gate.SurfaceVerdict{}}
	for _, s := range res.Shards {
		mark := color.GreenString("ok")
		if !s.OK {
			mark = color.RedString("REFUSED")
		}
		fmt.Fprintf(out, "  shard %-7s %-9s %4d records  run %s  %s\n", terminal.Escape(s.Shard), mark, s.Records, terminal.Escape(s.RunID), terminal.Escape(s.Dir))
	}
	for _, r := range res.Refusals {
		fmt.Fprintf(out, "  %s %s\n", color.RedString("refused:"), terminal.Escape(r.String()))
	}
	var judged []*contract.Result
	if res.Union != nil {
		mod, _ := contract.ModulePath(ws.env.ModuleRoot)
		recs, rerr := contract.ReadRecords(root.Fault())
		if rerr != nil {
			fmt.Fprintf(out, "program-gate: read the union's records to judge the surfaces: %v\n", rerr)
		}
		judged = contract.JudgeBattery(contract.Battery{Registry: reg, Module: mod, Result: res.Battery, Records: recs, Level: ws.env.Level})
		rep.Surfaces = contract.Verdicts(judged)
		res.Union.Surfaces = rep.Surfaces
		if serr := res.Union.Save(); serr != nil {
			notSaved(out, "program-gate", filepath.Join(root.Fault(), faultdir.ReportName), serr)
		}
		fmt.Fprintln(out)
		res.Union.WriteSummary(out)
		writeSurfaceSummary(out, judged, ws.env.Level, "over the union of the shards: their records and test outcomes, no reruns")
		saveTimings(root, out, res.Battery)
	}
	rep.Reasons = mergeReasons(res, judged, merr)
	rep.Green = len(rep.Reasons) == 0
	ci := mergeRun(res, rep)
	p := report.Page{Title: "contested program-gate -merge", RunID: res.SharedRunID, Green: rep.Green, Reasons: rep.Reasons,
		Gate: res.Union, Surfaces: judged, Level: ws.env.Level, History: reportHistory(ctx, root, reg.Guard.CanonicalDatabases, out), Plain: ci.Failures}
	if res.Union != nil {
		p.Battery = res.Battery
	}
	writeReports(root, p, out)
	if path, err := saveJSON(root, "merge.json", rep); err != nil {
		notSaved(out, "program-gate", path, err)
	} else {
		fmt.Fprintf(out, "program-gate: saved %s\n", path)
	}
	publishCI(ws.env.ModuleRoot, ci, out)
	if rep.Green {
		fmt.Fprintf(out, "\nprogram-gate -merge: %s: %d shards of run %s certified as one (%s)\n", color.GreenString("GREEN"), res.Total, res.SharedRunID, time.Now().UTC().Format(time.RFC3339))
		return nil
	}
	fmt.Fprintf(out, "\nprogram-gate -merge: %s: %s\n", color.RedString("RED"), strings.Join(rep.Reasons, "; "))
	return fmt.Errorf("%w: %s", ErrRed, strings.Join(rep.Reasons, "; "))
}

// mergeReasons is the merge's verdict: why it is not GREEN.
func mergeReasons(res *shard.Result, judged []*contract.Result, merr error) []string {
	var out []string
	for _, r := range res.Refusals {
		out = append(out, "refused "+r.String())
	}
	if res.Union == nil {
		if len(out) == 0 && merr != nil {
			out = append(out, merr.Error())
		}
		return out
	}
	if !res.Union.Certified {
		out = append(out, "gate refused the union: "+failedPhases(res.Union))
	}
	if b := res.Battery; b != nil && !b.OK() {
		out = append(out, "battery failed in a shard"+batteryFailures(b))
	}
	out = append(out, surfaceReasons(judged, true, nil)...)
	return out
}

// writeMergeUsage is the hint for a merge with no directory.
func writeMergeUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: go tool mage program-gate -merge DIR... (each shard's results directory)")
}
