// Package contract runs a surface's contested contract in isolation: its
// tests, off the full battery, once per seed of its budget, each with a
// private results directory; and it judges every leg with the ten-state
// verdict and the surface with GREEN, RED, CANNOT RUN or INCONCLUSIVE.
package contract

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/capability"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/faultdir"
	"github.com/contested/contested/internal/faultlayer/levers"
	"github.com/contested/contested/internal/gate"
	"github.com/contested/contested/internal/gate/verdict"
	"github.com/contested/contested/internal/legstart"
	"github.com/contested/contested/internal/registry"
	"github.com/contested/contested/internal/runenv"
	seedpkg "github.com/contested/contested/internal/seed"
	"github.com/contested/contested/internal/touched"
)

// Reruns is how many times a failing seed is rerun with the same seed: it
// is FAIL-reproducible only when every rerun fails too, and a rerun that
// passes ends the reruns (FAIL-nondeterministic). Four reruns tell a defect
// that fails half the runs from a reproducible one fifteen times in
// sixteen (one that fails a third of them, eighty times in eighty-one),
// and cost nothing while the contract passes.
const Reruns = 4

// Options configures Run.
type Options struct {
	// Env is the run: its module root, registry, level, the fault layer's
	// coordinates for the tests, and the results root; each seed runs under
	// contested/<surface>/ of it.
	Env   runenv.Env
	Seeds []int64 // the seeds to run, in order
	Out   io.Writer
	// EnvMissing, when set, says the fault layer cannot run: every leg is
	// INCONCLUSIVE-env and nothing is run.
	EnvMissing string
	// Binaries, when set, are the command's test binaries: each package is
	// built once for all the seeds and reruns (battery.Binaries).
	Binaries *battery.Binaries
	// Capabilities, when set, is what the machine has: a leg that cannot
	// run for a missing one names it and the command that provides it.
	Capabilities capability.Matrix
	// Tests, when set, are the tests to run instead of the surface's own:
	// one leg's subtest, say, which the ladder runs alone over a seed
	// budget without its siblings.
	Tests []string
	// TestLogs, when set, is a private directory the seeds' test binaries
	// log what they read to (battery.Options.TestLogs): each SeedRun's
	// Read.
	TestLogs string
}

// SeedRun is one run of the surface's tests: under contested, one go test
// run with one seed; under validate, the battery (Seed 0: each leg drew
// its own seed, which its records carry).
type SeedRun struct {
	Seed    int64                `json:"seed"`
	Dir     string               `json:"dir,omitempty"`
	Passed  bool                 `json:"passed"`
	Failed  []string             `json:"failed_tests,omitempty"`
	Ran     []string             `json:"ran_tests,omitempty"`     // passed or failed
	Skipped []string             `json:"skipped_tests,omitempty"` // skipped, e.g. below a leg's level
	Records []faultrecord.Record `json:"records"`
	Rerun   *bool                `json:"rerun_failed,omitempty"` // set when the run failed and was rerun: every rerun failed too
	Reruns  int                  `json:"reruns,omitempty"`       // how many reruns ran
	// RerunTests says, per failing test, whether it failed again when rerun
	// alone with its leg's seed; it overrides Rerun for that test.
	RerunTests map[string]bool `json:"rerun_failed_tests,omitempty"`
	Took       time.Duration   `json:"took_ns"`
	// Failures maps each failing test (name without package) to its output.
	Failures map[string]string `json:"-"`
	// Reasons maps each failing test to the failure it reported
	// (battery.Test.Failure), when it reported one.
	Reasons map[string]string `json:"-"`
	// Lacked maps each test that skipped (or failed) for a missing
	// capability to the capabilities it named (battery.Test.Missing).
	Lacked map[string][]string `json:"-"`
	// Starts are the legs' start records of a battery run (Seed 0): the
	// seed of a leg that wrote no fault record.
	Starts []legstart.Start `json:"-"`
	// Tests is every test outcome of the run and of its reruns, in the
	// order they ran, for the flake history.
	Tests []battery.Test `json:"-"`
	// Read are, by package, the environment variables its tests read
	// (Options.TestLogs; package touched), each once.
	Read map[string][]string `json:"-"`
	// failing lists the surface's tests whose go test failed, in order:
	// what a rerun runs again.
	failing []string
}

// Result is one surface's contract verdict.
type Result struct {
	Surface  string           `json:"surface"`
	Class    string           `json:"class"`
	Owner    string           `json:"owner"`
	Behavior string           `json:"behavior"`
	Oracle   string           `json:"oracle"`
	Level    int              `json:"level"`
	Contract verdict.Contract `json:"contract"`
	Legs     []verdict.Leg    `json:"legs"`
	Seeds    []SeedRun        `json:"seeds"`
	Took     time.Duration    `json:"took_ns"`
}

// Leg returns the result of one lever.
func (r *Result) Leg(lever string) (verdict.Leg, bool) {
	for _, l := range r.Legs {
		if l.Lever == lever {
			return l, true
		}
	}
	return verdict.Leg{}, false
}

// Seeds returns the seeds to run a surface's contract with: CONTESTED_SEED
// alone when it is set (a replay), else n fresh ones (CONTESTED_SEEDS when
// set, else budget) picked for their schedules (see PickSeeds) for the
// legs at level.
func Seeds(budget int, legs []string, level int) ([]int64, error) {
	s, err := seedpkg.FromEnv()
	if err != nil {
		return nil, err
	}
	if s.IsSet() {
		return []int64{int64(s)}, nil
	}
	n, err := runenv.Seeds()
	if err != nil {
		return nil, err
	}
	if n == 0 {
		n = budget
	}
	return PickSeeds(max(n, 1), legs, level, rand.Int64N), nil
}

// PickSeeds picks n seeds among fresh candidates (drawn with draw) so that
// their schedules for legs at level are distinct, and, greedily, so that
// each next seed adds the most lever choices the seeds before it did not
// cover (a reset downstream when the first seed reset only upstream): a
// budget of n seeds is n schedules that spread over what the levers can
// do, which random seeds do not promise.
func PickSeeds(n int, legs []string, level int, draw func(int64) int64) []int64 {
	type candidate struct {
		seed   int64
		key    string
		traits []string
	}
	cands := make([]candidate, 0, 16*n)
	for range 16 * n {
		c := candidate{seed: 1 + draw(1<<53-1)}
		var keys []string
		for _, name := range legs {
			l, ok := levers.Lookup(name)
			if !ok {
				continue
			}
			sched := levers.NewSchedule(l, c.seed, levers.Scope{Level: level})
			keys = append(keys, sched.Digest())
			c.traits = append(c.traits, sched.Traits()...)
		}
		c.key = strings.Join(keys, "+")
		cands = append(cands, c)
	}
	var out []int64
	keys, covered := map[string]bool{}, map[string]bool{}
	for len(out) < n {
		best, score := -1, -1
		for i, c := range cands {
			if keys[c.key] {
				continue
			}
			s := 0
			for _, t := range c.traits {
				if !covered[t] {
					s++
				}
			}
			if s > score {
				best, score = i, s
			}
		}
		if best < 0 {
			out = append(out, 1+draw(1<<53-1)) // every candidate repeats a schedule
			continue
		}
		c := cands[best]
		out = append(out, c.seed)
		keys[c.key] = true
		for _, t := range c.traits {
			covered[t] = true
		}
	}
	return out
}

// Covers lists the lever choices the schedules of seeds cover for legs at
// level, for the header of a contract run.
func Covers(seeds []int64, legs []string, level int) []string {
	var out []string
	for _, seed := range seeds {
		for _, name := range legs {
			if l, ok := levers.Lookup(name); ok {
				out = append(out, levers.NewSchedule(l, seed, levers.Scope{Level: level}).Traits()...)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Run runs the surface's contract over opts.Seeds and judges it.
func Run(ctx context.Context, s registry.Surface, opts Options) (*Result, error) {
	start := time.Now()
	level := max(opts.Env.Level, 1)
	res := &Result{Surface: s.ID, Class: s.Class, Owner: s.Owner, Behavior: s.Behavior, Oracle: s.Oracle, Level: level}
	if at := s.LegsAt(level); len(at) == 0 {
		fmt.Fprintf(opts.Out, "contested: %s: no leg runs at level %d; nothing to run\n", s.ID, level)
	} else if opts.EnvMissing == "" {
		for i, seed := range opts.Seeds {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			fmt.Fprintf(opts.Out, "contested: %s seed %d/%d (%s=%d)\n", s.ID, i+1, len(opts.Seeds), envvar.Seed, seed)
			tests := s.Tests
			if len(opts.Tests) > 0 {
				tests = opts.Tests
			}
			run, err := runSeed(ctx, s, tests, seed, opts, "")
			if err != nil {
				return nil, err
			}
			if !run.Passed {
				if err := rerun(ctx, s, run, opts); err != nil {
					return nil, err
				}
			}
			res.Seeds = append(res.Seeds, *run)
		}
	}
	res.Legs, res.Contract = Judge(s, Evidence{Level: level, Runs: res.Seeds, EnvMissing: opts.EnvMissing, Capabilities: opts.Capabilities})
	res.Took = time.Since(start)
	return res, nil
}

// rerun reruns a failed seed up to Reruns times with the same seed, until
// a rerun passes, and says on run whether every rerun failed. Only the
// tests that failed are rerun: whether the failure reproduces is a
// question about them, and a test that passed and fails on a rerun would
// answer it wrongly (as well as costing a go test each time).
func rerun(ctx context.Context, s registry.Surface, run *SeedRun, opts Options) error {
	failed := true
	for i := 1; i <= Reruns && failed; i++ {
		fmt.Fprintf(opts.Out, "contested: %s seed %d failed; rerun %d of %d of %s with the same seed, to see whether it reproduces\n",
			s.ID, run.Seed, i, Reruns, strings.Join(run.failing, ", "))
		again, err := runSeed(ctx, s, run.failing, run.Seed, opts, fmt.Sprintf("rerun-%d", i))
		if err != nil {
			return err
		}
		failed = !again.Passed
		run.Reruns = i
		run.Tests = append(run.Tests, again.Tests...)
	}
	run.Rerun = &failed
	return nil
}

// runSeed runs tests, each in a go test of its own, once with one seed in
// a fresh results directory of its own, and reads back the records they
// wrote.
func runSeed(ctx context.Context, s registry.Surface, tests []string, seed int64, opts Options, suffix string) (*SeedRun, error) {
	name := fmt.Sprintf("seed-%d", seed)
	if suffix != "" {
		name += "-" + suffix
	}
	rel := filepath.Join("contested", s.ID, name)
	dir := opts.Env.ResultsDir.Join(rel)
	if err := atomicfile.EmptyDir(opts.Env.ResultsDir.String(), rel); err != nil {
		return nil, err
	}
	pkg := s.Package
	if pkg == "" {
		pkg = "./..."
	}
	env := opts.Env.WithSeed(seedpkg.Seed(seed)).WithResultsDir(dir).Environ()
	run := &SeedRun{Seed: seed, Dir: dir, Passed: true, Failures: map[string]string{}}
	start := time.Now()
	for i, test := range tests {
		logs := ""
		if opts.TestLogs != "" {
			logs = filepath.Join(opts.TestLogs, name, strconv.Itoa(i))
			if err := os.MkdirAll(logs, 0o700); err != nil {
				logs = ""
			}
		}
		res, err := battery.Run(ctx, battery.Options{
			Dir: opts.Env.ModuleRoot, Patterns: []string{pkg}, Args: []string{"-run", seedpkg.RunPattern(test)},
			Env: env, Out: indent{opts.Out, "  "}, Binaries: opts.Binaries, TestLogs: logs,
		})
		if err != nil {
			return nil, fmt.Errorf("run %s of %s: %w", test, s.ID, err)
		}
		run.read(res.TestLogs, opts.Env.ModuleRoot)
		if !res.OK() {
			run.Passed = false
			run.failing = append(run.failing, test)
		}
		addOutcomes(run, res.Tests, func(battery.Test) bool { return true })
		run.Tests = append(run.Tests, res.Tests...)
		for _, p := range res.FailedPackages() {
			run.Failed = append(run.Failed, p.Name)
			run.Failures[p.Name] = p.Output
		}
		if res.OK() && len(res.Tests) == 0 {
			fmt.Fprintf(opts.Out, "  contested: -run %s matched no test in %s\n", seedpkg.RunPattern(test), pkg)
		}
	}
	run.Took = time.Since(start)
	recs, err := readRecords(faultdir.Of(dir), true)
	if err != nil {
		return nil, err
	}
	run.Records = recs
	return run, nil
}

// read adds what the tests logged they read to Read.
func (run *SeedRun) read(logs map[string]string, root string) {
	for pkg, log := range logs {
		rec, err := touched.ParseFile(log, touched.Paths{Root: root, Dir: root})
		if err != nil {
			continue
		}
		if run.Read == nil {
			run.Read = map[string][]string{}
		}
		for _, n := range rec.Env {
			if !slices.Contains(run.Read[pkg], n) {
				run.Read[pkg] = append(run.Read[pkg], n)
			}
		}
	}
}

// NewSeedRun is one run of a surface's tests with seed, from a battery's
// outcomes and the records its tests wrote under dir: what Judge reads.
// The ladder's reruns of a failing leg are such runs.
func NewSeedRun(seed int64, dir string, res *battery.Result, recs []faultrecord.Record) SeedRun {
	run := SeedRun{Seed: seed, Dir: dir, Passed: res.OK(), Failures: map[string]string{}, Records: recs, Tests: res.Tests, Took: res.Elapsed}
	addOutcomes(&run, res.Tests, func(battery.Test) bool { return true })
	for _, p := range res.FailedPackages() {
		run.Failed = append(run.Failed, p.Name)
		run.Failures[p.Name] = p.Output
	}
	return run
}

// ReadRecords reads the valid records of a fault directory, oldest armed
// first, skipping files that are not records: the gate reports those. It
// reads with the gate's loader (gate.ReadRecords): no symbolic link
// followed, no FIFO waited on, no file over the record cap read.
func ReadRecords(dir string) ([]faultrecord.Record, error) { return readRecords(dir, false) }

// readRecords reads a fault directory's records; strict makes a file that
// is not a valid record an error naming it (a contract run's private
// directory holds only what its tests wrote).
func readRecords(dir string, strict bool) ([]faultrecord.Record, error) {
	recs, unreadable, err := gate.ReadRecords(dir)
	if err != nil {
		return nil, err
	}
	if strict && len(unreadable) > 0 {
		u := unreadable[0]
		return nil, fmt.Errorf("%s: %s (%d unreadable record files)", filepath.Join(dir, u.File), u.Reason, len(unreadable))
	}
	return recs, nil
}

// indent prefixes every line written through it.
type indent struct {
	w      io.Writer
	prefix string
}

func (i indent) Write(p []byte) (int, error) {
	lines := strings.SplitAfter(string(p), "\n")
	for _, l := range lines {
		if l == "" {
			continue
		}
		if _, err := io.WriteString(i.w, i.prefix+l); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}
