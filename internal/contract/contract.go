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
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/contested/contested/contested"
	"github.com/contested/contested/contested/verdict"
	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/registry"
)

// Environment variable the runner reads (a contract: DESIGN §4.2).
const EnvSeeds = "CONTESTED_SEEDS"

// thinCoverage is the fired-fault count under which a lever's coverage is
// flagged: a handful of occurrences says little about a rare interleaving.
const thinCoverage = 5

// Options configures Run.
type Options struct {
	Dir          string   // module root
	RegistryPath string   // absolute path of the registry, handed to the tests
	ResultsRoot  string   // absolute results root; runs go under contested/<surface>/
	LayerEnv     []string // the fault layer's coordinates for the tests
	Seeds        []int64  // the seeds to run, in order
	Level        int
	Out          io.Writer
	// EnvMissing, when set, says the fault layer cannot run: every leg is
	// INCONCLUSIVE-env and nothing is run.
	EnvMissing string
}

// SeedRun is one go test run of the surface's tests with one seed.
type SeedRun struct {
	Seed      int64                `json:"seed"`
	Dir       string               `json:"dir"`
	Passed    bool                 `json:"passed"`
	Failed    []string             `json:"failed_tests,omitempty"`
	Records   []faultrecord.Record `json:"records"`
	Rerun     *bool                `json:"rerun_failed,omitempty"` // set when the run failed and was rerun
	Took      time.Duration        `json:"took_ns"`
	testFails map[string]string    // failing test → output
}

// LegResult is the verdict of one leg over all seeds.
type LegResult struct {
	Lever     string          `json:"lever"`
	Verdict   verdict.Verdict `json:"verdict"`
	Reason    string          `json:"reason"`
	Runs      []verdict.Run   `json:"runs"`
	Fired     int             `json:"fired"` // occurrences across seeds
	Thin      bool            `json:"thin_coverage"`
	Injector  string          `json:"injector,omitempty"` // evidence from one record
	Victim    string          `json:"victim,omitempty"`
	Replay    string          `json:"replay,omitempty"` // of the first failing or unproven seed
	FailedRun int64           `json:"failed_seed,omitempty"`
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
	Legs     []LegResult      `json:"legs"`
	Seeds    []SeedRun        `json:"seeds"`
	Took     time.Duration    `json:"took_ns"`
}

// Leg returns the result of one lever.
func (r *Result) Leg(lever string) (LegResult, bool) {
	for _, l := range r.Legs {
		if l.Lever == lever {
			return l, true
		}
	}
	return LegResult{}, false
}

// Seeds returns the seeds to run: CONTESTED_SEED alone when it is set (a
// replay), else n fresh ones (CONTESTED_SEEDS when set, else budget).
func Seeds(budget int) ([]int64, error) {
	if v := strings.TrimSpace(os.Getenv(contested.EnvSeed)); v != "" {
		s, err := contested.Seed()
		if err != nil {
			return nil, err
		}
		return []int64{s}, nil
	}
	n := budget
	if v := strings.TrimSpace(os.Getenv(EnvSeeds)); v != "" {
		var err error
		n, err = strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return nil, fmt.Errorf("%s=%q is not a seed count between 1 and 1000", EnvSeeds, v)
		}
	}
	if n < 1 {
		n = 1
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = 1 + rand.Int64N(1<<53-1)
	}
	return out, nil
}

// Run runs the surface's contract over opts.Seeds and judges it.
func Run(ctx context.Context, s registry.Surface, opts Options) (*Result, error) {
	start := time.Now()
	res := &Result{Surface: s.ID, Class: s.Class, Owner: s.Owner, Behavior: s.Behavior, Oracle: s.Oracle, Level: opts.Level}
	if opts.EnvMissing == "" {
		for i, seed := range opts.Seeds {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			fmt.Fprintf(opts.Out, "contested: %s seed %d/%d (%s=%d)\n", s.ID, i+1, len(opts.Seeds), contested.EnvSeed, seed)
			run, err := runSeed(ctx, s, seed, opts, "")
			if err != nil {
				return nil, err
			}
			if !run.Passed {
				// One rerun with the same seed tells reproducible from not.
				fmt.Fprintf(opts.Out, "contested: %s seed %d failed; rerunning it once to see whether it reproduces\n", s.ID, seed)
				again, err := runSeed(ctx, s, seed, opts, "rerun")
				if err != nil {
					return nil, err
				}
				failed := !again.Passed
				run.Rerun = &failed
			}
			res.Seeds = append(res.Seeds, *run)
		}
	}
	for _, lever := range s.Legs {
		res.Legs = append(res.Legs, judge(s, lever, res.Seeds, opts))
	}
	var vs []verdict.Verdict
	for _, l := range res.Legs {
		vs = append(vs, l.Verdict)
	}
	res.Contract = verdict.Surface(vs)
	res.Took = time.Since(start)
	return res, nil
}

// runSeed runs the surface's tests once with one seed in a fresh results
// directory of its own, and reads back the records they wrote.
func runSeed(ctx context.Context, s registry.Surface, seed int64, opts Options, suffix string) (*SeedRun, error) {
	name := fmt.Sprintf("seed-%d", seed)
	if suffix != "" {
		name += "-" + suffix
	}
	dir := filepath.Join(opts.ResultsRoot, "contested", s.ID, name)
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	pkg := s.Package
	if pkg == "" {
		pkg = "./..."
	}
	env := append(append([]string(nil), opts.LayerEnv...),
		contested.EnvSeed+"="+strconv.FormatInt(seed, 10),
		contested.EnvLevel+"="+strconv.Itoa(max(opts.Level, 1)),
		faultrecord.EnvResultsDir+"="+dir,
		registry.EnvPath+"="+opts.RegistryPath,
	)
	run := &SeedRun{Seed: seed, Dir: dir, Passed: true, testFails: map[string]string{}}
	start := time.Now()
	for _, test := range s.Tests {
		res, err := battery.Run(ctx, battery.Options{
			Dir: opts.Dir, Patterns: []string{pkg}, Args: []string{"-run", contested.RunPattern(test)},
			Env: env, Out: indent{opts.Out, "  "},
		})
		if err != nil {
			return nil, fmt.Errorf("run %s of %s: %w", test, s.ID, err)
		}
		if !res.OK() {
			run.Passed = false
		}
		for _, t := range res.Failed() {
			run.Failed = append(run.Failed, t.Name)
			run.testFails[t.Name] = t.Output
		}
		for _, p := range res.FailedPackages() {
			run.Failed = append(run.Failed, p.Name)
			run.testFails[p.Name] = p.Output
		}
		if res.OK() && len(res.Tests) == 0 {
			fmt.Fprintf(opts.Out, "  contested: -run %s matched no test in %s\n", contested.RunPattern(test), pkg)
		}
	}
	run.Took = time.Since(start)
	recs, err := readRecords(faultrecord.FaultDir(dir))
	if err != nil {
		return nil, err
	}
	run.Records = recs
	return run, nil
}

func readRecords(dir string) ([]faultrecord.Record, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []faultrecord.Record
	for _, f := range files {
		if filepath.Base(f) == faultrecord.ReportName {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		r, err := faultrecord.ParseRecord(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ArmedAt.Before(out[j].ArmedAt) })
	return out, nil
}

// legTests returns the tests (with failure output) that belong to lever in
// one seed run: those whose records name it, and failing tests whose last
// path element is the lever's name (a test that failed before arming).
func legTests(run SeedRun, lever string) map[string]bool {
	tests := map[string]bool{}
	for _, r := range run.Records {
		if r.Leg == lever {
			tests[r.Test] = true
		}
	}
	for t := range run.testFails {
		if filepath.Base(t) == lever || strings.HasSuffix(t, "/"+lever) {
			tests[t] = true
		}
	}
	return tests
}

func judge(s registry.Surface, lever string, seeds []SeedRun, opts Options) LegResult {
	lr := LegResult{Lever: lever}
	dir := s.Package
	if dir == "" {
		dir = "./..."
	}
	for _, run := range seeds {
		vr := verdict.Run{Seed: run.Seed}
		tests := legTests(run, lever)
		vr.Attempted = len(tests) > 0
		for _, r := range run.Records {
			if r.Leg != lever {
				continue
			}
			vr.Armed++
			if r.Fired {
				vr.Fired++
			}
			if vr.Oracles == nil {
				vr.Oracles = r.Oracles
			}
			if lr.Injector == "" || !r.Fired {
				lr.Injector, lr.Victim = r.Evidence.Injector, r.Evidence.Victim
			}
		}
		// The test's own failure: its leg saw it failed before reporting an
		// unfired fault, or it failed before arming anything.
		for t := range tests {
			out, failed := failedWithin(run, t)
			if !failed || !(testFailedOwn(run, lever, t) || !hasRecord(run, t)) {
				continue
			}
			vr.Failed = true
			vr.FailureText = firstFailureLine(out)
			vr.Reproduced = run.Rerun
			if lr.Replay == "" {
				lr.Replay = contested.ReplayCommand(run.Seed, dir, t)
				lr.FailedRun = run.Seed
			}
		}
		if vr.Fired < vr.Armed && lr.Replay == "" {
			for t := range tests {
				lr.Replay = contested.ReplayCommand(run.Seed, dir, t)
				lr.FailedRun = run.Seed
				break
			}
		}
		lr.Fired += vr.Fired
		lr.Runs = append(lr.Runs, vr)
	}
	if opts.EnvMissing != "" {
		lr.Runs = []verdict.Run{{EnvMissing: opts.EnvMissing}}
	}
	lr.Verdict, lr.Reason = verdict.Assign(lr.Runs, s.Budget.Hardening.Seeds)
	lr.Thin = lr.Fired < thinCoverage
	return lr
}

func testFailedOwn(run SeedRun, lever, test string) bool {
	for _, r := range run.Records {
		if r.Leg == lever && r.Test == test && r.TestFailed {
			return true
		}
	}
	return false
}

func hasRecord(run SeedRun, test string) bool {
	for _, r := range run.Records {
		if r.Test == test {
			return true
		}
	}
	return false
}

// failedWithin returns the failure output of test or any of its subtests.
func failedWithin(run SeedRun, test string) (string, bool) {
	var b strings.Builder
	failed := false
	for t, out := range run.testFails {
		if t == test || strings.HasPrefix(t, test+"/") {
			failed = true
			b.WriteString(out)
		}
	}
	return b.String(), failed
}

func firstFailureLine(out string) string {
	for _, line := range strings.Split(out, "\n") {
		l := strings.TrimSpace(line)
		if strings.Contains(l, ".go:") && !strings.Contains(l, "ARMED BUT DID NOT FIRE") && !strings.Contains(l, "contested: leg ") {
			if len(l) > 300 {
				l = l[:300] + "…"
			}
			return l
		}
	}
	return "see the test output"
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
