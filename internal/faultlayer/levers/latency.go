package levers

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// NameLatency is Latency's name.
const NameLatency = "latency"

// Latency slows the victim's path to Postgres down without breaking it: a
// Toxiproxy latency toxic on the proxy's downstream delays every answer by
// the drawn latency, give or take the drawn jitter. Nothing fails, so no
// error signal proves it: the victim side is an operation through the
// proxy that took at least the least delay the toxic adds (Least), which
// a leg times for it (Slowing). The injector side reads the toxic back
// from the proxy's toxic list.
var Latency Lever = latency{spec{
	name:    NameLatency,
	meaning: "every answer through the proxy arrives late: the victim's operations slow down without failing",
	needs:   NeedProxy,
	doc: Doc{
		Arm:      "`latency` toxic on the proxy's downstream, its latency and jitter as the schedule draws",
		Injector: "toxic read back",
		Victim:   "an operation through the proxy took at least the latency less the jitter",
		Levels: [3]string{
			"delays every answer through the proxy by 100-300ms, half the time with a jitter of up to a fifth of that",
			"are heavier: 300-600ms",
			"delays answers again by 50-150ms while the clients recover",
		},
	},
}}

type latency struct{ spec }

// LatencyParams are one latency fault's parameters: the delay the toxic
// adds to every answer, and the jitter around it.
type LatencyParams struct {
	Latency, Jitter time.Duration
}

// defaultLatency is the fault a window without parameters arms.
var defaultLatency = LatencyParams{Latency: 200 * time.Millisecond}

func (p LatencyParams) String() string {
	return fmt.Sprintf("latency %v jitter %v", p.Latency, p.Jitter)
}

// Traits: whether the delay varies from one answer to the next.
func (p LatencyParams) Traits() []string {
	if p.Jitter > 0 {
		return []string{"jitter"}
	}
	return []string{"steady"}
}

// Least is the least delay the toxic adds to an answer: Toxiproxy draws
// each delay within the jitter around the latency.
func (p LatencyParams) Least() time.Duration { return max(0, p.Latency-p.Jitter) }

// Slowed reports whether an operation that took took shows the fault: it
// took at least Least. A zero Least proves nothing.
func (p LatencyParams) Slowed(took time.Duration) bool { return p.Least() > 0 && took >= p.Least() }

// latencyRange is the latency each kind of window draws, in milliseconds.
var latencyRange = map[Kind][2]int{Base: {100, 300}, More: {300, 600}, Recovery: {50, 150}}

// Draw: each fault delays answers by 100-300ms, half of them with a
// jitter of up to a fifth of that; level 2's are heavier (300-600ms);
// level 3's, while the clients recover, lighter (50-150ms).
func (latency) Draw(s Streams, p Scope) []Window {
	return drawWindows(s, p, func(r *rand.Rand, k Kind) Params {
		ms := latencyRange[k]
		d := between(r, ms[0], ms[1]) * time.Millisecond
		var jitter time.Duration
		if r.IntN(2) == 1 {
			jitter = between(r, 0, int(d/time.Millisecond)/5) * time.Millisecond
		}
		return LatencyParams{Latency: d, Jitter: jitter}
	})
}

func (l latency) Arm(ctx context.Context, t Target) (Fault, error) {
	if err := t.check(l, l.needs); err != nil {
		return nil, err
	}
	p, ok := t.Window.Params.(LatencyParams)
	if !ok || p.Latency <= 0 {
		p = defaultLatency
	}
	f, err := armToxics(ctx, t, toxic{name: "contested-latency", typ: "latency", stream: "downstream",
		attrs: map[string]any{"latency": p.Latency.Milliseconds(), "jitter": p.Jitter.Milliseconds()}})
	return latencyFault{f, p}, err
}

// latencyFault is an armed latency toxic: no error proves it, a round trip
// through it that took at least the least delay does (Slowing).
type latencyFault struct {
	Fault
	p LatencyParams
}

func (f latencyFault) Slowed(took time.Duration) (bool, string) {
	return f.p.Slowed(took), fmt.Sprintf("a round trip of at least %v, the latency less the jitter", f.p.Least())
}
