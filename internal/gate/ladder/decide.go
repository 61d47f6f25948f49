package ladder

import (
	"context"
	"fmt"
	"strings"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gate/verdict"
	"github.com/contested/contested/internal/registry"
	"github.com/contested/contested/internal/replayenv"
	"github.com/contested/contested/internal/seed"
	"github.com/contested/contested/internal/terminal"
)

// alone is the command that reruns the test by itself, with its seed.
func alone(o *Outcome, pkg string) string {
	if o.Replay != "" {
		return o.Replay
	}
	if pkg == "" {
		pkg = "./..."
	}
	return replayenv.Prefix(seed.Seed(o.Seed).Replay(1, pkg, o.Test), o.replay)
}

// because is ": <the failure>" when the test reported one.
func because(o *Outcome) string {
	r := o.Reruns.Reason
	if r == "" {
		r = o.Reason
	}
	if r == "" {
		return ""
	}
	return ": " + r
}

// decidePlain decides a failure no surface lists, from this run's
// evidence: its reruns alone, what the machine gave it, and reruns beside
// a neighbour. The test's author owns it, unless the machine was
// saturated and the test passes alone and beside a neighbour (capacity,
// recorded, and still a fix).
func decidePlain(o *Outcome, pkg string, seen battery.Test) {
	o.Owner = TestAuthor
	cmd := alone(o, pkg)
	if seen.Timeout != "" {
		// What ended it in the battery is the first thing to know.
		o.Action = fmt.Sprintf("it was still running when go test's -timeout (%s) ended its test binary; run it alone with %s -v to see where it waits, then make it faster, or raise the battery's timeout (%s); ",
			seen.Timeout, cmd, raiseTimeout)
	}
	prefix := o.Action
	defer func() { o.Action = prefix + o.Action }()
	switch {
	case o.Reruns.Class == Consistent:
		o.Verdict = ConsistentFailure
		o.Action = fmt.Sprintf("it fails every time alone (in the battery and %d of %d reruns)%s: a defect in the test or in the code it tests; no surface lists it, so no contract decides between them: reproduce with %s and fix it",
			o.Reruns.Failures, o.Reruns.Runs, because(o), cmd)
		if o.Reruns.allBusy() {
			o.Action += fmt.Sprintf(" (every rerun ran while other work saturated the machine, run queue up to %.1f per core: should it pass on a quiet machine, it depends on one)", o.Reruns.BusyRunQueue)
		}
	case o.Violation != "":
		o.Verdict = OracleViolation
		o.Action = fmt.Sprintf("an oracle named a violation (%s), which a busy machine does not cause (it makes a test late, not wrong); it failed %d of %d reruns alone: a defect in the test or in the code it tests: reproduce with %s -count=20 and fix it",
			o.Violation, o.Reruns.Failures, o.Reruns.Runs, cmd)
	case o.Capacity.Fragile:
		capacityFragile(o, cmd)
	case o.Reruns.Class == Flaky:
		o.Verdict = FlakyAlone
		o.Action = fmt.Sprintf("it failed %d of %d reruns alone%s: it is nondeterministic on its own (a race, an order it assumes, a bound of time): reproduce with %s -count=20 and remove the nondeterminism without loosening the test (no added sleeps, no wider bounds, no weaker assertions)",
			o.Reruns.Failures, o.Reruns.Runs, because(o), cmd)
		o.Evidence = append(o.Evidence, "capacity: "+o.Capacity.Say())
	case o.Capacity.Saturated && timingText(o):
		o.Owner, o.Verdict, o.Contended = Capacity, SaturatedRun, o.Capacity.Contended
		o.Action = fmt.Sprintf("it failed while the machine was saturated (%s)%s, and passed %d reruns alone%s: record the capacity attribution and still fix it: own the test's resources, or run this battery out of band",
			strings.Join(o.Capacity.Contended, "; "), because(o), o.Reruns.Runs, besideSaid(o))
	default:
		o.Verdict = FailsOnlyInBattery
		o.Action = fmt.Sprintf("it passed %d reruns alone%s and failed in the battery%s: it depends on what else the battery runs (state, a port, a file or a database another test also uses, an order it assumes): give it a fixture of its own; %s reproduces it alone if it ever does",
			o.Reruns.Runs, besideSaid(o), because(o), cmd)
		if o.Capacity.Saturated {
			o.Action += fmt.Sprintf(" (the machine was saturated while it failed, %s, but its failure says nothing of time, so load does not explain it)", strings.Join(o.Capacity.Contended, "; "))
		}
	}
}

// besideSaid is ", and N beside a neighbour" when it was rerun beside one.
func besideSaid(o *Outcome) string {
	if o.Capacity == nil || o.Capacity.Beside == nil || o.Capacity.Beside.Ran == 0 {
		return ""
	}
	return fmt.Sprintf(" and %d beside a noisy neighbour", o.Capacity.Beside.Ran)
}

// capacityFragile ends the ladder for a test that passes alone and fails
// beside a noisy neighbour: its author owns it, with the evidence.
func capacityFragile(o *Outcome, cmd string) {
	c := o.Capacity
	o.Owner, o.Verdict = TestAuthor, CapacityFragile
	o.Action = fmt.Sprintf("it passed %s and failed %d of %d beside a noisy neighbour%s: it depends on a quiet machine, and a shared CI runner is not one: derive its bounds from what it measures (or from the machine's capacity) instead of a fast machine's figures, and create the contention it needs instead of hoping for it; it passes alone with %s, and fails beside the neighbour with %s=%s go tool mage arbitrate %s",
		passedAlone(o.Reruns), c.Beside.Failed, c.Beside.Ran, because(o), cmd, envvar.Noise, noiseSpecOf(c), o.Test)
	o.Evidence = append(o.Evidence, "capacity: "+c.Say())
}

// passedAlone is how a capacity-fragile test did alone.
func passedAlone(r Reruns) string {
	if r.Busy == 0 {
		return fmt.Sprintf("%d reruns alone", r.Runs)
	}
	return fmt.Sprintf("%d of %d reruns alone (the %d it failed ran while other work held the machine: run queue up to %.1f per core)",
		r.Runs-r.Failures, r.Runs, r.Failures, r.BusyRunQueue)
}

// noiseSpecOf is the neighbour a capacity-fragile test failed beside, as
// CONTESTED_NOISE reads it.
func noiseSpecOf(c *CapacityEvidence) string {
	if _, spec, ok := strings.Cut(c.BesideEvidence, "neighbour "); ok {
		if f := strings.Fields(spec); len(f) > 0 {
			return f[0]
		}
	}
	return "cpu"
}

// decideLegAlone decides a failing leg from its reruns alone, which ran it
// in isolation with the seed it failed with: the contract's own run of
// that seed, judged by the contract's judge. A leg that failed every
// rerun on its own account is FAIL-reproducible, one that failed some
// FAIL-nondeterministic, and either is the component's; one whose fault
// did not land is INCONCLUSIVE, its author's (the judge tells an unfired
// fault from a failure of the test's own); a leg that passes alone and
// fails beside a neighbour is capacity-fragile.
func decideLegAlone(o *Outcome, s registry.Surface, lever string, opts Options) {
	if o.Capacity != nil && o.Capacity.Fragile {
		capacityFragile(o, alone(o, s.Package))
		return
	}
	runs := make([]contract.SeedRun, 0, len(o.Runs)+1)
	if b, ok := batteryRun(o, opts); ok {
		// The battery's failing run is evidence too, judged as the
		// surfaces table judges it: failed, and reproduced only when
		// every rerun alone failed as well.
		again := o.Reruns.Runs > 0 && o.Reruns.Failures == o.Reruns.Runs
		b.Rerun = &again
		runs = append(runs, b)
	}
	for _, r := range o.Runs {
		again := !r.Passed
		for _, other := range o.Runs {
			again = again && !other.Passed
		}
		if !r.Passed {
			r.Rerun = &again
		}
		runs = append(runs, r)
	}
	one := s
	one.Legs = []string{lever}
	legs, c := contract.Judge(one, contract.Evidence{Level: max(opts.Env.Level, 1), Runs: runs})
	res := &contract.Result{Surface: s.ID, Class: s.Class, Owner: s.Owner, Behavior: s.Behavior, Oracle: s.Oracle, Level: max(opts.Env.Level, 1), Contract: c, Legs: legs, Seeds: runs}
	o.Contract, o.Legs = res.Contract, res.Legs
	decide(o, s, res, opts)
}

// batteryRun is the failing test's run in the battery it was reported
// from, with its records, as one seed's run of its leg.
func batteryRun(o *Outcome, opts Options) (contract.SeedRun, bool) {
	t, ok := failedTest(opts, o.Package, o.Test)
	if !ok {
		return contract.SeedRun{}, false
	}
	var recs []faultrecord.Record
	for _, r := range opts.Records {
		if r.Test == o.Test {
			recs = append(recs, r)
		}
	}
	return contract.NewSeedRun(o.Seed, "", &battery.Result{Tests: []battery.Test{t}}, recs), true
}

// isolated runs the contract in isolation for a test that passed alone:
// a leg over the rest of its surface's seed budget (fresh seeds: the seed
// it failed with was its reruns), or, for a test of the surface that is
// not a leg, the surface's whole contract (once per surface, cached).
func isolated(ctx context.Context, o *Outcome, s registry.Surface, name string, opts Options) (*contract.Result, error) {
	level := max(opts.Env.Level, 1)
	if lever, ok := legOf(s, name); ok {
		if res, ok := opts.Contracts[s.ID]; ok {
			// The surface's contract already ran in isolation over its
			// budget: its verdict of this leg is the answer.
			if l, ok := res.Leg(lever); ok {
				return legAlone(res, l), nil
			}
		}
		seeds, err := contract.Seeds(max(s.Budget.Hardening.Seeds-1, 1), []string{lever}, level)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(opts.Out, "ladder: running leg %s of %s in isolation over %d more seeds\n", lever, terminal.Escape(s.ID), len(seeds))
		res, err := contract.Run(ctx, s, contract.Options{Env: opts.Env, Seeds: seeds, Out: opts.Out, Binaries: opts.Binaries, Tests: []string{name}})
		if err != nil {
			return nil, err
		}
		o.Runs = append(o.Runs, res.Seeds...)
		// The leg is judged alone: its siblings did not run, and that is
		// not something to report.
		l, _ := res.Leg(lever)
		return legAlone(res, l), nil
	}
	if res, ok := opts.Contracts[s.ID]; ok {
		return res, nil
	}
	seeds, err := contract.Seeds(s.Budget.Hardening.Seeds, s.LegsAt(level), level)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(opts.Out, "ladder: running %s's contract in isolation over %d seeds\n", terminal.Escape(s.ID), len(seeds))
	res, err := contract.Run(ctx, s, contract.Options{Env: opts.Env, Seeds: seeds, Out: opts.Out, Binaries: opts.Binaries})
	if err != nil {
		return nil, err
	}
	if opts.Contracts != nil {
		opts.Contracts[s.ID] = res
	}
	o.Runs = append(o.Runs, res.Seeds...)
	return res, nil
}

// legAlone is res judged by one leg alone.
func legAlone(res *contract.Result, l verdict.Leg) *contract.Result {
	one := *res
	one.Legs = []verdict.Leg{l}
	one.Contract = verdict.Surface([]verdict.Verdict{l.Verdict})
	return &one
}

// decide reads the contract verdict into an owner and an action.
func decide(o *Outcome, s registry.Surface, res *contract.Result, opts Options) {
	switch res.Contract {
	case verdict.Red:
		o.Owner, o.OwnerName = Component, s.Owner
		l := failingLeg(o, res)
		o.Verdict = legFinding(l.Verdict)
		if plain, ok := plainTest(o, s); ok {
			// The test armed no fault: the sentence is about it and its
			// failure, and the leg is the contract's, run apart from it.
			o.Action = fmt.Sprintf("%s; %s's contract, run in isolation apart from it, is RED: its leg %s is %s with %s (%s): fix %s (%s); %s; file it as a fix: issue with the test's failure and the leg's seed",
				plain, s.ID, l.Lever, l.Verdict, seed.Seed(l.FailedRun).Say(), l.Reason, s.ID, s.Behavior, reproduce(replayenv.Prefix(l.Replay, o.replay)))
			o.Evidence = append(o.Evidence, "the contract's leg "+l.Lever+", in isolation: "+l.Reason)
			for _, e := range l.Landing() {
				o.Evidence = append(o.Evidence, "the contract's leg "+l.Lever+", "+e)
			}
			return
		}
		o.Action = fmt.Sprintf("fix %s (%s): leg %s is %s in isolation with %s (%s); %s; file it as a fix: issue with the leg and the seed",
			s.ID, s.Behavior, l.Lever, l.Verdict, seed.Seed(l.FailedRun).Say(), l.Reason, reproduce(replayenv.Prefix(l.Replay, o.replay)))
		o.Evidence = append(o.Evidence, "leg "+l.Lever+": "+l.Reason)
		o.Evidence = append(o.Evidence, l.Landing()...)
	case verdict.Green:
		flake := o.Reruns.Say()
		// Capacity owns it only when the failure disappeared on a quiet
		// machine and its text is consistent with timing: a test that
		// fails alone every time, or whose oracle named a violation, is
		// not re-attributed by the machine's load.
		loadExplains := quietPass(o.Reruns) && o.Violation == "" && timingText(o)
		if c := o.Capacity; loadExplains && (c != nil && c.Saturated || c == nil && opts.Capacity != nil && opts.Capacity.Saturated) {
			contended := opts.Capacity.Contended
			if c != nil {
				contended = c.Contended
			}
			o.Owner, o.Verdict, o.Contended = Capacity, GreenSaturated, contended
			o.Action = fmt.Sprintf("record the capacity attribution (%s) and still fix it: own the fixture's resources or run this battery out of band; %s; the component holds its contract in isolation",
				strings.Join(contended, "; "), flake)
			return
		}
		o.Owner = TestAuthor
		o.Verdict = map[bool]Finding{true: GreenFlaky, false: GreenConsistent}[o.Reruns.Class != Consistent]
		o.Action = fmt.Sprintf("fix the test or its fixture without loosening it (no added serialization, no wider timeouts, no weaker assertions): %s holds its contract in isolation, so the defect is in the test, its fixture or its envelope; %s", s.ID, flake)
		if plain, ok := plainTest(o, s); ok {
			o.Action = plain + "; " + o.Action
		}
	case verdict.CannotRun:
		o.Owner, o.Verdict = FaultLayer, contractFinding(verdict.CannotRun)
		o.Action = "repair the fault layer, then walk the ladder again"
	case verdict.NotAtThisLevel:
		o.Owner, o.Verdict = TestAuthor, contractFinding(verdict.NotAtThisLevel)
		o.Action = fmt.Sprintf("no leg of %s runs at level %d, so its contract cannot judge this failure: walk the ladder again at a level its legs run at (CONTESTED_LEVEL), or fix the test if it should not run here", s.ID, res.Level)
	default:
		o.Owner, o.Verdict = TestAuthor, contractFinding(verdict.Inconclusive)
		var weak, setup []string
		for _, l := range res.Legs {
			if text, ok := l.FailedBeforeArming(); ok {
				setup = append(setup, fmt.Sprintf("leg %s failed before its fault was armed: %s", l.Lever, text))
				continue
			}
			if !l.Verdict.Pass() && l.Verdict != verdict.NotAtLevel {
				weak = append(weak, fmt.Sprintf("%s is %s (%s)", l.Lever, l.Verdict, l.Reason))
			}
		}
		var says []string
		if len(setup) > 0 {
			// The claim under fault was never tested: the setup is what
			// failed, and the test author's to fix.
			says = append(says, "fix the leg's setup, then walk the ladder again: "+strings.Join(setup, "; ")+" (evidence about the setup, not about the claim under fault)")
		}
		if len(weak) > 0 {
			says = append(says, "make the contract decisive before judging the component: "+strings.Join(weak, "; "))
		}
		o.Action = strings.Join(says, "; ")
	}
}

// failingLeg is the failing leg a RED contract is read by: the one the
// failing test runs when it failed, else the first that failed.
func failingLeg(o *Outcome, res *contract.Result) verdict.Leg {
	var first *verdict.Leg
	for i, l := range res.Legs {
		if !l.Verdict.Fail() {
			continue
		}
		if o.Test == "" || strings.HasSuffix(o.Test, "/"+l.Lever) {
			return l
		}
		if first == nil {
			first = &res.Legs[i]
		}
	}
	if first != nil {
		return *first
	}
	return verdict.Leg{}
}

// packageDoesNotRun ends the ladder for a test whose package failed before
// the test ran in every rerun: the test author (the package's TestMain, its
// build) owns it, and neither the test nor a contract can be judged until
// the package runs its tests.
func packageDoesNotRun(o *Outcome, s registry.Surface, contractTest bool) {
	pf := o.PackageFailure
	o.Owner, o.Verdict = TestAuthor, packageFinding(pf.What)
	o.Action = fmt.Sprintf("%s: %s; the test never ran, so it cannot be judged until its package runs its tests", pf.Package, pf.Action)
	if contractTest {
		o.Action = fmt.Sprintf("%s: %s; the test never ran, so neither it nor %s's contract can be judged until its package runs its tests", pf.Package, pf.Action, s.ID)
	}
	o.Evidence = append(o.Evidence, pf.FirstLine)
}

// neverRuns ends the ladder for a test its package passed without running,
// in every rerun: the test author owns it.
func neverRuns(o *Outcome, s registry.Surface, pkg string, contractTest bool) {
	o.Owner, o.Verdict = TestAuthor, TestNeverRuns
	if pkg == "" {
		pkg = "./..."
	}
	o.Action = fmt.Sprintf("%s passed all %d reruns without running %s: a TestMain that returns before m.Run, or a build constraint that leaves its file out; make the test run (go test %s -run '%s' -v lists what ran), then walk the ladder again", pkg, o.Reruns.Runs, o.Test, pkg, seed.RunPattern(o.Test))
	if contractTest {
		o.Action += fmt.Sprintf("; %s's contract cannot be judged until it does", s.ID)
	}
}

// noFailure ends the ladder for a test that did not fail: there is no
// owner and nothing to fix, whatever the flake history says of earlier
// runs (which the action gives as context).
func noFailure(o *Outcome, opts Options) {
	o.Owner, o.Verdict = "", NoFailure
	where := "there is no validate run to compare with (no validate.json in the results directory)"
	switch {
	case opts.Seen != nil:
		where = "it did not fail in the last validate run either"
	case opts.Stale != "":
		where = opts.Stale
	}
	o.Action = fmt.Sprintf("nothing to arbitrate: %s passed all %d reruns and %s; if it failed somewhere else (a CI job), arbitrate it there, with that run's results, or run go tool mage validate and arbitrate what fails", o.Test, o.Reruns.Runs, where)
	if h := o.History; h != nil && h.Failures > 0 {
		o.Action += fmt.Sprintf("; for context, the flake history: it %s", h.Say())
		if h.LastFailingCommit != "" {
			o.Action += ", the last on commit " + h.LastFailingCommit
		}
	}
}

// undecided ends a walk the budget or an interrupt cut short, with what it
// learned: a contract test's leg failed under its fault and was not shown
// to reproduce (the component's until shown otherwise); any other test is
// its author's.
func undecided(o *Outcome, s registry.Surface, contractTest bool) {
	o.Owner, o.Verdict = TestAuthor, Undecided
	if contractTest {
		o.Owner, o.OwnerName = Component, s.Owner
	}
	o.Action = fmt.Sprintf("not decided: %s; what is known: %s%s; finish it with go tool mage arbitrate %s", o.Incomplete, o.Reruns.Say(), because(o), o.Test)
}

// reproduce says how to reproduce a failing leg: its replay, or, when no
// run recorded one, that it is missing (its seed is unknown, so no command
// repeats its schedule).
func reproduce(replay string) string {
	if replay == "" {
		return "no replay was recorded (its seed is unknown), so rerun its test with a fresh seed to reproduce it"
	}
	return "reproduce with " + replay
}

// plainTest says, for a failing test of s that is not one of its fault
// legs (a plain Go test: it arms no fault, so no fault, lever or landing
// evidence is its own), which test failed and how: the sentence its
// decision opens with. ok is false for a leg, or an outcome with no test.
func plainTest(o *Outcome, s registry.Surface) (string, bool) {
	if o.Test == "" {
		return "", false
	}
	if _, leg := legOf(s, o.Test); leg {
		return "", false
	}
	failure := because(o)
	if failure == "" {
		failure = " (it reported no failure message)"
	}
	return fmt.Sprintf("%s, a plain test of %s that arms no fault, failed%s", o.Test, s.ID, failure), true
}
