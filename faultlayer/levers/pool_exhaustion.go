package levers

import "context"

// NamePoolExhaustion is PoolExhaustion's name.
const NamePoolExhaustion = "pool-exhaustion"

// PoolExhaustion has Target.Armer hold the victim database's connections
// up to a connection limit it sets (Target.Hold above the backends there
// now), so the victim's pool cannot grow. The injector side sees the
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
