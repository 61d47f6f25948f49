package command

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
)

// A job is a command as a worker runs it: the options its Mage target
// built, typed, arrive as one JSON value (Supervise) and are decoded into
// the command's own options; out is the worker's guarded output.
type job func(ctx context.Context, options []byte, out io.Writer) error

// jobs are the commands a worker runs, by the name the Mage target gives
// Supervise.
var jobs = map[string]job{
	"fault-preflight": typed(FaultPreflight, func(o *PreflightOptions, w io.Writer) { o.Out = w }),
	"validate":        typed(Validate, func(o *ValidateOptions, w io.Writer) { o.Out = w }),
	"plan":            typed(Plan, func(o *PlanOptions, w io.Writer) { o.Out = w }),
	"program-gate":    typed(ProgramGate, func(o *ProgramGateOptions, w io.Writer) { o.Out = w }),
	"contested":       typed(Contested, func(o *ContestedOptions, w io.Writer) { o.Out = w }),
	"arbitrate":       typed(Arbitrate, func(o *ArbitrateOptions, w io.Writer) { o.Out = w }),
	"cluster-tests":   typed(ClusterTests, func(o *ClusterOptions, w io.Writer) { o.Out = w }),
	"bench":           typed(Bench, func(o *BenchOptions, w io.Writer) { o.Out = w }),
	"history":         typed(History, func(o *HistoryOptions, w io.Writer) { o.Out = w }),
	"mutants":         typed(Mutants, func(o *MutantsOptions, w io.Writer) { o.Out = w }),
	"degraded":        typed(Degraded, func(o *DegradedOptions, w io.Writer) { o.Out = w }),
	"layer":           typed(Layer, func(o *LayerOptions, w io.Writer) { o.Out = w }),
	"certkey": typed(func(_ context.Context, o CertkeyOptions) error { return Certkey(o) },
		func(o *CertkeyOptions, w io.Writer) { o.Out = w }),
	"images": func(ctx context.Context, _ []byte, out io.Writer) error { return Images(ctx, out) },
	"sweep":  func(ctx context.Context, _ []byte, out io.Writer) error { return Sweep(ctx, out) },
}

// typed is the job that decodes its options into O, gives them the
// output, and runs the command.
func typed[O any](run func(context.Context, O) error, output func(*O, io.Writer)) job {
	return func(ctx context.Context, options []byte, out io.Writer) error {
		var o O
		if err := json.Unmarshal(options, &o); err != nil {
			return fmt.Errorf("internal error: the worker's options do not decode: %w", err)
		}
		output(&o, out)
		return run(ctx, o)
	}
}
