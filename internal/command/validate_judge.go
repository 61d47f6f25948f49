package command

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/faultdir"
	"github.com/contested/contested/internal/gate"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gate/ladder"
	"github.com/contested/contested/internal/replayenv"
)

// judge gives every registered surface that ran its contract verdict from
// this battery (one verdict: a failing leg is judged by its reruns alone
// with its seed, the ladder's), and saves the verdicts beside the six
// phases.
func (v *validation) judge(ctx context.Context, res *battery.Result, verified *gate.Report) []*contract.Result {
	mod, _ := contract.ModulePath(v.env.ModuleRoot)
	recs, err := contract.ReadRecords(v.faultDir())
	if err != nil {
		fmt.Fprintf(v.out, "validate: read the records to judge the surfaces: %v\n", err)
	}
	bat := contract.Battery{Registry: v.reg, Module: mod, Result: res, Records: recs, Level: v.env.Level, Capabilities: v.caps,
		Starts: v.starts, Reruns: map[string]bool{}}
	for _, o := range v.rep.Ladder {
		if o.Reruns.Runs > 0 && o.Reruns.Class != ladder.PackageFails && o.Reruns.Class != ladder.NeverRuns {
			bat.Reruns[o.Package+"."+o.Test] = o.Reruns.Class == ladder.Consistent
		}
	}
	judged := contract.JudgeBattery(bat)
	decideLegs(judged, v.rep.Ladder)
	deeper := v.deeper(ctx, judged)
	replayWith(judged, v.replay)
	v.rep.Surfaces = contract.Verdicts(judged)
	for i := range v.rep.Surfaces {
		v.rep.Surfaces[i].Deeper = deeper[v.rep.Surfaces[i].ID]
	}
	v.rep.Surfaces = append(v.rep.Surfaces, v.reuse.verdicts()...)
	verified.Surfaces, verified.Capabilities = v.rep.Surfaces, v.caps
	if err := verified.Save(); err != nil {
		notSaved(v.out, "validate", filepath.Join(v.faultDir(), faultdir.ReportName), err)
	}
	return judged
}

// replayWith gives each leg's replay line the variables its package's
// tests read (replayenv.Set.Apply).
func replayWith(judged []*contract.Result, set *replayenv.Set) {
	for _, r := range judged {
		for i := range r.Legs {
			r.Legs[i].Replay = set.Apply(r.Legs[i].Replay)
		}
	}
}

// decideLegs gives each failing leg the ladder's decision on its test, so
// that the surfaces table and the arbitration show one owner.
func decideLegs(judged []*contract.Result, walked []*ladder.Outcome) {
	for _, o := range walked {
		if o.Surface == nil || o.NoFailure() {
			continue
		}
		for _, r := range judged {
			if r.Surface != o.Surface.ID {
				continue
			}
			for i, l := range r.Legs {
				if slices.Contains(l.Tests, o.Test) {
					d := o.Decision()
					r.Legs[i].Decision = &d
				}
			}
		}
	}
}
