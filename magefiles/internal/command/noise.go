package command

import (
	"context"
	"fmt"

	"github.com/contested/contested/contested/runenv"
	"github.com/contested/contested/faultlayer/noise"
	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/gate/contract"
)

// noiseSpec is the neighbour to arm beside the battery: CONTESTED_NOISE,
// else the registry's [battery] noise.
func noiseSpec(reg noise.Spec) (noise.Spec, error) {
	spec, set, err := runenv.Noise()
	if err != nil {
		return noise.Spec{}, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if !set {
		spec = reg
	}
	return spec, nil
}

// armNoise starts the neighbour validate runs its battery beside, when one
// is asked for: seeded by CONTESTED_SEED when set, else a fresh seed.
func (v *validation) armNoise(ctx context.Context) (*noise.Neighbour, error) {
	spec, err := noiseSpec(v.reg.Battery.Noise)
	if err != nil || spec.Zero() {
		return nil, err
	}
	seed, err := runenv.SeedOrNew()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	n, err := noise.Start(ctx, spec, seed, v.env.ResultsDir)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(v.out, "validate: a noisy neighbour beside the battery: %s (seed %d); replay: %s\n", spec, seed, noise.Replay(spec, seed))
	return n, nil
}

// recordNoise stops the neighbour and writes its record (class capacity)
// among the battery's, so that the gate counts it: armed, and fired only
// when both sides saw it land.
func (v *validation) recordNoise(n *noise.Neighbour) {
	if n == nil {
		return
	}
	e := n.Stop()
	v.noise, v.rep.Noise = &e, &e
	fired := "fired"
	if !e.Fired() {
		fired = "did NOT fire"
	}
	fmt.Fprintf(v.out, "validate: the neighbour %s: %s; %s\n", fired, e.Injector(), e.VictimSide())
	mod, _ := contract.ModulePath(v.env.ModuleRoot)
	rec, err := faultrecord.NewRecorder(mod, faultrecord.WithResultsDir(v.env.ResultsDir), faultrecord.WithRunID(v.env.RunID), faultrecord.WithModuleRoot(v.env.ModuleRoot))
	if err == nil {
		_, err = rec.Write(e.Record("battery", noise.Replay(e.Spec, e.Seed)))
	}
	if err != nil {
		fmt.Fprintf(v.out, "validate: the neighbour's record was not written: %v\n", err)
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
