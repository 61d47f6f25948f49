// Package levers is the fault set: every kind of fault the toolkit can
// force, each a value of one type in one file that knows its name and
// meaning, what it acts on, how to arm it and prove it from the injector
// side, how to heal it, what proves from the victim side that it landed,
// and how a seed schedules it (Draw, NewSchedule: when each fault lands, how
// long it holds, its own parameters, at levels 1 to 3). The registry's list
// of levers, the leg API of package contested and the cluster rig all use
// this set (All, Lookup).
//
// The levers are listed in one place, set in lever.go (All gives them in
// its order); what each does and proves, and what it draws at each level,
// is its Doc, from which the docs' tables are written and checked: see
// docs/concepts/levers.md.
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
// Adding a lever touches these files, and no other list of levers:
//
//   - its own file and its test (latency.go, latency_test.go): its name
//     constant and a value of a type that embeds spec (name, meaning,
//     cluster, needs, signals, and its Doc: its rows in the docs' tables)
//     and implements Arm (and Fired, when its rule is more than "the
//     injector proved it in place and the victim saw it"); when it draws
//     parameters of its own, its test gives their type a checkTable method,
//     their ranges as the levels table says them (TestTheLevelsTableHolds
//     refuses parameters without one);
//   - one entry in set (lever.go), where contract levers come before
//     cluster levers;
//   - its two docs rows, in docs/concepts/levers.md and
//     docs/concepts/seeds-and-levels.md: the docs tests
//     (internal/doccheck) fail until they are there, and print the tables
//     to paste;
//   - for a contract lever, by package contested's convention, its
//     constant (contested/lever.go) and its scenario in
//     TestEveryLeverFires (contested/leg_test.go), with its leg in
//     contested/testdata/surfaces.toml;
//   - for a contract lever, its name in the first sentence of README.md
//     and docs/index.md, held to the set by the docs tests.
//
// Its file, in outline:
//
//	const NameLatency = "latency"
//
//	var Latency Lever = latency{spec{name: NameLatency, meaning: "...", needs: NeedProxy,
//		doc: Doc{Arm: "...", Injector: "...", Victim: "...",
//			Levels: [3]string{"...", "...", "..."}}}}
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
// arms it through the same Target. Its test arms it against the real
// Toxiproxy and Postgres (faulttest), proves it fired, heals it, and shows
// the unfired case is caught.
package levers
