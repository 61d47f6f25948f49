package command

import (
	"context"
	"fmt"
	"io"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/faultlayer/noise"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gate/shard"
	"github.com/contested/contested/internal/gate/verdict"
	"github.com/contested/contested/internal/rundir"
	"github.com/contested/contested/internal/runenv"
	seedpkg "github.com/contested/contested/internal/seed"
)

// noiseSpec is the neighbour to arm beside a battery: CONTESTED_NOISE,
// else the registry's [battery] noise.
func noiseSpec(reg noise.Spec) (noise.Spec, error) {
	spec, set, err := noise.FromEnv()
	if err != nil {
		return noise.Spec{}, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if !set {
		spec = reg
	}
	return spec, nil
}

// armNeighbour starts the neighbour who (validate, contested) runs its
// tests beside, when one is asked for: seeded by CONTESTED_SEED when set,
// else a fresh seed. Its writers' files go under the results directory.
func armNeighbour(ctx context.Context, who string, reg noise.Spec, env runenv.Env, out io.Writer) (*noise.Neighbour, error) {
	spec, err := noiseSpec(reg)
	if err != nil || spec.Zero() {
		return nil, err
	}
	given, err := seedpkg.FromEnv()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	seed := int64(given.OrNew())
	if spec.IO > 0 {
		noise.RemoveStale(env.ResultsDir.String(), out)
	}
	n, err := noise.Start(ctx, spec, seed, env.ResultsDir.String())
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "%s: a noisy neighbour beside the tests: %s (seed %d); replay: %s\n", who, spec, seed, noise.Replay(spec, seed))
	return n, nil
}

// recordNeighbour stops the neighbour, says what it did and writes its
// record (class capacity) under root's fault directory: armed, and fired
// only when both sides saw it land. One that did not is judged as every
// leg's unfired fault is, and the cause is said. It returns the evidence,
// nil when no neighbour ran.
func recordNeighbour(n *noise.Neighbour, who string, root rundir.Dir, env runenv.Env, out io.Writer, victim string) *noise.Evidence {
	if n == nil {
		return nil
	}
	e := n.Stop()
	e.Victim = victim
	r := e.Record("battery", noise.Replay(e.Spec, e.Seed))
	if r.Fired {
		fmt.Fprintf(out, "%s: the neighbour fired: %s; %s\n", who, e.Injector(), e.VictimSide())
	} else {
		v, why := notProven(r)
		fmt.Fprintf(out, "%s: the neighbour did NOT fire, %s (%s): %s; %s\n", who, v, why, e.Injector(), e.VictimSide())
	}
	mod, _ := contract.ModulePath(env.ModuleRoot)
	rec, err := faultrecord.NewRecorder(mod, faultrecord.WithResultsDir(root.String()), faultrecord.WithRunID(env.RunID), faultrecord.WithModuleRoot(env.ModuleRoot))
	if err == nil {
		_, err = rec.Write(r)
	}
	if err != nil {
		fmt.Fprintf(out, "%s: the neighbour's record was not written: %v\n", who, err)
	}
	return &e
}

// notProven judges an unfired neighbour's record by the rules that judge
// every leg (verdict.Assign over its one run): a fault armed and not
// proven to land is INCONCLUSIVE-fault-not-proven, whatever armed it.
func notProven(r faultrecord.Record) (verdict.Verdict, string) {
	return verdict.Assign([]verdict.Run{{Seed: r.Seed, Attempted: true, Armed: 1}}, 1)
}

// noiseReasons is what keeps validate from GREEN on the neighbour's
// account: one that did not fire, with its verdict and its cause (the
// gate refuses its record in phase 3 too, without the cause). A shard's
// is left to the union, as phase 3 is.
func (v *validation) noiseReasons() []string {
	if v.noise == nil || v.noise.Fired() || v.shard != nil {
		return nil
	}
	r := v.noise.Record("battery", "")
	judged, _ := notProven(r)
	return []string{fmt.Sprintf("the neighbour %s/%s/%s is %s: %s", r.Surface, r.Class, r.Leg, judged, v.noise.Cause())}
}

// armNoise starts the neighbour validate's battery runs beside.
func (v *validation) armNoise(ctx context.Context) (*noise.Neighbour, error) {
	return armNeighbour(ctx, "validate", v.reg.Battery.Noise, v.env, v.out)
}

// recordNoise stops it and writes its record among the battery's, so that
// the gate counts it, with the battery's own slowdown beside the probe's:
// its tests against the last whole run's times, when there are some.
func (v *validation) recordNoise(n *noise.Neighbour, res *battery.Result) {
	victim := ""
	if prev, err := shard.ReadTimings(v.env.ResultsDir.String()); err == nil && res != nil {
		victim = prev.SaySlowdown(res)
	}
	if e := recordNeighbour(n, "validate", v.env.ResultsDir, v.env, v.out, victim); e != nil {
		v.noise, v.rep.Noise = e, e
	}
}

// surfaceIDs are the surfaces whose records the gate reads: the registry's,
// and the battery's own when a neighbour was armed beside it.
func (v *validation) surfaceIDs() []string {
	ids := v.reg.IDs()
	if v.noise != nil {
		ids = append(ids, noise.Surface)
	}
	return ids
}
