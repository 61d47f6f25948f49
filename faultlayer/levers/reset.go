package levers

import "context"

// NameReset is Reset's name.
const NameReset = "reset"

// Reset tears down connections that carry traffic with a TCP reset
// (Toxiproxy reset_peer on the upstream). The injector side reads the
// toxic back; a reset armed on a warm connection closes it with FIN, so
// EOF proves it too.
var Reset Lever = reset{spec{
	name:    NameReset,
	meaning: "connections that carry traffic are torn down with a TCP reset",
	needs:   NeedProxy,
	signals: []Signal{SigReset, SigEOF, SigBrokenPipe, SigConnClosed},
}}

func init() { register(20, Reset) }

type reset struct{ spec }

func (r reset) Arm(ctx context.Context, t Target) (Fault, error) {
	if err := t.check(r, r.needs); err != nil {
		return nil, err
	}
	return armToxic(ctx, t, "contested-reset", "reset_peer", "upstream")
}
