package levers

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// NameReset is Reset's name.
const NameReset = "reset"

// Reset tears down connections that carry traffic with a TCP reset
// (Toxiproxy reset_peer). Its schedule draws, per fault, the direction
// (upstream: the request is dropped before the server sees it;
// downstream: the server has executed the request and its answer is
// dropped, an ambiguous outcome; both at once at level 2) and how long
// the toxic holds the first chunk before it resets. The injector side
// reads the toxics back; a reset armed on a warm connection closes it with
// FIN, so EOF proves it too.
var Reset Lever = reset{spec{
	name:    NameReset,
	meaning: "connections that carry traffic are torn down with a TCP reset",
	needs:   NeedProxy,
	signals: []Signal{SigReset, SigEOF, SigBrokenPipe, SigConnClosed},
	doc: Doc{
		Arm:      "`reset_peer` on the proxy's upstream, downstream or both, as the schedule draws",
		Injector: "toxics read back",
		Victim:   "ECONNRESET, EOF, connection closed: only when traffic flows",
		Levels: [3]string{
			"resets one direction, upstream (the request is dropped before the server sees it) or downstream (the server executed it, its answer is dropped: an ambiguous outcome), after a 0-20ms delay",
			"reset both directions at once",
			"resets one direction again while the clients reconnect",
		},
	},
}}

type reset struct{ spec }

// ResetParams are one reset fault's parameters: the streams its toxics sit
// on and the delay between the first chunk and the reset.
type ResetParams struct {
	Streams []string // "upstream", "downstream"
	Delay   time.Duration
}

func (p ResetParams) String() string {
	return fmt.Sprintf("%s delay %v", strings.Join(p.Streams, "+"), p.Delay)
}

// Traits: the direction, or "both" for both at once.
func (p ResetParams) Traits() []string {
	if len(p.Streams) > 1 {
		return []string{"both"}
	}
	return p.Streams
}

// Draw: each fault resets one direction, upstream or downstream, after a
// delay of 0-20ms; level 2's faults reset both directions at once.
func (reset) Draw(s Streams, p Scope) []Window {
	return drawWindows(s, p, func(r *rand.Rand, k Kind) Params {
		streams := []string{[]string{"upstream", "downstream"}[r.IntN(2)]}
		if k == More {
			streams = []string{"upstream", "downstream"}
		}
		return ResetParams{Streams: streams, Delay: between(r, 0, 20) * time.Millisecond}
	})
}

func (r reset) Arm(ctx context.Context, t Target) (Fault, error) {
	if err := t.check(r, r.needs); err != nil {
		return nil, err
	}
	p, ok := t.Window.Params.(ResetParams)
	if !ok || len(p.Streams) == 0 {
		p = ResetParams{Streams: []string{"upstream"}}
	}
	var toxics []toxic
	for _, stream := range p.Streams {
		toxics = append(toxics, toxic{name: "contested-reset-" + stream, typ: "reset_peer", stream: stream, attrs: map[string]any{"timeout": p.Delay.Milliseconds()}})
	}
	return armToxics(ctx, t, toxics...)
}
