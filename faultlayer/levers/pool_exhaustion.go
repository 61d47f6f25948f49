package levers

import (
	"context"
	"fmt"
	"math/rand/v2"
)

// NamePoolExhaustion is PoolExhaustion's name.
const NamePoolExhaustion = "pool-exhaustion"

// PoolExhaustion has Target.Armer hold the victim database's connections
// up to a connection limit it sets (Target.Hold, or else the schedule's
// count, above the backends there now), so the victim's pool cannot grow. The injector side sees the
// database at its limit in pg_stat_activity; the victim side is a refused
// connection (SQLSTATE 53300) or an acquire that times out.
var PoolExhaustion Lever = poolExhaustion{spec{
	name:    NamePoolExhaustion,
	meaning: "database connections are held until the victim's pool runs dry",
	needs:   NeedDatabase,
	signals: []Signal{SigTooMany, SigTimeout},
}}

func init() { register(50, PoolExhaustion) }

type poolExhaustion struct{ spec }

// ExhaustParams are one pool-exhaustion fault's parameters: how many
// connections the armer holds above the backends the database has.
type ExhaustParams struct{ Conns int }

func (p ExhaustParams) String() string   { return fmt.Sprintf("holds %d connections", p.Conns) }
func (p ExhaustParams) Traits() []string { return []string{fmt.Sprintf("holds-%d", p.Conns)} }

// Draw: the armer holds 1-2 connections; level 2's faults hold 2-4, level
// 3's, which land as the pool refills, 1.
func (poolExhaustion) Draw(s Streams, p Scope) []Window {
	return drawWindows(s, p, func(r *rand.Rand, k Kind) Params {
		switch k {
		case More:
			return ExhaustParams{Conns: 2 + r.IntN(3)}
		case Recovery:
			return ExhaustParams{Conns: 1}
		}
		return ExhaustParams{Conns: 1 + r.IntN(2)}
	})
}

func (p poolExhaustion) Arm(ctx context.Context, t Target) (Fault, error) {
	if err := t.check(p, p.needs); err != nil {
		return nil, err
	}
	hold := t.Hold
	if params, ok := t.Window.Params.(ExhaustParams); ok && hold == 0 {
		hold = params.Conns
	}
	e, err := t.Armer.Exhaust(ctx, t.DSN, hold)
	if err != nil {
		return &exhaustFault{}, err // Exhaust released what it held
	}
	return &exhaustFault{e: e}, nil
}

type exhaustFault struct{ e *Exhaustion }

func (f *exhaustFault) Injector() (bool, string) {
	if f.e == nil {
		return false, ""
	}
	return f.e.Full(), f.e.String()
}

func (f *exhaustFault) Heal(ctx context.Context) error {
	if f.e == nil {
		return nil
	}
	return f.e.Release(ctx)
}
