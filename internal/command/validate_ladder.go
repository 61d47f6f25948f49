package command

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/fatih/color"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gate/ladder"
	"github.com/contested/contested/internal/legstart"
	"github.com/contested/contested/internal/terminal"
)

// arbitrate walks the ladder for every failing test of the battery, the
// cheapest to decide first, within the budget, and lists every failure
// (and every package that failed outside a test) with the evidence the
// walk gathered.
func (v *validation) arbitrate(ctx context.Context, res *battery.Result, budget time.Duration) map[string]*contract.Result {
	failures := contract.LeafFailures(res)
	starts, skipped, err := legstart.Read(v.env.ResultsDir.String())
	if err != nil || skipped > 0 {
		fmt.Fprintf(v.out, "validate: the legs' start records: %d skipped, %v\n", skipped, err)
	}
	v.starts = legstart.OfRun(starts, v.env.RunID)
	var records []faultrecord.Record
	if len(failures) > 0 {
		// An oracle's violation in them outranks the machine's load.
		records, _ = contract.ReadRecords(v.faultDir())
	}
	contracts := map[string]*contract.Result{}
	v.rep.Ladder, v.rep.NotArbitrated = arbitrateAll(ctx, failures, budget, ladder.Options{
		Env: v.env, Registry: v.reg, Preflight: &v.preflight, Capacity: &v.capacity, Contracts: contracts, Seen: res, SeenRunID: v.env.RunID, Out: v.out, Binaries: v.binaries,
		Starts: starts, Noise: v.noise, Records: records, Quiet: ladder.NewQuiet(), Interference: v.interference, Replay: v.replay,
		History: readHistoryIf(ctx, v.env.ResultsDir, v.reg.Guard.CanonicalDatabases, len(failures) > 0, v.out),
	}, v.out)
	// A walk's evidence replaces the first verdict's likely owner; a
	// failure no walk finished keeps its likely owner, unconfirmed.
	first := map[string]ladder.Plain{}
	for _, p := range v.rep.BatteryFailures {
		if p.Confirming {
			first[p.Package+"."+p.Test] = p
		}
	}
	v.rep.BatteryFailures = nil
	walked := map[string]*ladder.Outcome{}
	for _, o := range v.rep.Ladder {
		walked[o.Package+"."+o.Test] = o
	}
	for _, t := range failures {
		o := walked[t.ID()]
		p, likely := first[t.ID()]
		if o != nil && o.Incomplete == "" || !likely {
			p = ladder.PlainTest(t).With(o)
		}
		v.rep.BatteryFailures = append(v.rep.BatteryFailures, p)
	}
	for _, p := range res.FailedPackages() {
		v.rep.BatteryFailures = append(v.rep.BatteryFailures, ladder.PlainPackage(p, testsRan(res, p.Name)))
	}
	return contracts
}

// arbitrateAll walks the ladder for each failing test, until the budget
// is spent. Failures whose confirmation may run beside others' (legs whose
// evidence is an oracle's violation: ladder.Beside) are walked at once, a
// few at a time; then every other one alone, the cheapest to decide first
// (the shortest in the battery: a rerun costs about what the test took),
// so that what needs a quiet machine gets one. A walk the budget ends
// reports what it learned so far; the tests it did not reach are returned
// with the command that arbitrates them. Outcomes come back in the order
// the tests were walked.
func arbitrateAll(ctx context.Context, tests []battery.Test, budget time.Duration, lo ladder.Options, out io.Writer) ([]*ladder.Outcome, []string) {
	if len(tests) == 0 {
		return nil, nil
	}
	tests = slices.Clone(tests)
	slices.SortStableFunc(tests, func(a, b battery.Test) int { return cmp.Compare(a.Elapsed, b.Elapsed) })
	var beside, alone []battery.Test
	for _, t := range tests {
		if ladder.Beside(t, lo) {
			beside = append(beside, t)
		} else {
			alone = append(alone, t)
		}
	}
	fmt.Fprintf(out, "\nvalidate: walking the arbitration ladder for %s (budget %s, %s)", count(len(tests), "failing test"), budget, envvar.LadderBudget)
	if len(beside) > 1 {
		fmt.Fprintf(out, ": %d oracle violations of legs confirmed at once, each on its own proxy and database, then %d alone, the quickest first", len(beside), len(alone))
	} else {
		fmt.Fprint(out, ", the quickest first")
	}
	fmt.Fprintln(out)
	deadline := time.Now().Add(budget)
	w := &lockedWriter{w: out}
	lo.Out = w
	progress := &progress{w: w, total: len(tests)}
	outcomes := make([]*ladder.Outcome, len(tests))
	missed := make([]bool, len(tests))
	walk := func(i int, t battery.Test, opts ladder.Options) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			missed[i] = true
			return
		}
		progress.start(t)
		wctx, cancel := context.WithDeadline(ctx, deadline)
		o, err := ladder.Walk(wctx, t.ID(), opts)
		cancel()
		if err != nil {
			fmt.Fprintf(w, "ladder: %s: %s\n", terminal.Escape(t.ID()), terminal.Escape(err.Error()))
			missed[i] = true
			return
		}
		if !o.NoFailure() {
			saveOutcome(lo.Env.ResultsDir, o, w)
		}
		outcomes[i] = o
	}
	order := append(slices.Clone(beside), alone...)
	// The walks beside each other: each with its own map of contracts run
	// in isolation, merged after.
	var wg sync.WaitGroup
	slots := make(chan struct{}, max(2, runtime.NumCPU()))
	own := make([]map[string]*contract.Result, len(beside))
	for i, t := range beside {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			opts := lo
			own[i] = maps.Clone(lo.Contracts)
			opts.Contracts = own[i]
			walk(i, t, opts)
		}()
	}
	wg.Wait()
	for _, m := range own {
		for k, v := range m {
			if lo.Contracts != nil {
				lo.Contracts[k] = v
			}
		}
	}
	for i, t := range alone {
		walk(len(beside)+i, t, lo)
	}
	var done []*ladder.Outcome
	var left []string
	for i, t := range order {
		switch {
		case outcomes[i] != nil:
			done = append(done, outcomes[i])
		case missed[i]:
			left = append(left, t.ID())
		}
	}
	return done, left
}

// progress prints each walk's opening line, "[k/n]", numbered in the
// order the lines print: walks confirmed beside each other start in any
// order, and a count that read [2/3] before [1/3] would say otherwise.
type progress struct {
	w     *lockedWriter
	total int
	n     int // walks started; guarded by w.mu
}

// start prints the opening line of t's walk, numbered after the last.
func (p *progress) start(t battery.Test) {
	p.w.mu.Lock()
	defer p.w.mu.Unlock()
	p.n++
	fmt.Fprintf(p.w.w, "ladder: [%d/%d] %s (%s in the battery)\n", p.n, p.total, terminal.Escape(t.ID()), t.Elapsed.Round(10*time.Millisecond))
}

// lockedWriter lets walks that run at once print whole lines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// writeLadderSummary prints each walked failure's owner, verdict, action
// and evidence, and the failures the budget did not reach.
func writeLadderSummary(out io.Writer, rep *ValidateReport) {
	if len(rep.Ladder) == 0 && len(rep.NotArbitrated) == 0 {
		return
	}
	fmt.Fprintf(out, "\n%s\n", bold("arbitration"))
	for _, o := range rep.Ladder {
		d := o.Decision()
		owner := paintOwner(o.Owner, terminal.Escape(d.Owner))
		if o.NoFailure() {
			owner = color.GreenString(terminal.Escape(d.Owner))
		}
		fmt.Fprintf(out, "  %s %s\n      owner %s; %s\n      action: %s\n", terminal.Escape(o.Package), terminal.Escape(o.Test), owner, terminal.Escape(d.Verdict), terminal.Escape(d.Action))
		if o.Replay != "" && !o.NoFailure() {
			fmt.Fprintf(out, "      replay: %s\n", terminal.Escape(o.Replay))
		}
		for _, e := range o.Evidence {
			fmt.Fprintf(out, "      %s\n", terminal.Escape(e))
		}
		if o.Incomplete != "" {
			fmt.Fprintf(out, "      incomplete: %s\n", terminal.Escape(o.Incomplete))
		}
	}
	for _, t := range rep.NotArbitrated {
		_, name := ladder.SplitID(t)
		fmt.Fprintf(out, "  %s\n      not arbitrated (the budget ended before it started; raise %s): go tool mage arbitrate %s\n", terminal.Escape(t), envvar.LadderBudget, terminal.Escape(name))
	}
}
