package command

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/fatih/color"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/internal/faultlayer"
	"github.com/contested/contested/internal/faultlayer/levers"
	"github.com/contested/contested/internal/runenv"
)

// layerUp brings the fault layer up and runs fault-preflight in required
// mode on it, as validate and mutants do before any test runs, and joins
// the layer to env (a shared CONTESTED_RUN_ID gets the suffix of the layer
// this process started). When either step fails it says so ("<who>: CANNOT
// RUN: …; <refusal>"), tears down what came up and returns the error.
func layerUp(ctx context.Context, cfg faultlayer.Config, env runenv.Env, who, refusal string, out io.Writer) (*faultlayer.Layer, runenv.Env, faultlayer.Preflight, error) {
	l, err := faultlayer.Up(ctx, cfg)
	if err != nil {
		reportUpError(out, err)
		fmt.Fprintf(out, "%s: %s: the fault layer cannot run; %s\n", who, color.RedString("CANNOT RUN"), refusal)
		return nil, env, faultlayer.Preflight{}, err
	}
	env = env.Attach(l.Env(), l.RunID)
	p, err := Preflight(ctx, l, true, env.ResultsDir, out)
	if err != nil {
		noteCannotRun(p)
		l.Close(context.WithoutCancel(ctx))
		fmt.Fprintf(out, "%s: %s: fault-preflight failed; %s\n", who, color.RedString("CANNOT RUN"), refusal)
		return nil, env, p, err
	}
	reclaimVictims(ctx, l.DB(), cfg.Canonical, "fault layer", out)
	return l, env, p, nil
}

// reclaimVictims drops the victim databases and roles that runs whose
// process is provably gone left on the test plane admin reaches
// (levers.ReclaimVictims: a run killed mid-battery on a warm or external
// layer, which outlives it) and says which; who prefixes the lines.
func reclaimVictims(ctx context.Context, admin *pgxpool.Pool, canonical []string, who string, out io.Writer) {
	dropped, err := levers.ReclaimVictims(ctx, admin, canonical)
	if len(dropped) > 0 {
		fmt.Fprintf(out, "%s: dropped %d victim databases and their roles, left by runs whose process is gone: %s\n", who, len(dropped), strings.Join(dropped, ", "))
	}
	if err != nil {
		fmt.Fprintf(out, "%s: reclaiming the victims of dead runs: %v\n", who, err)
	}
}
