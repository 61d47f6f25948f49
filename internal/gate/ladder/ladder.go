// Package ladder walks the arbitration ladder for a failing test and always
// ends with an owner and an action, from the evidence of this run: name
// the test's surface and behaviour (a test no surface lists walks the same
// ladder, with no contract to run); run the fault-layer preflight; rerun
// the test alone at the granularity that failed, with its own seed; when
// it passes alone, look at what the machine gave it and rerun it beside a
// noisy neighbour; read its flake history as context; and, when a surface
// lists it, run that surface's contract in isolation. "Environment" is
// never a terminal answer: the only environmental owners are the fault
// layer (CANNOT RUN) and capacity, and capacity only with evidence of what
// was contended.
package ladder

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/capacity"
	"github.com/contested/contested/internal/faultlayer"
	"github.com/contested/contested/internal/faultlayer/noise"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gate/flakes"
	"github.com/contested/contested/internal/gate/verdict"
	"github.com/contested/contested/internal/legstart"
	"github.com/contested/contested/internal/registry"
	"github.com/contested/contested/internal/replayenv"
	"github.com/contested/contested/internal/runenv"
	"github.com/contested/contested/internal/seed"
	"github.com/contested/contested/internal/terminal"
)

// Owner is who a failure is assigned to.
type Owner string

// The four owners. There is no "environment".
const (
	Component  Owner = "component"
	TestAuthor Owner = "test author"
	Capacity   Owner = "capacity"
	FaultLayer Owner = "fault layer"
)

// ErrUnknownTest: the test id names no test of the module.
var ErrUnknownTest = errors.New("unknown test")

// ErrCannotList: the module's tests could not be listed at all (go list
// failed: a go.mod it cannot read, a module it cannot find), so step 1
// cannot name the test. The ladder cannot run; the error says what go said.
var ErrCannotList = errors.New("cannot list the module's tests")

// ErrNotContractTest: the test exists but no surface in the registry lists
// it (Locate's answer). Walk goes on all the same: the test is rerun, its
// capacity and history are read, and its owner is decided from that
// evidence, without a contract to run.
var ErrNotContractTest = errors.New("not a contract test")

// Options configures Walk.
type Options struct {
	// Env is the run: its module root, registry path, results root and
	// level, and (Env.Layer) the coordinates of a layer that passed
	// preflight; when Preflight is nil or failed, step 2 ends the ladder.
	Env       runenv.Env
	Registry  *registry.Registry
	Preflight *faultlayer.Preflight
	LayerErr  error
	// Capacity is the run's saturation evidence, if it was sampled.
	Capacity *capacity.Report
	// Reruns is how many times to rerun the failing test alone (default
	// 2): a test that fails both is consistent; one that fails and passes
	// is flaky as soon as it has done both.
	Reruns int
	// Contracts caches contract results by surface across walks.
	Contracts map[string]*contract.Result
	// History is the flake history (validate's outcomes of earlier runs):
	// context for the outcome, never a vote on its class.
	History []flakes.Outcome
	// Seen is the battery the failure was reported from: validate's own,
	// or for arbitrate the last validate run's; nil when there is none. A
	// test that did not fail there and passes every rerun has no failure
	// to arbitrate (NoFailure).
	Seen *battery.Result
	// SeenRunID is the run id of the battery Seen: that run counts in the
	// test's history, whether or not the history holds it yet.
	SeenRunID string
	// Stale, when set, says why Seen is nil though a validate ran: it ran
	// other code (another commit, other changes, other build flags).
	Stale string
	// Starts are the legs' start records of that battery: the seed a
	// failing leg ran with, for its reruns and its replay.
	Starts []legstart.Start
	// Records are that battery's fault records: an oracle's violation in
	// them outranks the machine's load.
	Records []faultrecord.Record
	// Interference is what other runs on this Docker host did to this
	// run's containers during the battery (hostevents).
	Interference []Interference
	// Noise is the neighbour the battery ran beside, when one was armed.
	Noise *noise.Evidence
	// Beside, when set, is the neighbour a test that did not fail every
	// rerun alone is rerun beside, whatever the capacity evidence says
	// (arbitrate's CONTESTED_NOISE); without it the ladder reruns beside
	// the battery's neighbour (at least two busy threads per core), and
	// only when the evidence says the machine was busy.
	Beside *noise.Spec
	Out    io.Writer
	// Quiet is the run's budget of waiting for a quiet machine before a
	// rerun alone, shared by every walk of the run (nil: a walk's own).
	Quiet *Quiet
	// Binaries, when set, are the command's test binaries: the reruns and
	// the contract's seeds build each package once (battery.Binaries).
	Binaries *battery.Binaries
	// Replay are the variables each package's tests read in the battery
	// (replayenv): the replay line carries them, and the reruns and the
	// contract in isolation run with them again.
	Replay *replayenv.Set
}

// Walk walks the ladder for one test id: "TestX", "TestX/sub", or a
// package-qualified "import/path.TestX/sub" as the battery reports it.
// When ctx ends (validate's budget) a walk that had started reports what
// it learned so far (Outcome.Incomplete) instead of an error.
func Walk(ctx context.Context, testID string, opts Options) (*Outcome, error) {
	start := time.Now()
	if opts.Reruns <= 0 {
		opts.Reruns = 2
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	if opts.Quiet == nil {
		opts.Quiet = NewQuiet()
	}
	pkg, name := SplitID(testID)
	o := &Outcome{Test: name, Package: pkg}
	defer func() { o.Took = time.Since(start) }()

	// Step 1: name the surface and the behaviour, when a surface lists it.
	s, err := Locate(ctx, testID, opts)
	contractTest := err == nil
	if err != nil && !errors.Is(err, ErrNotContractTest) {
		return nil, err
	}
	if contractTest {
		o.Surface = &Surface{ID: s.ID, Class: s.Class, Owner: s.Owner, Behavior: s.Behavior, Oracle: s.Oracle, Where: fmt.Sprintf("%s:%d", opts.Env.Registry, s.Line)}
		fmt.Fprintf(opts.Out, "ladder: %s → surface %s (%s; oracle %s; owner %s)\n", terminal.Escape(name), terminal.Escape(s.ID), terminal.Escape(s.Behavior), terminal.Escape(s.Oracle), terminal.Escape(s.Owner))
	} else {
		fmt.Fprintf(opts.Out, "ladder: %s: no surface lists it; walking it as an ordinary test\n", terminal.Escape(name))
	}
	if t, ok := failedTest(opts, pkg, name); ok {
		o.Reason = contract.Reason(t.Failure, t.Output)
		if t.Cause != "" && t.Failure == "" {
			o.Reason = t.Cause // what ended it: a timeout, a crash
		}
		if pkg == "" {
			pkg = t.Package
		}
	}
	seedFromStart(o, opts, pkg, name)
	if _, isLeg := legOf(s, name); o.Seed == 0 && contractTest && isLeg {
		// No start record (arbitrate without the battery's results): one
		// seed for every rerun, so that they agree and the replay has it.
		given, err := seed.FromEnv()
		if err != nil {
			return nil, err
		}
		o.Seed = int64(given.OrNew())
		dir := s.Package
		if dir == "" {
			dir = "./..."
		}
		o.Replay = seed.Seed(o.Seed).Replay(max(opts.Env.Level, 1), dir, name)
		fmt.Fprintf(opts.Out, "ladder: %s: no record of the seed it failed with; rerunning it with seed %d\n", terminal.Escape(name), o.Seed)
	}

	o.replay = opts.Replay.Of(cmp.Or(pkg, s.Package))
	o.Replay = replayenv.Prefix(o.Replay, o.replay)
	opts.Env = withReplay(opts.Env, o.replay, name, opts.Out)

	// Step 2: the fault layer must pass preflight. Any failed check ends
	// the ladder, whether or not bringing the layer up returned an error
	// (arbitrate hands over a failed preflight of a layer that came up),
	// and so does a preflight that checked nothing: it vouches for nothing.
	if !layerPassed(opts) {
		o.Step, o.Owner, o.Verdict, o.Contract = 2, FaultLayer, contractFinding(verdict.CannotRun), verdict.CannotRun
		o.Action = "repair the fault layer, then walk the ladder again: " + layerProblem(opts)
		return o, nil
	}

	// Step 3: the test alone, at the granularity that failed, with its
	// seed; then what the machine gave it; its history as context; and,
	// when a surface lists it, the contract in isolation.
	o.Step = 3
	runPkg := pkg
	if runPkg == "" && contractTest {
		runPkg = s.Package
	}
	o.Reruns, o.PackageFailure, o.Runs = rerunAlone(ctx, name, runPkg, o.Seed, batteryFailure(o, opts, pkg, name), opts)
	fmt.Fprintf(opts.Out, "ladder: %s: %s\n", terminal.Escape(name), terminal.Escape(o.Reruns.Say()))
	current := ""
	if opts.Seen != nil {
		current = opts.SeenRunID
	}
	o.History = fromHistory(opts.History, pkg, name, current, failedIn(opts.Seen, opts, pkg, name))
	if o.History != nil {
		o.Evidence = append(o.Evidence, "history: "+o.History.Say())
	}
	switch o.Reruns.Class {
	case PackageFails:
		packageDoesNotRun(o, s, contractTest)
		return o, nil
	case NeverRuns:
		neverRuns(o, s, runPkg, contractTest)
		return o, nil
	case NotRerun:
		incomplete(o, ctx, "its reruns")
		undecided(o, s, contractTest)
		return o, nil
	}
	if o.Reruns.Class == Passes && !failedIn(opts.Seen, opts, pkg, name) {
		noFailure(o, opts)
		return o, nil
	}
	// The failure's own evidence ranks above load (see rank.go): a
	// consistent failure or a named violation needs no neighbour run,
	// since none could change who owns it.
	o.Violation = violation(o, opts)
	if o.Violation != "" {
		o.Evidence = append(o.Evidence, "violation: "+o.Violation)
	}
	o.Interference = interferenceDuring(opts, o.Package, name)
	if o.Reruns.Class != Consistent {
		o.Capacity = capacityOf(ctx, o, runPkg, opts, o.Violation == "" && len(o.Interference) == 0)
	}
	if len(o.Interference) > 0 && o.Violation == "" && quietPass(o.Reruns) {
		interfered(o, alone(o, runPkg))
		return o, nil
	}
	if !contractTest {
		seen, _ := failedTest(opts, o.Package, name)
		decidePlain(o, runPkg, seen)
		return o, nil
	}
	if lever, ok := legOf(s, name); ok && (o.Reruns.Class != Passes || o.Capacity.Fragile || o.Violation != "") {
		decideLegAlone(o, s, lever, opts)
		return o, nil
	}
	res, err := isolated(ctx, o, s, name, opts)
	if err != nil {
		if ctx.Err() != nil {
			incomplete(o, ctx, s.ID+"'s contract in isolation")
			undecided(o, s, contractTest)
			return o, nil
		}
		return nil, err
	}
	o.Contract, o.Legs = res.Contract, res.Legs
	decide(o, s, res, opts)
	return o, nil
}

// batteryFailure is what the battery saw of the failing test: the
// oracle's violation its records hold, else its failure; about time when
// that says so, or a timeout or crash ended it.
func batteryFailure(o *Outcome, opts Options, pkg, name string) failure {
	f := failure{evidence: violatedIn(opts.Records, name)}
	if f.evidence == "" {
		f.evidence = o.Reason
	}
	t, ok := failedTest(opts, pkg, name)
	f.aboutTime = timing.MatchString(f.evidence) || ok && (t.Timeout != "" || t.Cause != "") || !ok && o.Reason == ""
	return f
}

// withReplay is the run's environment with the variables the test's
// package read in the battery, for its reruns and its contract; a
// secret's value comes from this process's environment, and one it lacks
// is named.
func withReplay(e runenv.Env, vars []replayenv.Var, name string, out io.Writer) runenv.Env {
	if len(vars) == 0 {
		return e
	}
	env, missing := replayenv.Environ(vars, os.LookupEnv)
	var words []string
	for _, v := range vars {
		if !slices.Contains(replayenv.Build, v.Name) {
			words = append(words, v.Word())
		}
	}
	if len(words) == 0 {
		return e
	}
	fmt.Fprintf(out, "ladder: %s: its reruns run with what its package's tests read in the battery: %s\n", terminal.Escape(name), terminal.Escape(strings.Join(words, " ")))
	if len(missing) > 0 {
		fmt.Fprintf(out, "ladder: %s: its package's tests read %s, which this environment does not set: its reruns run without them\n", terminal.Escape(name), strings.Join(missing, ", "))
	}
	return e.WithReplay(env)
}

// failedTest is the test as the battery it was reported from saw it fail.
func failedTest(opts Options, pkg, name string) (battery.Test, bool) {
	if opts.Seen == nil {
		return battery.Test{}, false
	}
	for _, t := range opts.Seen.Tests {
		if t.Name == name && t.Action == "fail" && (pkg == "" || t.Package == pkg) {
			return t, true
		}
	}
	return battery.Test{}, false
}

// seedFromStart gives the outcome the seed and replay the failing test's
// leg recorded when it started.
func seedFromStart(o *Outcome, opts Options, pkg, name string) {
	if st, ok := legstart.Of(opts.Starts, pkg, name); ok {
		o.Seed, o.Replay = st.Seed, st.Replay
	}
}

// legOf is the lever a test of s runs, when it is one of its legs: its
// last name element names a lever of s.
func legOf(s registry.Surface, name string) (string, bool) {
	if i := strings.LastIndexByte(name, '/'); i >= 0 && slices.Contains(s.Legs, name[i+1:]) {
		return name[i+1:], true
	}
	return "", false
}

// incomplete notes what the walk did not reach because ctx ended.
func incomplete(o *Outcome, ctx context.Context, what string) {
	why := "the run was interrupted"
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		why = "the ladder's budget ended"
	}
	if o.Incomplete == "" {
		o.Incomplete = why + " before " + what
	}
}

// layerPassed reports whether the layer came up and passed a preflight
// that checked something.
func layerPassed(opts Options) bool {
	return opts.LayerErr == nil && opts.Preflight != nil && len(opts.Preflight.Checks) > 0 && opts.Preflight.OK()
}

func layerProblem(opts Options) string {
	if opts.LayerErr != nil {
		return opts.LayerErr.Error()
	}
	if opts.Preflight == nil {
		return "preflight did not run"
	}
	if len(opts.Preflight.Checks) == 0 {
		return "preflight ran no checks"
	}
	var parts []string
	for _, c := range opts.Preflight.Failed() {
		parts = append(parts, fmt.Sprintf("%s: %s (fix: %s)", c.Name, c.Detail, c.Fix))
	}
	return strings.Join(parts, "; ")
}

// failedIn reports whether the test failed in the battery b: the test or
// one of its subtests failed, or the package it lives in failed outside
// any test. A nil battery shows no failure.
func failedIn(b *battery.Result, opts Options, pkg, name string) bool {
	if b == nil {
		return false
	}
	module, _ := contract.ModulePath(opts.Env.ModuleRoot)
	inPackage := func(p string) bool {
		if pkg != "" {
			return p == pkg
		}
		_, ok := contract.SurfaceOf(opts.Registry, module, p, name)
		return ok
	}
	for _, t := range b.Failed() {
		if (t.Name == name || strings.HasPrefix(t.Name, name+"/")) && inPackage(t.Package) {
			return true
		}
	}
	for _, p := range b.FailedPackages() {
		if inPackage(p.Name) {
			return true
		}
	}
	return false
}
