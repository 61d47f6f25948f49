package command

import (
	"context"
	"fmt"
	"io"

	"github.com/fatih/color"

	"github.com/contested/contested/faultlayer"
	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/registry"
)

// layerUp brings the fault layer up and runs fault-preflight in required
// mode on it, as validate and mutants do before any test runs. When either
// fails it says so ("<who>: CANNOT RUN: …; <refusal>") and returns the
// error; a layer that came up is returned even then, for the caller to
// close.
func layerUp(ctx context.Context, cfg faultlayer.Config, who, refusal string, out io.Writer) (*faultlayer.Layer, faultlayer.Preflight, error) {
	l, err := faultlayer.Up(ctx, cfg)
	if err != nil {
		reportUpError(out, err)
		fmt.Fprintf(out, "%s: %s: the fault layer cannot run; %s\n", who, color.RedString("CANNOT RUN"), refusal)
		return nil, faultlayer.Preflight{}, err
	}
	p, err := Preflight(ctx, l, true, out)
	if err != nil {
		fmt.Fprintf(out, "%s: %s: fault-preflight failed; %s\n", who, color.RedString("CANNOT RUN"), refusal)
	}
	return l, p, err
}

// batteryEnv is the environment the battery's tests run in: the layer's
// coordinates, the results directory they write their records under, and
// the registry.
func batteryEnv(l *faultlayer.Layer, results, regPath string) []string {
	return append(l.Env(),
		faultrecord.EnvResultsDir+"="+results,
		registry.EnvPath+"="+regPath,
	)
}
