package ladder

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/capacity"
	"github.com/contested/contested/internal/faultdir"
	"github.com/contested/contested/internal/faultlayer/noise"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gate/flakes"
	seedpkg "github.com/contested/contested/internal/seed"
	"github.com/contested/contested/internal/terminal"
)

// rerunAlone runs the failing test alone (its -run pattern selects it and
// nothing else: a leg's siblings never run), with the seed its leg drew
// when it started, up to opts.Reruns times: it stops as soon as the test
// has both failed and passed (flaky), since more reruns would not change
// that. Each rerun has a private results directory so its records never
// mix with a battery's. A run in which the test never ran because its
// package failed first counts as failed and NotRun, and the package's
// failure is returned.
//
// A first rerun that fails the same way as the battery (the same oracle,
// or the same failure with its figures left aside: see sameWay) confirms
// a failure whose evidence is not about time: the seed reproduces it, and
// no second rerun is spent. A failure about time is rerun twice, as it
// always was: on a quiet machine, twice, is what tells it from capacity.
//
// A failure whose evidence is about time (first.aboutTime) is rerun alone
// with the machine to itself as far as the ladder can make it so: each
// rerun waits (out of the run's quietWait in all, Quiet) for the run
// queue to fall under quietPerCore per core. Any other failure (an
// oracle's violation, a wrong value) does not wait: load makes a test
// late, not wrong. Either way, a rerun that failed while the queue
// averaged busyPerCore or more (a shared runner's other jobs), without a
// violation, is counted Busy: its failure alone does not make the test
// flaky on its own.
func rerunAlone(ctx context.Context, name, pkg string, seed int64, first failure, opts Options) (Reruns, *Plain, []contract.SeedRun) {
	r := Reruns{Class: NotRerun, Seed: seed}
	var pf *Plain
	var runs []contract.SeedRun
	top, _, _ := strings.Cut(name, "/")
	queue := capacity.FollowRunQueue(ctx)
	defer queue.Stop()
	for i := range opts.Reruns {
		if ctx.Err() != nil || (r.Failures > r.Busy && r.Failures < r.Runs) {
			break
		}
		if opts.Quiet == nil {
			opts.Quiet = NewQuiet()
		}
		if first.aboutTime {
			waitQuiet(ctx, queue, opts.Quiet, name, opts.Out)
		}
		res, dir, _, err := runOnce(ctx, name, pkg, seed, fmt.Sprintf("run-%d", i+1), opts, nil)
		if err != nil {
			if opts.Out != nil && ctx.Err() == nil {
				fmt.Fprintf(opts.Out, "ladder: not rerunning %s: %s\n", terminal.Escape(name), terminal.Escape(err.Error()))
			}
			break
		}
		r.Runs++
		recs, _ := contract.ReadRecords(faultdir.Of(dir))
		runs = append(runs, contract.NewSeedRun(seed, dir, res, recs))
		if !res.OK() {
			r.Failures++
			if t, ok := find(res, name); ok {
				r.Reason = contract.Reason(t.Failure, t.Output)
				// A violation an oracle named is no busy failure: load
				// makes a test late, not wrong.
				seen := violatedIn(recs, name)
				violated := strings.Contains(r.Reason, "VIOLATED") || seen != ""
				if perCore := busy(queue, t); perCore > 0 && !violated {
					r.Busy++
					r.BusyRunQueue = max(r.BusyRunQueue, perCore)
				}
				if seen == "" {
					seen = r.Reason
				}
				r.SameWay = i == 0 && !first.aboutTime && sameWay(first.evidence, seen)
			}
		}
		if failed := res.FailedPackages(); len(failed) > 0 && !ran(res, top) {
			r.NotRun++
			p := PackageFailure(failed[0].Name, failed[0].Output, 0)
			pf = &p
		} else if res.OK() && !ran(res, top) {
			r.Absent++
		}
		if r.SameWay {
			break
		}
	}
	r.Class = classOf(r)
	return r, pf, runs
}

// failure is what the battery saw of a failing test, for its reruns: its
// evidence (the oracle's violation, else its failure), and whether that
// evidence is about time (a deadline, a timeout, a slow answer).
type failure struct {
	evidence  string
	aboutTime bool
}

// figures are the numbers in a failure: the counts, times and ids that
// differ between two runs failing the same way.
var figures = regexp.MustCompile(`[0-9]+(\.[0-9]+)?`)

// oracleNamed is a violation as an oracle names it: "oracle X: VIOLATED".
var oracleNamed = regexp.MustCompile(`oracle ([^:]+): VIOLATED`)

// sameWay reports whether two failures are the same: the same oracle
// violated, or the same first line with its figures left aside.
func sameWay(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	ma, mb := oracleNamed.FindStringSubmatch(a), oracleNamed.FindStringSubmatch(b)
	if ma != nil || mb != nil {
		return ma != nil && mb != nil && ma[1] == mb[1]
	}
	line := func(s string) string {
		s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
		return strings.Join(strings.Fields(figures.ReplaceAllString(s, "#")), " ")
	}
	return line(a) == line(b)
}

// A rerun alone starts once the run queue is under quietPerCore per core
// (the battery's admission threshold: a thread that becomes runnable
// finds a CPU), waiting for it up to quietWait. Its failure counts as
// busy when the run queue averaged busyPerCore per core or more over the
// test's own run: the saturation of the capacity samples, where a test
// got at most a quarter of a core; a milder load excuses nothing, so a
// test that fails on its own stays flaky on a merely busy runner.
const (
	quietPerCore = 2
	quietWait    = 30 * time.Second
)

var busyPerCore = capacity.LoadPerCPU

// quietPatience is how long a wait for a quiet machine goes on while the
// run queue does not fall (by a quarter of what it was when the wait
// began): a machine that is not quietening will not be quiet in time.
var quietPatience = 10 * time.Second

// Quiet is the time the ladder may spend waiting for a quiet machine over
// every walk of one run: quietWait in all, not per rerun. A machine that
// did not quieten within one wait seldom does within the next, so the
// waits of a run draw on one budget, and a RED run does not wait thirty
// seconds twice per failing leg for a quiet machine that will not come.
// It is safe for concurrent use.
type Quiet struct {
	mu   sync.Mutex
	left time.Duration
}

// NewQuiet is a run's budget of waiting for a quiet machine.
func NewQuiet() *Quiet { return &Quiet{left: quietWait} }

func (w *Quiet) remaining() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.left
}

func (w *Quiet) spend(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.left = max(w.left-d, 0)
}

// averager is what waitQuiet reads of the run queue.
type averager interface{ Avg() (float64, bool) }

// waitQuiet waits for the run queue to fall under quietPerCore per core,
// while the run's budget lasts and the queue keeps falling, saying so
// when it waits and when it gives up.
func waitQuiet(ctx context.Context, q averager, budget *Quiet, name string, out io.Writer) {
	limit := quietPerCore * float64(runtime.NumCPU())
	start := time.Now()
	left := budget.remaining()
	defer func() { budget.spend(time.Since(start)) }()
	deadline := start.Add(left)
	first, _ := q.Avg()
	checkpoint, mark := start.Add(quietPatience), first
	said := false
	for {
		avg, ok := q.Avg()
		if !ok || avg < limit || ctx.Err() != nil {
			return
		}
		now := time.Now()
		if now.After(deadline) || now.After(checkpoint) && avg > 0.75*mark {
			if out != nil && said {
				fmt.Fprintf(out, "ladder: %s: the machine did not quieten (run queue %.1f per core after %s); rerunning it now, and its failures on a busy machine are counted as such\n",
					name, avg/float64(runtime.NumCPU()), now.Sub(start).Round(time.Second))
			}
			if now.After(checkpoint) {
				budget.spend(left) // it is not quietening: wait no more in this run
			}
			return
		}
		if now.After(checkpoint) {
			checkpoint, mark = now.Add(quietPatience), avg
		}
		if !said && out != nil {
			fmt.Fprintf(out, "ladder: %s: waiting up to %s for the machine to quieten before rerunning it alone (run queue %.1f per core)\n",
				name, left.Round(time.Second), avg/float64(runtime.NumCPU()))
			said = true
		}
		select {
		case <-ctx.Done():
		case <-time.After(capacity.Every):
		}
	}
}

// busy is the run queue per core while the test ran, when it was over
// busyPerCore; 0 when the machine was not busy or the test's window is
// not known.
func busy(q *capacity.RunQueue, t battery.Test) float64 {
	if t.Started.IsZero() {
		return 0
	}
	mean, n := q.Between(t.Started, t.Started.Add(t.Elapsed))
	perCore := mean / float64(runtime.NumCPU())
	if n == 0 || perCore < busyPerCore {
		return 0
	}
	return perCore
}

// classOf reads the reruns' class.
func classOf(r Reruns) string {
	switch {
	case r.Runs == 0:
		return NotRerun
	case r.NotRun == r.Runs:
		return PackageFails
	case r.Absent == r.Runs:
		return NeverRuns
	case r.Failures == r.Runs:
		return Consistent
	case r.Failures == 0:
		return Passes
	}
	return Flaky
}

// runOnce runs the test alone once, under ladder/reruns/<test>/<label> of
// the results directory, with seed (0: none), beside a neighbour when
// beside is not nil, and returns what that neighbour did.
func runOnce(ctx context.Context, name, pkg string, seed int64, label string, opts Options, beside *noise.Spec) (*battery.Result, string, *noise.Evidence, error) {
	if pkg == "" {
		pkg = "./..."
	}
	rel := filepath.Join("ladder", "reruns", FileName(name), label)
	dir := opts.Env.ResultsDir.Join(rel)
	if err := atomicfile.EmptyDir(opts.Env.ResultsDir.String(), rel); err != nil {
		return nil, dir, nil, err
	}
	env := opts.Env.WithResultsDir(dir).WithSeed(seedpkg.Seed(seed))
	var n *noise.Neighbour
	if beside != nil {
		var err error
		if n, err = noise.Start(ctx, *beside, seed+1, dir); err != nil {
			return nil, dir, nil, err
		}
	}
	res, err := battery.Run(ctx, battery.Options{Dir: opts.Env.ModuleRoot, Patterns: []string{pkg},
		Args: []string{"-run", seedpkg.RunPattern(name)}, Env: env.Environ(), Binaries: opts.Binaries})
	var e *noise.Evidence
	if n != nil {
		ev := n.Stop()
		e = &ev
	}
	return res, dir, e, err
}

// find returns the test named name in res.
func find(res *battery.Result, name string) (battery.Test, bool) {
	for _, t := range res.Tests {
		if t.Name == name {
			return t, true
		}
	}
	return battery.Test{}, false
}

// ran reports whether the top-level test ran to an end in res.
func ran(res *battery.Result, top string) bool {
	_, ok := find(res, top)
	return ok
}

// besideReruns is how many times a test that passed alone is rerun beside
// a neighbour; the first failure ends them.
const besideReruns = 3

// capacityOf is the capacity step, for a test that did not fail every
// rerun alone: the capacity samples taken while it failed in the battery,
// the neighbour the battery ran beside, and, when either says the machine
// was busy, reruns beside a neighbour (the battery's, else one busy thread
// per core) to see whether it fails only when the machine is. Without
// beside it reads the samples and reruns nothing: the failure's own
// evidence (a named violation, interference) already decides its owner.
func capacityOf(ctx context.Context, o *Outcome, pkg string, opts Options, beside bool) *CapacityEvidence {
	c := &CapacityEvidence{}
	if t, ok := failedTest(opts, o.Package, o.Test); ok && opts.Capacity != nil && !t.Started.IsZero() {
		w := opts.Capacity.Window(t.Started, t.Started.Add(t.Elapsed))
		c.Saturated, c.Contended, c.PeakLoadPerCPU, c.Samples = w.Saturated, w.Contended, w.Peak.Load1PerCPU, len(w.Samples)
	} else if opts.Capacity != nil {
		c.Saturated, c.Contended, c.PeakLoadPerCPU, c.Samples = opts.Capacity.Saturated, opts.Capacity.Contended, opts.Capacity.Peak.Load1PerCPU, len(opts.Capacity.Samples)
	}
	// The neighbour of the reruns is the battery's, and at least two busy
	// threads per core: alone, the test has the machine the battery had
	// to share with its other packages.
	spec := noise.Spec{CPU: 2 * runtime.NumCPU()}
	if opts.Noise != nil {
		c.Neighbour = opts.Noise.Injector() + "; " + opts.Noise.VictimSide()
		spec.CPU, spec.IO = max(spec.CPU, opts.Noise.Spec.CPU), opts.Noise.Spec.IO
	}
	if !beside {
		return c
	}
	if opts.Beside != nil {
		spec = *opts.Beside
	} else if !c.Saturated && opts.Noise == nil && !o.Reruns.failsOnlyWhenBusy() {
		return c
	}
	c.Beside = &Count{}
	for i := range besideReruns {
		if ctx.Err() != nil || c.Beside.Failed > 0 {
			break
		}
		res, _, e, err := runOnce(ctx, o.Test, pkg, o.Seed, fmt.Sprintf("beside-%d", i+1), opts, &spec)
		if err != nil {
			break
		}
		c.Beside.Ran++
		if !res.OK() {
			c.Beside.Failed++
		}
		if e != nil {
			c.BesideEvidence = e.Injector() + "; " + e.VictimSide()
		}
	}
	c.Fragile = (o.Reruns.Class == Passes || o.Reruns.failsOnlyWhenBusy()) && c.Beside.Failed > 0
	fmt.Fprintf(opts.Out, "ladder: %s: %s\n", terminal.Escape(o.Test), terminal.Escape(c.Say()))
	return c
}

// Say is the capacity evidence in words.
func (c *CapacityEvidence) Say() string {
	if c == nil {
		return "no capacity evidence"
	}
	s := fmt.Sprintf("the machine while it failed: peak load %.1f per CPU over %d samples", c.PeakLoadPerCPU, c.Samples)
	if c.Saturated {
		s += " (saturated: " + strings.Join(c.Contended, "; ") + ")"
	}
	if c.Neighbour != "" {
		s += "; the battery ran beside a neighbour: " + c.Neighbour
	}
	if c.Beside != nil {
		s += fmt.Sprintf("; rerun beside a neighbour it failed %d of %d", c.Beside.Failed, c.Beside.Ran)
		if c.BesideEvidence != "" {
			s += " (" + c.BesideEvidence + ")"
		}
	}
	return s
}

// fromHistory is what the flake history holds of the test: context. The
// run being arbitrated (current, its run id; "" when unknown) counts as
// one of its runs, failed when failedNow: the history read before that
// run was appended would leave it out, and a failing run would read
// "failed in 0 of its last 2 runs".
func fromHistory(outs []flakes.Outcome, pkg, name, current string, failedNow bool) *History {
	included := false
	for _, o := range outs {
		included = included || (current != "" && o.RunID == current)
	}
	if current != "" && !included {
		v := "pass"
		if failedNow {
			v = "fail"
		}
		outs = append(slices.Clone(outs), flakes.Outcome{Schema: flakes.Schema, RunID: current, Package: pkg, Test: name, Verdict: v})
		included = true
	}
	if len(outs) == 0 {
		return nil
	}
	id := name
	if pkg != "" {
		id = pkg + "." + name
	}
	s := flakes.Summarize(outs, id, historyRuns)
	if len(s.Runs) == 0 {
		return nil
	}
	h := &History{Runs: len(s.Runs), Failures: s.Failed, Current: included}
	if f := s.FirstFailure; f != nil {
		h.FirstFailingRun, h.FirstFailingCommit, h.Dirty, h.Diff = f.RunID, f.Commit, f.Dirty, f.Diff
	}
	for i := len(s.Runs) - 1; i >= 0; i-- {
		if s.Runs[i].Failed {
			h.LastFailingCommit = s.Runs[i].Commit
			break
		}
	}
	return h
}

// historyRuns is how many of a test's last runs the ladder reads.
const historyRuns = 20

// Say is the history in words: "failed in 3 of its last 20 runs, this one
// included (first failing run R on commit C, uncommitted changes D)".
func (h *History) Say() string {
	s := fmt.Sprintf("failed in %d of its last %d runs", h.Failures, h.Runs)
	if h.Current {
		s += ", this one included"
	}
	if h.FirstFailingRun != "" {
		s += fmt.Sprintf(" (first failing run %s", h.FirstFailingRun)
		if h.FirstFailingCommit != "" {
			s += ", commit " + h.FirstFailingCommit
			if h.Dirty {
				s += " with uncommitted changes"
				if h.Diff != "" {
					s += " (diff " + h.Diff + ")"
				}
			}
		}
		s += ")"
	}
	return s
}

// Say is the reruns in words.
func (r Reruns) Say() string {
	s := fmt.Sprintf("the test failed %d of %d reruns alone", r.Failures, r.Runs)
	switch r.Class {
	case NeverRuns:
		s = fmt.Sprintf("the test ran in none of %d reruns, which its package passed", r.Runs)
	case NotRerun:
		s = "the test was not rerun"
	}
	if r.Seed != 0 {
		s += fmt.Sprintf(" with its seed %d", r.Seed)
	}
	s += " (" + r.Class + ")"
	if r.SameWay {
		s += ", the first the same way as in the battery: reproducible, no second rerun needed"
	}
	if r.Busy > 0 {
		s += fmt.Sprintf("; %d of its failures came while other work held the machine (run queue up to %.1f per core)", r.Busy, r.BusyRunQueue)
	}
	return s
}
