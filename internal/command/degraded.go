package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/fatih/color"

	"github.com/contested/contested/internal/degraded"
	"github.com/contested/contested/internal/gate/report"
	seedpkg "github.com/contested/contested/internal/seed"
)

// DegradedOptions configures Degraded.
type DegradedOptions struct {
	Dir string
	// Keep saves a screenshot of every cell, not only of failing ones.
	Keep bool
	// Cells selects cells (flow/condition patterns); none runs them all.
	Cells []string
	// Tags are build tags for the front (the planted defects' tests).
	Tags string
	Out  io.Writer `json:"-"`
}

// Degraded runs the degraded-UX stage: it takes the stage lock (waiting
// for a stage that holds it) and restores the base shape a crashed stage
// left, brings the fault layer up (or attaches to the warm one) with the
// required preflight, then runs the matrix (degraded.Run) and writes
// fault/degraded-report.html with the cells and their screenshots. Exit:
// 0 every cell passed; 1 a cell failed (or a fault did not fire); 2 bad
// options or registry; 3 the fault layer, Chromium or a restore cannot
// run.
func Degraded(ctx context.Context, opts DegradedOptions) error {
	ctx, cancel := withSignals(ctx)
	defer cancel()
	out := opts.Out
	if err := checkVariables(varLayer); err != nil {
		return err
	}
	if _, err := degraded.Select(opts.Cells); err != nil {
		return fmt.Errorf("%w: -cells: %v", ErrUsage, err)
	}
	// CONTESTED_SEED replays a stage's plan; without it the stage draws one.
	given, err := seedpkg.FromEnv()
	seed := int64(given)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	ws, err := openWorkspace(opts.Dir)
	if err != nil {
		return err
	}
	if _, err := degraded.FindBrowser(""); err != nil {
		return fmt.Errorf("%w: degraded: %v", ErrCannotRun, err)
	}
	fmt.Fprintf(out, "%s run %s in %s\n", bold("degraded:"), ws.env.RunID, ws.env.ModuleRoot)
	hintIgnore(ctx, ws.env.ModuleRoot, ws.env.ResultsDir, out)
	lock, err := degraded.Hold(ctx, ws.env.ResultsDir.String(), "degraded", out)
	if err != nil {
		return interrupted(stageError(err))
	}
	defer lock.Release()
	cfg, err := layerConfig(ws, out)
	if err != nil {
		return err
	}
	l, env, _, err := layerUp(ctx, cfg, ws.env, "degraded", "refusing to run the stage", out)
	if err != nil {
		return interrupted(err)
	}
	defer l.Close(context.WithoutCancel(ctx))
	res, err := degraded.Run(ctx, degraded.Options{
		Layer: l, Registry: ws.reg, ModuleRoot: env.ModuleRoot, ResultsDir: env.ResultsDir.String(), RunID: env.RunID,
		Cells: opts.Cells, Keep: opts.Keep, Tags: opts.Tags, Seed: seed, Out: out,
	})
	if err != nil {
		return interrupted(stageError(err))
	}
	failed := res.Failed()
	page := report.Page{Title: "contested degraded", RunID: env.RunID, Layer: string(l.Kind), Green: len(failed) == 0, Degraded: report.Degraded(env.ResultsDir.String())}
	for _, c := range failed {
		page.Reasons = append(page.Reasons, "cell "+c.Cell+" failed")
	}
	if path, err := saveReport(env.ResultsDir, report.HTML{File: "degraded-report.html"}, page); err != nil {
		notSaved(out, "report", path, err)
	} else {
		fmt.Fprintf(out, "degraded: report %s; cells %s\n", path, env.ResultsDir.Join(degraded.DirName, "cells.json"))
	}
	if len(failed) > 0 {
		for _, c := range failed {
			shot := ""
			if c.Screenshot != "" {
				shot = "; screenshot " + env.ResultsDir.Join(c.Screenshot)
			}
			fmt.Fprintf(out, "  %s %s: %s%s\n      replay: CONTESTED_SEED=%d go tool mage degraded -cells=%s\n", color.RedString("FAIL"), c.Cell, strings.Join(c.Problems, "; "), shot, res.Seed, c.Cell)
		}
		return fmt.Errorf("%w: the degraded stage is RED: %d of %d cells failed", ErrRed, len(failed), len(res.Cells))
	}
	noun := "cells"
	if len(res.Cells) == 1 {
		noun = "cell"
	}
	fmt.Fprintf(out, "\ndegraded: %s (%d %s in %s)\n", color.GreenString("GREEN"), len(res.Cells), noun, res.Duration)
	return nil
}

// stageError maps the stage's errors to the commands' sentinels: no
// Chromium and a failed restore cannot run (exit 3), a bad cell pattern is
// bad input (exit 2).
func stageError(err error) error {
	switch {
	case errors.Is(err, degraded.ErrNoBrowser), errors.Is(err, degraded.ErrRestore):
		return fmt.Errorf("%w: %w", ErrCannotRun, err)
	case errors.Is(err, degraded.ErrNoCells):
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	return err
}
