package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gate/flakes"
	"github.com/contested/contested/internal/rundir"
	"github.com/contested/contested/internal/terminal"
)

// HistoryOptions configures History.
type HistoryOptions struct {
	Dir string
	// Test is the test to show (TestX or pkg.TestX); empty shows every
	// test that failed in the last runs.
	Test string
	// Last is how many of the test's runs to read; 0 means 20.
	Last int
	Out  io.Writer `json:"-"`
}

// defaultLast is how many runs a trend covers.
const defaultLast = 20

// History prints the flake history of a test, or of every test that
// failed in its last runs, from the local history (flakes.FileName under
// the results directory, or CONTESTED_HISTORY_DSN's database), and draws
// their trends in history/history.html (inline SVG: one column per run,
// the commit under each). It starts nothing else.
func History(ctx context.Context, opts HistoryOptions) error {
	ws, err := openWorkspace(opts.Dir)
	if err != nil {
		return err
	}
	last := opts.Last
	if last <= 0 {
		last = defaultLast
	}
	store, where, closeStore, err := historyStore(ctx, ws.env.ResultsDir, ws.reg.Guard.CanonicalDatabases)
	if err != nil {
		return err
	}
	defer closeStore()
	outs, err := readStore(ctx, store, "history", opts.Out)
	if err != nil {
		return err
	}
	if len(outs) == 0 {
		fmt.Fprintf(opts.Out, "history: no runs recorded yet in %s (every validate, contested and arbitrate appends to it)\n", where)
		return nil
	}
	if opts.Test != "" {
		s := flakes.Summarize(outs, opts.Test, last)
		s.Write(opts.Out)
		if len(s.Runs) > 0 {
			drawHistory(ws.env.ResultsDir, outs, []flakes.Summary{s}, opts.Out)
		}
		return nil
	}
	shown, tests := flakes.Failing(outs, last)
	for _, s := range shown {
		s.Write(opts.Out)
	}
	if len(shown) > 0 {
		drawHistory(ws.env.ResultsDir, outs, shown, opts.Out)
	}
	if len(shown) == 0 {
		fmt.Fprintf(opts.Out, "history: none of %d top-level tests failed in any of its last %d runs (%s)\n", tests, last, where)
	}
	return nil
}

// historyStore is the flake history: the database CONTESTED_HISTORY_DSN
// names when it is set (its schema migrated; a database [guard]
// canonical_databases lists is refused), else the local file under the
// results directory. where names it for messages, without a password.
func historyStore(ctx context.Context, root rundir.Dir, canonical []string) (store flakes.Store, where string, closeStore func(), err error) {
	dsn := strings.TrimSpace(os.Getenv(envvar.HistoryDSN))
	if dsn == "" {
		f := flakes.NewFile(root.String())
		return f, f.Path, func() {}, nil
	}
	p, err := flakes.OpenPostgres(ctx, dsn, canonical)
	if err != nil {
		if errors.Is(err, flakes.ErrBadDSN) || errors.Is(err, flakes.ErrGuard) {
			err = fmt.Errorf("%w: %w", ErrUsage, err)
		}
		return nil, "", nil, err
	}
	return p, "the history database (" + envvar.HistoryDSN + ")", p.Close, nil
}

// appendHistory appends the battery's outcomes to the flake history.
func appendHistory(ctx context.Context, root rundir.Dir, canonical []string, command, runID, shardSpec string, res *battery.Result, recs []faultrecord.Record, rev flakes.Revision, out io.Writer) {
	if res == nil {
		return
	}
	outs := flakes.FromBattery(res, recs, rev.Meta(flakes.Meta{RunID: runID, Shard: shardSpec, Command: command, Time: time.Now().UTC()}))
	saveHistory(ctx, root, canonical, command, outs, out)
}

// appendRuns appends to the flake history the outcomes of the runs one
// contested or arbitrate run made (each seed, each rerun), all under its
// run id, each test with the leg and seed of its own run's records: a
// test that failed and passed within the run is flaky in it.
func appendRuns(ctx context.Context, root rundir.Dir, canonical []string, command, runID string, runs []contract.SeedRun, rev flakes.Revision, out io.Writer) {
	meta := rev.Meta(flakes.Meta{RunID: runID, Command: command, Time: time.Now().UTC()})
	var outs []flakes.Outcome
	for _, r := range runs {
		for _, o := range flakes.FromBattery(&battery.Result{Tests: r.Tests}, r.Records, meta) {
			if o.Seed == 0 {
				o.Seed = r.Seed // a test that armed no leg ran under its run's seed
			}
			outs = append(outs, o)
		}
	}
	saveHistory(ctx, root, canonical, command, outs, out)
}

// saveHistory appends outs to the flake history in one append (one
// transaction in a database), saying on out when it could not.
func saveHistory(ctx context.Context, root rundir.Dir, canonical []string, command string, outs []flakes.Outcome, out io.Writer) {
	if len(outs) == 0 {
		return
	}
	store, where, closeStore, err := historyStore(ctx, root, canonical)
	if err != nil {
		notSaved(out, command, "the flake history", err)
		return
	}
	defer closeStore()
	if err := store.Append(ctx, outs); err != nil {
		notSaved(out, command, where, err)
	}
}

// showHistory prints a test's trend before the ladder walks it, when the
// history has runs of it.
func showHistory(outs []flakes.Outcome, test string, out io.Writer) {
	if s := flakes.Summarize(outs, test, defaultLast); len(s.Runs) > 0 {
		s.Write(out)
	}
}

// readHistory is the local flake history, nil when there is none or it
// cannot be read (said on out).
func readHistory(ctx context.Context, root rundir.Dir, canonical []string, out io.Writer) []flakes.Outcome {
	store, _, closeStore, err := historyStore(ctx, root, canonical)
	if err != nil {
		fmt.Fprintf(out, "ladder: %v (judging from the reruns alone)\n", err)
		return nil
	}
	defer closeStore()
	outs, err := readStore(ctx, store, "ladder", out)
	if err != nil {
		fmt.Fprintf(out, "ladder: %v (judging from the reruns alone)\n", err)
	}
	return outs
}

// reportHistory is the flake history the report draws its trends from,
// nil when there is none or it cannot be read (said on out).
func reportHistory(ctx context.Context, root rundir.Dir, canonical []string, out io.Writer) []flakes.Outcome {
	store, _, closeStore, err := historyStore(ctx, root, canonical)
	if err != nil {
		fmt.Fprintf(out, "report: no flake history drawn: %v\n", err)
		return nil
	}
	defer closeStore()
	outs, err := readStore(ctx, store, "report", out)
	if err != nil {
		fmt.Fprintf(out, "report: no flake history drawn: %v\n", err)
		return nil
	}
	return outs
}

// readStore reads the flake history; what the reader skipped (a line too
// long or not an outcome, the oldest part of a file over its cap) is said
// on out, prefixed with who, and the rest is returned.
func readStore(ctx context.Context, store flakes.Store, who string, out io.Writer) ([]flakes.Outcome, error) {
	outs, err := store.Read(ctx)
	if errors.Is(err, flakes.ErrPartial) {
		fmt.Fprintf(out, "%s: flake history %s\n", who, terminal.Escape(err.Error()))
		return outs, nil
	}
	return outs, err
}

// readHistoryIf is readHistory when the ladder will walk.
func readHistoryIf(ctx context.Context, root rundir.Dir, canonical []string, walk bool, out io.Writer) []flakes.Outcome {
	if !walk {
		return nil
	}
	return readHistory(ctx, root, canonical, out)
}

// historyPage is the trends' page, under the results directory.
const historyPage = "history/history.html"

// drawHistory writes the trends of sums as historyPage and names it.
func drawHistory(root rundir.Dir, outs []flakes.Outcome, sums []flakes.Summary, out io.Writer) {
	path, err := saveArtifact(root, historyPage, []byte(flakes.HTML("contested flake history", outs, sums)))
	if err != nil {
		notSaved(out, "history", path, err)
		return
	}
	fmt.Fprintf(out, "history: trend drawn in %s\n", path)
}
