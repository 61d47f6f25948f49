package command

import (
	"context"
	"fmt"
	"io"

	"github.com/fatih/color"

	"github.com/contested/contested/contested/runenv"
	"github.com/contested/contested/faultlayer"
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
		l.Close(context.WithoutCancel(ctx))
		fmt.Fprintf(out, "%s: %s: fault-preflight failed; %s\n", who, color.RedString("CANNOT RUN"), refusal)
		return nil, env, p, err
	}
	return l, env, p, nil
}
