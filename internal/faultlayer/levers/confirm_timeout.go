package levers

import "context"

// NameConfirmTimeout is ConfirmTimeout's name.
const NameConfirmTimeout = "confirm-timeout"

// ConfirmTimeout lets a write reach the server and commit but drops the
// server's reply (a timeout toxic on the downstream), so the client times
// out on a write that happened: an ambiguous outcome. It fires only when,
// beyond the toxic read back and the client's timeout, the write is
// confirmed committed server-side (Proof.Confirmed).
var ConfirmTimeout Lever = confirmTimeout{spec{
	name:    NameConfirmTimeout,
	meaning: "a write commits but its confirmation arrives too late: an ambiguous outcome",
	needs:   NeedProxy,
	signals: []Signal{SigTimeout},
	doc: Doc{
		Arm:      "`timeout` toxic on the downstream: the write arrives, its reply never does",
		Injector: "toxic read back, **and** `leg.Committed` finds the write committed server-side",
		Victim:   "the client's timeout",
		Levels: [3]string{
			"drops the answers of writes that reached the server, held at least until a client timed out",
			"drop answers again",
			"drops answers again right after the heal",
		},
	},
}}

type confirmTimeout struct{ spec }

func (c confirmTimeout) Arm(ctx context.Context, t Target) (Fault, error) {
	if err := t.check(c, c.needs); err != nil {
		return nil, err
	}
	// The request reaches the server; its reply never comes back.
	return armToxic(ctx, t, "contested-confirm-timeout", "timeout", "downstream")
}

func (confirmTimeout) Fired(p Proof) error {
	if err := bothSides(p); err != nil {
		return err
	}
	if !p.Confirmed {
		return ErrUnconfirmed
	}
	return nil
}
