package command

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/gate/flakes"
	"github.com/contested/contested/internal/battery"
)

// HistoryOptions configures History.
type HistoryOptions struct {
	Dir string
	// Test is the test to show (TestX or pkg.TestX); empty shows every
	// test that failed in the last runs.
	Test string
	// Last is how many of the test's runs to read; 0 means 20.
	Last int
	Out  io.Writer
}

// defaultLast is how many runs a trend covers.
const defaultLast = 20

// History prints the flake history of a test, or of every test that
// failed in its last runs, from the local history (flakes.FileName under
// the results directory). It starts nothing and writes nothing.
func History(ctx context.Context, opts HistoryOptions) error {
	ws, err := openWorkspace(opts.Dir)
	if err != nil {
		return err
	}
	last := opts.Last
	if last <= 0 {
		last = defaultLast
	}
	store := flakes.NewFile(ws.env.ResultsDir)
	outs, err := store.Read(ctx)
	if err != nil {
		return err
	}
	if len(outs) == 0 {
		fmt.Fprintf(opts.Out, "history: no runs recorded yet in %s (every validate appends to it)\n", store.Path)
		return nil
	}
	if opts.Test != "" {
		flakes.Summarize(outs, opts.Test, last).Write(opts.Out)
		return nil
	}
	var tests []string
	for _, o := range outs {
		if top, _, _ := strings.Cut(o.Test, "/"); !slices.Contains(tests, o.Package+"."+top) {
			tests = append(tests, o.Package+"."+top)
		}
	}
	slices.Sort(tests)
	shown := 0
	for _, t := range tests {
		if s := flakes.Summarize(outs, t, last); s.Failed > 0 {
			s.Write(opts.Out)
			shown++
		}
	}
	if shown == 0 {
		fmt.Fprintf(opts.Out, "history: none of %d tests failed in its last %d runs (%s)\n", len(tests), last, store.Path)
	}
	return nil
}

// appendHistory appends the battery's outcomes to the local history.
func appendHistory(ctx context.Context, root, command, runID, shardSpec string, res *battery.Result, recs []faultrecord.Record, commit string, out io.Writer) {
	if res == nil {
		return
	}
	store := flakes.NewFile(root)
	outs := flakes.FromBattery(res, recs, flakes.Meta{RunID: runID, Shard: shardSpec, Commit: commit, Command: command, Time: time.Now().UTC()})
	if err := store.Append(ctx, outs); err != nil {
		notSaved(out, command, store.Path, err)
	}
}

// showHistory prints a test's trend before the ladder walks it, when the
// history has runs of it.
func showHistory(ctx context.Context, root, test string, out io.Writer) {
	outs, err := flakes.NewFile(root).Read(ctx)
	if err != nil {
		fmt.Fprintf(out, "ladder: %v\n", err)
		return
	}
	if s := flakes.Summarize(outs, test, defaultLast); len(s.Runs) > 0 {
		s.Write(out)
	}
}

// readHistory is the local flake history, nil when there is none or it
// cannot be read (said on out).
func readHistory(ctx context.Context, root string, out io.Writer) []flakes.Outcome {
	outs, err := flakes.NewFile(root).Read(ctx)
	if err != nil {
		fmt.Fprintf(out, "ladder: %v (judging from the reruns alone)\n", err)
	}
	return outs
}

// readHistoryIf is readHistory when the ladder will walk.
func readHistoryIf(ctx context.Context, root string, walk bool, out io.Writer) []flakes.Outcome {
	if !walk {
		return nil
	}
	return readHistory(ctx, root, out)
}
