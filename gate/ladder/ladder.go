// Package ladder walks the arbitration ladder for a failing test and always
// ends with an owner and an action: name the surface and its behaviour;
// run the fault-layer preflight; run the surface's contract in isolation;
// read the verdict. "Environment" is never a terminal answer: the only
// environmental owners are the fault layer (CANNOT RUN) and capacity, and
// capacity only with evidence of what was contended.
package ladder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/contested/contested/contested"
	"github.com/contested/contested/contested/runenv"
	"github.com/contested/contested/faultlayer"
	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/gate/contract"
	"github.com/contested/contested/gate/flakes"
	"github.com/contested/contested/gate/verdict"
	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/capacity"
	"github.com/contested/contested/internal/gotest"
	"github.com/contested/contested/registry"
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

// NoFailure is the verdict of a test that did not fail: not in the battery
// it was reported from (Options.Seen), nor in any rerun. There is nothing
// to arbitrate: no owner, no action to take, no issue.
const NoFailure = "NO FAILURE"

// ErrNotContractTest: the test exists but no surface in the registry lists
// it. It is a test of the project's machinery or an ordinary unit test:
// there is no surface, leg or owning team to arbitrate between, so the
// ladder does not walk it (see Plain for what to do instead).
var ErrNotContractTest = errors.New("not a contract test")

// Surface is the registry entry a test maps to.
type Surface struct {
	ID       string `json:"id"`
	Class    string `json:"class"`
	Owner    string `json:"owner"`
	Behavior string `json:"behavior"`
	Oracle   string `json:"oracle"`
	Where    string `json:"where"` // file:line of the entry
}

// Reruns is the flake classification of the failing test itself.
type Reruns struct {
	Runs     int `json:"runs"`
	Failures int `json:"failures"`
	// NotRun counts the failed runs in which the test never ran: its
	// package failed first (does not build, TestMain exited).
	NotRun int `json:"not_run,omitempty"`
	// Absent counts the passing runs in which the test never ran: its
	// package passed without it (a TestMain that returns before m.Run, a
	// build constraint that leaves the file out).
	Absent int    `json:"absent,omitempty"`
	Class  string `json:"class"` // consistent, flaky, passes, not rerun, package fails, never runs
	// History is the test's last runs in the flake history, when it has
	// any: the class then judges the reruns and those runs together.
	History *History `json:"history,omitempty"`
}

// History is what the flake history says of the failing test.
type History struct {
	Runs   int `json:"runs"`
	Failed int `json:"failed"`
	// FirstFailingRun and FirstFailingCommit are the oldest failing run
	// among them, and its commit.
	FirstFailingRun    string `json:"first_failing_run,omitempty"`
	FirstFailingCommit string `json:"first_failing_commit,omitempty"`
}

// PackageFails is the rerun class of a test whose package failed before
// the test ran, in every rerun.
const PackageFails = "package fails"

// NeverRuns is the rerun class of a test that never ran in any rerun
// while its package passed: nothing was exercised, so "passes" would be a
// pass no test earned.
const NeverRuns = "never runs"

// Outcome is where the ladder ended.
type Outcome struct {
	Test      string               `json:"test"`
	Package   string               `json:"package,omitempty"`
	Surface   *Surface             `json:"surface,omitempty"`
	Step      int                  `json:"step"` // 1, 2 or 3: the step that decided
	Contract  verdict.Contract     `json:"contract,omitempty"`
	Legs      []contract.LegResult `json:"legs,omitempty"`
	Reruns    Reruns               `json:"reruns"`
	Owner     Owner                `json:"owner"`
	OwnerName string               `json:"owner_name,omitempty"` // the team, for a component
	Verdict   string               `json:"verdict"`              // the finer verdict that decided
	Action    string               `json:"action"`
	Evidence  []string             `json:"evidence,omitempty"`
	Contended []string             `json:"contended,omitempty"` // for capacity
	// PackageFailure is what kept the test from running in its reruns.
	PackageFailure *Plain        `json:"package_failure,omitempty"`
	Took           time.Duration `json:"took_ns"`
	// Runs is what the walk ran, for the flake history: each rerun of the
	// test, then each seed of the contract when the walk ran it.
	Runs []contract.SeedRun `json:"-"`
}

// NoFailure reports whether the ladder found no failure to arbitrate.
func (o *Outcome) NoFailure() bool { return o.Verdict == NoFailure }

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
	// Reruns is how many times to rerun the failing test (default 3).
	Reruns int
	// Contracts caches contract results by surface across walks.
	Contracts map[string]*contract.Result
	// History is the flake history (validate's outcomes of earlier runs);
	// when it holds runs of the failing test, the flaky and consistent
	// judgements weigh them with the reruns, and say so.
	History []flakes.Outcome
	// Seen is the battery the failure was reported from: validate's own,
	// or for arbitrate the last validate run's; nil when there is none. A
	// test that did not fail there and passes every rerun has no failure
	// to arbitrate (NoFailure).
	Seen *battery.Result
	Out  io.Writer
	// Binaries, when set, are the command's test binaries: the reruns and
	// the contract's seeds build each package once (battery.Binaries).
	Binaries *battery.Binaries
}

// Walk walks the ladder for one test id: "TestX", "TestX/sub", or a
// package-qualified "import/path.TestX/sub" as the battery reports it.
func Walk(ctx context.Context, testID string, opts Options) (*Outcome, error) {
	start := time.Now()
	if opts.Reruns <= 0 {
		opts.Reruns = 3
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	pkg, name := SplitID(testID)
	o := &Outcome{Test: name, Package: pkg}
	defer func() { o.Took = time.Since(start) }()

	// Step 1: name the surface and the behaviour.
	s, err := Locate(ctx, testID, opts)
	if err != nil {
		return nil, err
	}
	o.Surface = &Surface{ID: s.ID, Class: s.Class, Owner: s.Owner, Behavior: s.Behavior, Oracle: s.Oracle, Where: fmt.Sprintf("%s:%d", opts.Env.Registry, s.Line)}
	fmt.Fprintf(opts.Out, "ladder: %s → surface %s (%s; oracle %s; owner %s)\n", name, s.ID, s.Behavior, s.Oracle, s.Owner)

	// Step 2: the fault layer must pass preflight. Any failed check ends
	// the ladder, whether or not bringing the layer up returned an error
	// (arbitrate hands over a failed preflight of a layer that came up),
	// and so does a preflight that checked nothing: it vouches for nothing.
	if !layerPassed(opts) {
		o.Step, o.Owner, o.Verdict, o.Contract = 2, FaultLayer, string(verdict.CannotRun), verdict.CannotRun
		o.Action = "repair the fault layer, then walk the ladder again: " + layerProblem(opts)
		return o, nil
	}

	// Step 3: the failing test again (flake classification), then the
	// surface's contract in isolation over its seed budget.
	runPkg := pkg
	if runPkg == "" {
		runPkg = s.Package
	}
	o.Reruns, o.PackageFailure, o.Runs = rerun(ctx, name, runPkg, opts)
	o.Reruns = withHistory(o.Reruns, opts.History, pkg, name)
	fmt.Fprintf(opts.Out, "ladder: %s: %s\n", name, o.Reruns.Say())
	if o.Reruns.Class == PackageFails {
		packageDoesNotRun(o, s)
		return o, nil
	}
	if o.Reruns.Class == NeverRuns {
		neverRuns(o, s, runPkg)
		return o, nil
	}
	if o.Reruns.Class == "passes" && !failedIn(opts.Seen, opts, pkg, name) {
		noFailure(o, opts.Seen)
		return o, nil
	}
	res, ok := opts.Contracts[s.ID]
	if !ok {
		seeds, err := contract.Seeds(s.Budget.Hardening.Seeds, s.LegsAt(max(opts.Env.Level, 1)), max(opts.Env.Level, 1))
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(opts.Out, "ladder: running %s's contract in isolation over %d seeds\n", s.ID, len(seeds))
		res, err = contract.Run(ctx, s, contract.Options{Env: opts.Env, Seeds: seeds, Out: opts.Out, Binaries: opts.Binaries})
		if err != nil {
			return nil, err
		}
		if opts.Contracts != nil {
			opts.Contracts[s.ID] = res
		}
		o.Runs = append(o.Runs, res.Seeds...)
	}
	o.Step, o.Contract, o.Legs = 3, res.Contract, res.Legs
	decide(o, s, res, opts)
	return o, nil
}

// packageDoesNotRun ends the ladder for a test whose package failed before
// the test ran in every rerun: the test author (the package's TestMain, its
// build) owns it, and neither the test nor the contract can be judged
// until the package runs its tests.
func packageDoesNotRun(o *Outcome, s registry.Surface) {
	pf := o.PackageFailure
	o.Step, o.Owner, o.Verdict = 3, TestAuthor, "package "+pf.What
	o.Action = fmt.Sprintf("%s: %s; the test never ran, so neither it nor %s's contract can be judged until its package runs its tests", pf.Package, pf.Action, s.ID)
	o.Evidence = append(o.Evidence, pf.FirstLine)
}

// neverRuns ends the ladder for a test its package passed without running,
// in every rerun: the test author owns it, and the contract cannot be
// judged until the test runs.
func neverRuns(o *Outcome, s registry.Surface, pkg string) {
	o.Step, o.Owner, o.Verdict = 3, TestAuthor, "test never runs"
	if pkg == "" {
		pkg = "./..."
	}
	o.Action = fmt.Sprintf("%s passed all %d reruns without running %s: a TestMain that returns before m.Run, or a build constraint that leaves its file out; make the test run (go test %s -run '%s' -v lists what ran), then walk the ladder again; %s's contract cannot be judged until it does", pkg, o.Reruns.Runs, o.Test, pkg, contested.RunPattern(o.Test), s.ID)
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

// noFailure ends the ladder for a test that did not fail: there is no
// owner and nothing to fix.
func noFailure(o *Outcome, seen *battery.Result) {
	o.Step, o.Owner, o.Verdict = 3, "", NoFailure
	where := "there is no validate run to compare with (no validate.json in the results directory)"
	if seen != nil {
		where = "it did not fail in the last validate run either"
	}
	o.Action = fmt.Sprintf("nothing to arbitrate: %s passed all %d reruns and %s; if it failed somewhere else (a CI job), arbitrate it there, with that run's results, or run go tool mage validate and arbitrate what fails", o.Test, o.Reruns.Runs, where)
}

// decide reads the contract verdict into an owner and an action.
func decide(o *Outcome, s registry.Surface, res *contract.Result, opts Options) {
	switch res.Contract {
	case verdict.Red:
		o.Owner, o.OwnerName = Component, s.Owner
		for _, l := range res.Legs {
			if !l.Verdict.Fail() {
				continue
			}
			o.Verdict = string(l.Verdict)
			o.Action = fmt.Sprintf("fix %s (%s): leg %s is %s in isolation with seed %d; reproduce with %s; file it as a fix: issue with the leg and the seed",
				s.ID, s.Behavior, l.Lever, l.Verdict, l.FailedRun, l.Replay)
			o.Evidence = append(o.Evidence, "leg "+l.Lever+": "+l.Reason, "injector: "+l.Injector, "victim: "+l.Victim)
			break
		}
	case verdict.Green:
		flake := o.Reruns.Say()
		if opts.Capacity != nil && opts.Capacity.Saturated {
			o.Owner, o.Verdict, o.Contended = Capacity, "GREEN contract, saturated run", opts.Capacity.Contended
			o.Action = fmt.Sprintf("record the capacity attribution (%s) and still fix it: own the fixture's resources or run this battery out of band; %s; the component holds its contract in isolation",
				strings.Join(opts.Capacity.Contended, "; "), flake)
			return
		}
		o.Owner = TestAuthor
		o.Verdict = "GREEN contract, " + map[bool]string{true: "flaky battery", false: "consistent battery failure"}[o.Reruns.Class != "consistent"]
		o.Action = fmt.Sprintf("fix the test or its fixture without loosening it (no added serialization, no wider timeouts, no weaker assertions): %s holds its contract in isolation, so the defect is in the test, its fixture or its envelope; %s", s.ID, flake)
	case verdict.CannotRun:
		o.Owner, o.Verdict = FaultLayer, string(verdict.CannotRun)
		o.Action = "repair the fault layer, then walk the ladder again"
	case verdict.NotAtThisLevel:
		o.Owner, o.Verdict = TestAuthor, string(verdict.NotAtThisLevel)
		o.Action = fmt.Sprintf("no leg of %s runs at level %d, so its contract cannot judge this failure: walk the ladder again at a level its legs run at (CONTESTED_LEVEL), or fix the test if it should not run here", s.ID, res.Level)
	default:
		o.Owner, o.Verdict = TestAuthor, string(verdict.Inconclusive)
		var weak []string
		for _, l := range res.Legs {
			if !l.Verdict.Pass() && l.Verdict != verdict.NotAtLevel {
				weak = append(weak, fmt.Sprintf("%s is %s (%s)", l.Lever, l.Verdict, l.Reason))
			}
		}
		o.Action = "make the contract decisive before judging the component: " + strings.Join(weak, "; ")
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

// rerun runs the failing test alone, opts.Reruns times, each with a
// private results directory so its records never mix with a battery's. A
// run in which the test never ran because its package failed first counts
// as failed and NotRun, and the package's failure is returned.
func rerun(ctx context.Context, name, pkg string, opts Options) (Reruns, *Plain, []contract.SeedRun) {
	if pkg == "" {
		pkg = "./..."
	}
	top, _, _ := strings.Cut(name, "/")
	var pf *Plain
	var runs []contract.SeedRun
	r := Reruns{Class: "not rerun"}
	for i := range opts.Reruns {
		rel := filepath.Join("ladder", "reruns", FileName(name), fmt.Sprintf("run-%d", i+1))
		dir := filepath.Join(opts.Env.ResultsDir, rel)
		if err := atomicfile.EmptyDir(opts.Env.ResultsDir, rel); err != nil {
			if opts.Out != nil {
				fmt.Fprintf(opts.Out, "ladder: not rerunning %s: %v\n", name, err)
			}
			break
		}
		env := opts.Env.WithResultsDir(dir).Environ()
		res, err := battery.Run(ctx, battery.Options{Dir: opts.Env.ModuleRoot, Patterns: []string{pkg}, Args: []string{"-run", contested.RunPattern(name)}, Env: env, Binaries: opts.Binaries})
		if err != nil {
			break
		}
		r.Runs++
		if !res.OK() {
			r.Failures++
		}
		recs, _ := contract.ReadRecords(faultrecord.FaultDir(dir))
		runs = append(runs, contract.SeedRun{Dir: dir, Passed: res.OK(), Tests: res.Tests, Records: recs})
		if failed := res.FailedPackages(); len(failed) > 0 && !ran(res, top) {
			r.NotRun++
			p := PackageFailure(failed[0].Name, failed[0].Output, 0)
			pf = &p
		} else if res.OK() && !ran(res, top) {
			r.Absent++
		}
	}
	switch {
	case r.Runs == 0:
	case r.NotRun == r.Runs:
		r.Class = PackageFails
	case r.Absent == r.Runs:
		r.Class = NeverRuns
	case r.Failures == r.Runs:
		r.Class = "consistent"
	case r.Failures == 0:
		r.Class = "passes"
	default:
		r.Class = "flaky"
	}
	return r, pf, runs
}

// ran reports whether the top-level test ran to an end in res.
func ran(res *battery.Result, top string) bool {
	for _, t := range res.Tests {
		if t.Name == top {
			return true
		}
	}
	return false
}

// Locate is the ladder's first step: it maps a test id to the surface that
// lists it. A test the module does not have is ErrUnknownTest; a test no
// surface lists is ErrNotContractTest, with what to do instead.
func Locate(ctx context.Context, testID string, opts Options) (registry.Surface, error) {
	pkg, name := SplitID(testID)
	top, _, _ := strings.Cut(name, "/")
	listPkg := pkg
	if listPkg == "" {
		listPkg = "./..."
	}
	names, err := gotest.List(ctx, opts.Env.ModuleRoot, listPkg)
	switch {
	case errors.Is(err, gotest.ErrPattern):
		return registry.Surface{}, fmt.Errorf("%w: %s is not a package of the module (%v); give a test name as the battery reports it", ErrUnknownTest, listPkg, err)
	case err != nil && !errors.Is(err, gotest.ErrUnparsed):
		return registry.Surface{}, fmt.Errorf("%w: list the tests of %s: %w", ErrCannotList, listPkg, err)
	case !slices.Contains(names, top) && err != nil:
		return registry.Surface{}, fmt.Errorf("%w: %s is not declared in a test file of %s that parses, and some do not, so it may be in one of them: fix the syntax error and arbitrate again: %v", ErrUnknownTest, top, listPkg, err)
	case !slices.Contains(names, top):
		return registry.Surface{}, fmt.Errorf("%w: %s is not a test of %s (no _test.go file there declares it); give a test name as the battery reports it", ErrUnknownTest, top, listPkg)
	}
	module, _ := contract.ModulePath(opts.Env.ModuleRoot)
	s, ok := contract.SurfaceOf(opts.Registry, module, pkg, name)
	if !ok {
		p := NewPlain(pkg, name, "")
		return registry.Surface{}, fmt.Errorf("%w: %s: no surface in %s lists it, so there is nothing to arbitrate (no surface, legs or owning team); owner: %s; %s",
			ErrNotContractTest, name, opts.Env.Registry, p.Owner, p.Action)
	}
	return s, nil
}

// SplitID splits a test id into its package (possibly empty) and the test
// path: "example.com/m/store.TestX/sub" gives ("example.com/m/store",
// "TestX/sub").
func SplitID(id string) (pkg, name string) {
	id = strings.TrimSpace(id)
	if isTestName(id) {
		return "", id
	}
	for i := 0; i < len(id); i++ {
		if id[i] == '.' && isTestName(id[i+1:]) && !strings.Contains(id[:i], " ") {
			return id[:i], id[i+1:]
		}
	}
	return "", id
}

func isTestName(s string) bool {
	for _, p := range []string{"Test", "Example", "Fuzz", "Benchmark"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// FileName is the artifact name of a test's ladder outcome (without
// extension), under the results directory's ladder/: at most 120 bytes,
// and two tests never share one (TestA/b and TestA_b differ; see
// faultrecord.SafeFileName).
func FileName(test string) string { return faultrecord.SafeFileName(test) }

// withHistory weighs the test's runs in the flake history with its reruns:
// the class is judged over both (consistent: every one failed; passes:
// none; flaky: some), and r.History says what the history held. A test
// whose package does not run keeps its class; no runs in the history
// leave r as it is.
func withHistory(r Reruns, outs []flakes.Outcome, pkg, name string) Reruns {
	if len(outs) == 0 || r.Class == PackageFails || r.Class == NeverRuns {
		return r
	}
	id := name
	if pkg != "" {
		id = pkg + "." + name
	}
	s := flakes.Summarize(outs, id, historyRuns)
	if len(s.Runs) == 0 {
		return r
	}
	h := &History{Runs: len(s.Runs), Failed: s.Failed}
	if f := s.FirstFailure; f != nil {
		h.FirstFailingRun, h.FirstFailingCommit = f.RunID, f.Commit
	}
	r.History = h
	runs, failed := r.Runs+h.Runs, r.Failures+h.Failed
	switch {
	case failed == runs:
		r.Class = "consistent"
	case failed == 0:
		r.Class = "passes"
	default:
		r.Class = "flaky"
	}
	return r
}

// historyRuns is how many of a test's last runs the ladder reads.
const historyRuns = 20

// Say is the flake evidence in words: the reruns, and the history's runs
// when it held any.
func (r Reruns) Say() string {
	s := fmt.Sprintf("the test failed %d of %d reruns", r.Failures, r.Runs)
	if r.Class == NeverRuns {
		s = fmt.Sprintf("the test ran in none of %d reruns, which its package passed", r.Runs)
	}
	if h := r.History; h != nil {
		s += fmt.Sprintf(" and %d of its last %d runs in the flake history", h.Failed, h.Runs)
		if h.FirstFailingCommit != "" {
			s += fmt.Sprintf(" (first failing run %s, commit %s)", h.FirstFailingRun, h.FirstFailingCommit)
		} else if h.FirstFailingRun != "" {
			s += fmt.Sprintf(" (first failing run %s)", h.FirstFailingRun)
		}
	}
	return s + " (" + r.Class + ")"
}
