package levers

import (
	"context"
)

// NamePoolExhaustion is PoolExhaustion's name.
const NamePoolExhaustion = "pool-exhaustion"

// PoolExhaustion has Target.Armer set the victim database's connection
// limit to the client backends it has (plus Target.Hold connections the
// armer opens and holds, when a test asks for them), so the victim's pool
// cannot grow while the connections it has go on working. The injector
// side sees the database at its limit in pg_stat_activity; the victim side
// is a refused connection (SQLSTATE 53300) or an acquire that times out.
//
// Arming opens no connection unless Target.Hold asks for some: held
// connections take slots a victim could never tell from the limit's own,
// and opening them was most of what a leg of this lever cost.
var PoolExhaustion Lever = poolExhaustion{spec{
	name:    NamePoolExhaustion,
	meaning: "the database is held at its connection limit until the victim's pool runs dry",
	needs:   NeedDatabase,
	signals: []Signal{SigTooMany, SigTimeout},
	doc: Doc{
		Arm:      "PgFaultArmer sets the victim database's connection limit to the client backends it has, counted again and lowered if one left meanwhile; it opens no connection of its own unless `contested.Hold(n)` asks it to hold n (opened at once, counted in the limit)",
		Injector: "`pg_stat_activity` at the limit",
		Victim:   "SQLSTATE 53300 (or an acquire timeout)",
		Levels: [3]string{
			"sets the database's connection limit to the backends it has: the victim's pool cannot grow",
			"exhaust it again",
			"exhausts it again, as the pool refills",
		},
	},
}}

type poolExhaustion struct{ spec }

func (p poolExhaustion) Arm(ctx context.Context, t Target) (Fault, error) {
	if err := t.check(p, p.needs); err != nil {
		return nil, err
	}
	e, err := t.Armer.Exhaust(ctx, t.DSN, t.Hold)
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
