package command

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/fatih/color"

	"github.com/contested/contested/internal/faultdir"
	"github.com/contested/contested/internal/gate"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gate/report"
)

// ProgramGateOptions configures ProgramGate.
type ProgramGateOptions struct {
	Dir string
	// Merge are shard directories to certify as one run (program-gate
	// -merge DIR...); empty verifies this module's records.
	Merge []string
	// MergeSet says -merge was given, even with no directory (a usage
	// error).
	MergeSet bool
	Out      io.Writer `json:"-"`
}

// ProgramGate runs fault-preflight in required mode, then the six phases
// over whatever records are on disk, standalone: a missing stamp is
// announced, a present one is left in place. It is for triage after a
// battery, never a substitute for validate. It also shows the contract
// verdict of each registered surface with records on disk, by the same
// judge, from the records alone (it has no test outcomes: a leg whose test
// failed before arming shows as NOT-RUN there); its exit code is the six
// phases'.
func ProgramGate(ctx context.Context, opts ProgramGateOptions) error {
	ctx, cancel := withSignals(ctx)
	defer cancel()
	out := opts.Out
	if opts.MergeSet || len(opts.Merge) > 0 {
		if err := checkVariables(varLevel); err != nil {
			return err
		}
		if len(opts.Merge) == 0 {
			writeMergeUsage(out)
			return fmt.Errorf("%w: -merge needs the shards' directories: go tool mage program-gate -merge shards/1 shards/2 shards/3", ErrUsage)
		}
		return mergeShards(ctx, opts.Merge, opts)
	}
	if err := checkVariables(varLayer, varLevel); err != nil {
		return err
	}
	ws, err := openWorkspace(opts.Dir)
	if err != nil {
		return err
	}
	dir, reg, root, level := ws.env.ModuleRoot, ws.reg, ws.env.ResultsDir, ws.env.Level
	hintIgnore(ctx, dir, root, out)
	if err := FaultPreflight(ctx, PreflightOptions{Required: true, Out: out}); err != nil {
		fmt.Fprintf(out, "program-gate: %s: fault-preflight failed; not verifying\n", color.RedString("CANNOT RUN"))
		return err
	}
	faultDir := root.Fault()
	if _, err := os.Lstat(filepath.Join(faultDir, faultdir.StampName)); err != nil {
		fmt.Fprintf(out, "program-gate: no gate stamp in %s: the records on disk are not tied to a run; verifying them anyway (standalone)\n", faultDir)
	}
	verified, err := gate.Verify(ctx, gate.Options{
		Dir:              faultDir,
		Mode:             gate.Standalone,
		RecordingClasses: reg.Gate.RecordingClasses,
		KnownClasses:     reg.Classes(),
		Surfaces:         reg.IDs(),
		SelfTests:        reg.Gate.SelfTests,
		Inventory:        cachedInventory(dir),
	})
	if verified == nil {
		return fmt.Errorf("verify: %w", err)
	}
	mod, _ := contract.ModulePath(dir)
	recs, rerr := contract.ReadRecords(faultDir)
	if rerr != nil {
		fmt.Fprintf(out, "program-gate: read the records to judge the surfaces: %v\n", rerr)
	}
	judged := contract.JudgeBattery(contract.Battery{Registry: reg, Module: mod, Records: recs, Level: level})
	verified.Surfaces = contract.Verdicts(judged)
	if serr := verified.Save(); serr != nil {
		notSaved(out, "program-gate", filepath.Join(faultDir, faultdir.ReportName), serr)
	}
	fmt.Fprintln(out)
	verified.WriteSummary(out)
	writeSurfaceSummary(out, judged, level, "from the records on disk alone: no test outcomes and no reruns, so a failure is FAIL-nondeterministic and a leg whose test failed before arming is NOT-RUN; validate.json has validate's verdicts")
	p := report.Page{Title: "contested program-gate", RunID: verified.RunID, Green: verified.Certified, Gate: verified, Surfaces: judged, Level: level,
		Records: recs, History: reportHistory(ctx, root, reg.Guard.CanonicalDatabases, out)}
	if !verified.Certified {
		p.Reasons = []string{"gate refused: " + failedPhases(verified)}
	}
	writeReports(root, p, out)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrRed, err)
	}
	return nil
}
