package ladder

import (
	"context"
	"fmt"

	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/replayenv"
)

// Provisional is a failing test as validate reports it the moment the
// battery and the gate are done, before any rerun: its likely owner from
// its own evidence, its seed and replay, marked Confirming until the
// ladder's walk replaces it (With). The likely owner is the one the walk
// most often ends with for such evidence:
//
//   - a leg whose oracle named a violation: the component, which a busy
//     machine does not excuse (a load makes a test late, not wrong);
//   - a leg that failed otherwise: the component, to be confirmed by a
//     rerun with its seed (and, when its failure is about time, on a
//     quiet machine, where capacity may take it);
//   - any other test: its author, or capacity when its failure is about
//     time and a quiet rerun passes it.
func Provisional(ctx context.Context, t battery.Test, opts Options) Plain {
	p := PlainTest(t)
	p.Confirming = true
	o := &Outcome{Test: t.Name, Package: t.Package, Reason: contract.Reason(t.Failure, t.Output)}
	seedFromStart(o, opts, t.Package, t.Name)
	o.replay = opts.Replay.Of(t.Package)
	o.Replay = replayenv.Prefix(o.Replay, o.replay)
	p.Seed, p.Replay = o.Seed, o.Replay
	f := batteryFailure(o, opts, t.Package, t.Name)
	if v := violatedIn(opts.Records, t.Name); v != "" {
		p.FirstLine = v
	}
	s, err := Locate(ctx, t.ID(), opts)
	lever, leg := legOf(s, t.Name)
	switch {
	case err == nil && leg:
		p.Surface = s.ID
		p.Owner = string(Component)
		if s.Owner != "" {
			p.Owner += " (" + s.Owner + ")"
		}
		p.Action = fmt.Sprintf("likely a defect of the component: leg %s of %s failed", lever, s.ID)
		switch {
		case violatedIn(opts.Records, t.Name) != "":
			p.Action += " an oracle: a violation no load explains"
		case f.aboutTime:
			p.Action += " on a matter of time: confirming on a quiet machine, where capacity may take it"
		}
		p.Action += "; confirming with a rerun of its seed"
	case f.aboutTime:
		p.Owner = fmt.Sprintf("%s, or %s", TestAuthor, Capacity)
		p.Action = "its failure is about time: confirming on a quiet machine; capacity takes it if it passes there, its author if not"
	default:
		p.Owner = string(TestAuthor)
		if err == nil {
			p.Surface = s.ID
		}
		p.Action = "confirming with a rerun alone: " + p.Action
	}
	if p.Replay == "" {
		p.Replay = alone(o, t.Package)
	}
	return p
}
