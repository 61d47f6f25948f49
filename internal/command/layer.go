package command

import (
	"context"
	"fmt"
	"io"

	"github.com/fatih/color"

	"github.com/contested/contested/internal/faultlayer"
)

// LayerOptions configures Layer.
type LayerOptions struct {
	Action string    // up, down or status ("" is status)
	Out    io.Writer `json:"-"`
}

// Layer manages the warm layer of the pre-push loop: up starts a
// containers layer that outlives the command (or says the current one is
// already up; a stale one is recreated), status prints what runs, where,
// since when and from which images, down removes it. validate, contested,
// arbitrate and go test attach to it while it is up (faultlayer.Up).
func Layer(ctx context.Context, opts LayerOptions) error {
	ctx, cancel := withSignals(ctx)
	defer cancel()
	out := opts.Out
	switch opts.Action {
	case "up", "down", "status", "":
	default:
		return fmt.Errorf("%w: layer %q: want up, down or status (go tool mage layer up)", ErrUsage, opts.Action)
	}
	if err := checkVariables(varLayer); err != nil {
		return err
	}
	cfg, err := faultlayer.ConfigFromEnv()
	if err != nil {
		return err
	}
	if cfg.Canonical, err = canonicalHere(); err != nil {
		return err
	}
	cfg.Log = out
	switch opts.Action {
	case "up":
		if cfg.Kind != faultlayer.Auto && cfg.Kind != faultlayer.Containers {
			fmt.Fprintf(out, "layer: the warm layer runs on containers; CONTESTED_LAYER=%s is for per-run layers and is ignored here\n", cfg.Kind)
		}
		rec, reused, err := faultlayer.WarmUp(ctx, cfg)
		if err != nil {
			return interrupted(fmt.Errorf("layer up: %w", err))
		}
		if reused {
			fmt.Fprintf(out, "layer: %s (run %s), nothing to do\n", color.GreenString("the warm layer is already up and current"), rec.RunID)
		} else {
			fmt.Fprintf(out, "layer: %s (run %s)\n", color.GreenString("warm layer up"), rec.RunID)
		}
		st, err := faultlayer.WarmStatus(ctx, cfg)
		if err == nil {
			faultlayer.FormatWarm(out, st)
		}
		fmt.Fprintln(out, "layer: validate, contested, arbitrate and go test attach to it; go tool mage layer down removes it")
		return nil
	case "down":
		swept, err := faultlayer.WarmDown(ctx, out)
		if err != nil {
			return interrupted(fmt.Errorf("layer down: %w", err))
		}
		fmt.Fprintf(out, "layer: down (%s removed)\n", swept)
		return nil
	default:
		st, err := faultlayer.WarmStatus(ctx, cfg)
		if err != nil {
			return fmt.Errorf("layer status: %w", err)
		}
		faultlayer.FormatWarm(out, st)
		return nil
	}
}
