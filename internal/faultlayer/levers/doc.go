// Package levers is the fault set: every kind of fault the toolkit can
// force, each a value of one type in one file that knows its name and
// meaning, what it acts on, how to arm it and prove it from the injector
// side, how to heal it, what proves from the victim side that it landed,
// and how a seed schedules it (Draw, NewSchedule: when each fault lands, how
// long it holds, its own parameters, at levels 1 to 3). The registry's list
// of levers, the leg API of package contested and the cluster rig all use
// this set (All, Lookup).
//
//	lever             file                 acts on (Needs)        victim-side proof
//	disconnect        disconnect.go        a Toxiproxy proxy      Signals: refused, reset, EOF, ...
//	reset             reset.go             a Toxiproxy proxy      Signals: reset, EOF, ...
//	confirm-timeout   confirm_timeout.go   a Toxiproxy proxy      Signals: timeout (+ Proof.Confirmed)
//	burst             burst.go             a seeded plan          a perturbed delivery consumed
//	pool-exhaustion   pool_exhaustion.go   the victim database    Signals: 53300, timeout
//	crash-and-resume  crash_and_resume.go  a Process              the resumed worker's work
//	isolate           isolate.go           each client's proxy    the struck client's Signals, the others' work
//	latency           latency.go           a Toxiproxy proxy      an operation at least the latency slow
//	mass-restart      mass_restart.go      a Cluster              Judged: work before and after
//	partition         partition.go         a Cluster's link       Judged: the cut-off replica idle
//
// Using one:
//
//	f, err := levers.Reset.Arm(ctx, levers.Target{Toxiproxy: tp, Proxy: proxy})
//	if f != nil {
//		defer f.Heal(ctx)
//	}
//	if err != nil {
//		return err
//	}
//	in, what := f.Injector()          // the injector side: the toxic read back
//	... the victim's errors: count those whose levers.Classify is in Reset.Signals()
//	err = levers.Reset.Fired(levers.Proof{Injected: in, Victim: seen}) // nil: it fired
//
// Adding a lever is one new file and its test, and one entry in the set
// (lever.go), where contract levers come before cluster levers: declare
// its name, a value of a type that embeds spec (name, meaning, cluster,
// needs, signals, and its docs row) and implements Arm (and Fired, when
// its rule is more than "the injector proved it in place and the victim
// saw it"):
//
//	const NameLatency = "latency"
//
//	var Latency Lever = latency{spec{name: NameLatency, meaning: "...", needs: NeedProxy,
//		doc: Doc{Arm: "...", Injector: "...", Victim: "..."}}}
//
//	type latency struct{ spec }
//
//	func (l latency) Arm(ctx context.Context, t Target) (Fault, error) { ... }
//
// A lever whose victim sees an error names its Signals; one whose victim
// sees no error but slowed traffic arms a fault that implements Slowing,
// and a leg times the victim's round trips for it:
//
//	func (f *latencyFault) Slowed(took time.Duration) (bool, string) { ... }
//
// Its schedule comes from the seed: spec's Draw gives each window its
// timing (the step it is armed on, how long it holds); a lever whose
// faults vary draws its own parameters too, and reads them back in Arm:
//
//	type LatencyParams struct{ Latency, Jitter time.Duration }
//	func (p LatencyParams) String() string   { ... }
//	func (p LatencyParams) Traits() []string { ... } // its categorical choices
//
//	func (latency) Draw(s Streams, p Scope) []Window {
//		return drawWindows(s, p, func(r *rand.Rand, k Kind) Params {
//			return LatencyParams{Latency: between(r, 50, 500) * time.Millisecond, ...}
//		})
//	}
//
//	// in Arm: p, _ := t.Window.Params.(LatencyParams)
//
// The registry accepts it in a surface's legs at once, and contested.Start
// arms it through the same Target. The docs' pages that list the levers
// take it too (docs/concepts/levers.md, "Adding a lever", names each
// place; the docs tests hold them to the set). Its test arms it against the real
// Toxiproxy and Postgres (faulttest), proves it fired, heals it, and shows
// the unfired case is caught.
package levers
