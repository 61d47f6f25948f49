package command

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fatih/color"

	"github.com/contested/contested/contested"
	"github.com/contested/contested/faultlayer"
	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/gate"
	"github.com/contested/contested/gate/contract"
	"github.com/contested/contested/gate/ladder"
	"github.com/contested/contested/gate/report"
	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/capacity"
	"github.com/contested/contested/internal/dockerenv"
	"github.com/contested/contested/internal/gotest"
	"github.com/contested/contested/registry"
)

// ValidateOptions configures Validate.
type ValidateOptions struct {
	// Dir is the module to validate; empty means the working directory.
	Dir string
	// Patterns are the battery's packages; default ./...
	Patterns []string
	// Args are extra go test flags (for example -run).
	Args []string
	Out  io.Writer
}

// ValidateReport is what one validate run found, saved as validate.json
// under the results directory.
type ValidateReport struct {
	RunID     string               `json:"run_id"`
	Layer     string               `json:"layer"`
	Preflight faultlayer.Preflight `json:"preflight"`
	Battery   *battery.Result      `json:"battery,omitempty"`
	Gate      *gate.Report         `json:"gate,omitempty"`
	Registry  []string             `json:"registry_problems,omitempty"`
	Capacity  *capacity.Report     `json:"capacity,omitempty"`
	// Level is the CONTESTED_LEVEL the battery ran at.
	Level int `json:"level"`
	// Surfaces are the contract verdicts of the registered surfaces that
	// ran, judged from the battery's records and test outcomes by the
	// judge mage contested uses (DESIGN §4.7, "One verdict").
	Surfaces []gate.SurfaceVerdict `json:"surfaces"`
	// BatteryFailures are failures that are not a contract test's: tests no
	// surface lists, and packages that failed outside any test. They are
	// listed, not arbitrated.
	BatteryFailures []ladder.Plain `json:"battery_failures,omitempty"`
	// Ladder holds the arbitration of each failing contract test.
	Ladder []*ladder.Outcome `json:"ladder,omitempty"`
	// NotArbitrated are failing tests the ladder's time budget did not reach.
	NotArbitrated []string      `json:"not_arbitrated,omitempty"`
	Green         bool          `json:"green"`
	Reasons       []string      `json:"reasons,omitempty"`
	Took          time.Duration `json:"took_ns"`
}

// Validate is the paired run: bring the fault layer up, run fault-preflight
// in required mode (never skipped), purge the old records and write a fresh
// gate stamp, run the battery with the layer's coordinates in its
// environment, verify the six phases (consuming the stamp only on success)
// and print a summary. While the battery runs, load, memory, disk and
// container stats are sampled.
//
// Beside the six phases, every registered surface that ran gets its
// contract verdict from the battery's records and test outcomes, by the
// judge mage contested uses (contract.JudgeBattery; a failing leg is first
// rerun alone with its seed, as contested reruns a failing seed). validate
// is GREEN only when the six phases certify, the battery passed, and no
// registered leg is FAIL, INCONCLUSIVE or PARTIAL (nor NOT-RUN, when the
// whole battery ran).
//
// A failing test that a surface lists walks the arbitration ladder, within
// a time budget (CONTESTED_LADDER_BUDGET, default 10m), and its owner and
// action are listed. A failing test no surface lists is not a contract
// test: it is listed under the battery with its first failure line and
// owner (the test's author and the package's maintainers), not arbitrated.
// Nothing is purged when preflight fails, and a refused record set is left
// untouched for triage.
func Validate(ctx context.Context, opts ValidateOptions) error {
	ctx, cancel := withSignals(ctx)
	defer cancel()
	start := time.Now()
	out := opts.Out
	if err := checkVariables(varLayer, varLevel, varSeed, varSeeds, varBudget); err != nil {
		return err
	}
	ws, err := openWorkspace(opts.Dir)
	if err != nil {
		return err
	}
	dir, reg, regPath, root := ws.dir, ws.reg, ws.regPath, ws.root
	faultDir := faultrecord.FaultDir(root)

	budget, err := ladderBudget()
	if err != nil {
		return err
	}
	level, err := contested.Level()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	cfg, err := layerConfig(out)
	if err != nil {
		return err
	}
	rep := &ValidateReport{RunID: cfg.RunID, Level: level}
	fmt.Fprintf(out, "%s run %s in %s\n", bold("validate:"), cfg.RunID, dir)

	l, err := faultlayer.Up(ctx, cfg)
	if err != nil {
		reportUpError(out, err)
		fmt.Fprintf(out, "validate: %s: the fault layer cannot run; refusing to run the battery\n", color.RedString("CANNOT RUN"))
		return err
	}
	defer l.Close(context.WithoutCancel(ctx))
	// The layer's run id: a shared CONTESTED_RUN_ID got a suffix of its own.
	rep.RunID, rep.Layer = l.RunID, string(l.Kind)
	p, err := Preflight(ctx, l, true, out)
	rep.Preflight = p
	if err != nil {
		fmt.Fprintf(out, "validate: %s: fault-preflight failed; refusing to run the battery (nothing was purged)\n", color.RedString("CANNOT RUN"))
		return err
	}

	if err := gate.Purge(faultDir); err != nil {
		return fmt.Errorf("purge old records: %w", err)
	}
	if err := gate.WriteStamp(faultDir, l.RunID); err != nil {
		return fmt.Errorf("write the gate stamp: %w", err)
	}
	fmt.Fprintf(out, "validate: purged old records and wrote %s\n", filepath.Join(faultDir, faultrecord.StampName))

	events, err := createArtifact(root, filepath.Join("battery", "go-test.json"))
	if err != nil {
		return fmt.Errorf("create the battery's event log: %w", err)
	}
	env := append(l.Env(),
		faultrecord.EnvResultsDir+"="+root,
		registry.EnvPath+"="+regPath,
	)
	sampler := startSampler(ctx, root)
	res, err := battery.Run(ctx, battery.Options{Dir: dir, Patterns: opts.Patterns, Args: opts.Args, Env: env, Out: out, Events: events})
	events.Close()
	capRep := sampler.Stop()
	rep.Capacity = &capRep
	if path, err := saveJSON(root, capacityFile, capRep); err != nil {
		notSaved(out, "validate", path, err)
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrRed, err)
	}
	rep.Battery = res

	inv := cachedInventory(dir)
	verified, gerr := gate.Verify(ctx, gate.Options{
		Dir:              faultDir,
		Mode:             gate.Paired,
		RecordingClasses: reg.Gate.RecordingClasses,
		KnownClasses:     reg.Classes(),
		Surfaces:         reg.IDs(),
		SelfTests:        reg.Gate.SelfTests,
		Inventory:        inv,
	})
	if gerr != nil && verified == nil {
		return fmt.Errorf("verify: %w", gerr)
	}
	rep.Gate = verified
	if names, err := inv(ctx); err == nil {
		if err := reg.CheckTests(names); err != nil {
			rep.Registry = strings.Split(err.Error(), "\n")
		}
	}

	// One verdict: the surfaces, judged from this battery.
	mod, _ := contract.ModulePath(dir)
	recs, err := contract.ReadRecords(faultDir)
	if err != nil {
		fmt.Fprintf(out, "validate: read the records to judge the surfaces: %v\n", err)
	}
	bat := contract.Battery{Registry: reg, Module: mod, Result: res, Records: recs, Level: level}
	if !res.OK() {
		reruns, err := contract.RerunFailures(ctx, bat, contract.RerunOptions{Dir: dir, Env: append(l.Env(), registry.EnvPath+"="+regPath),
			Root: filepath.Join(root, "reruns"), Out: out})
		if err != nil {
			fmt.Fprintf(out, "validate: %v (a failure not rerun is FAIL-nondeterministic)\n", err)
		}
		bat.Reruns = reruns
	}
	judged := contract.JudgeBattery(bat)
	rep.Surfaces = contract.Verdicts(judged)
	verified.Surfaces = rep.Surfaces
	if err := verified.Save(); err != nil {
		notSaved(out, "validate", filepath.Join(faultDir, faultrecord.ReportName), err)
	}

	// Contract tests walk the ladder; every other failure is plain.
	var contractFails []battery.Test
	for _, t := range contract.LeafFailures(res) {
		if _, ok := contract.SurfaceOf(reg, mod, t.Package, t.Name); ok {
			contractFails = append(contractFails, t)
			continue
		}
		rep.BatteryFailures = append(rep.BatteryFailures, ladder.NewPlain(t.Package, t.Name, t.Output))
	}
	for _, p := range res.FailedPackages() {
		rep.BatteryFailures = append(rep.BatteryFailures, ladder.NewPlain(p.Name, "", p.Output))
	}
	contracts := map[string]*contract.Result{}
	rep.Ladder, rep.NotArbitrated = arbitrateAll(ctx, contractFails, budget, ladder.Options{
		Dir: dir, Registry: reg, RegistryPath: regPath, ResultsRoot: root, LayerEnv: l.Env(),
		Preflight: &p, Capacity: &capRep, Contracts: contracts, Level: level, Out: out,
	}, out)

	whole := wholeBattery(opts)
	fmt.Fprintln(out)
	verified.WriteSummary(out)
	note := ""
	if !whole {
		note = "a selected battery: NOT-RUN legs do not count against it"
	}
	writeSurfaceSummary(out, judged, level, note)
	writeBatterySummary(out, res, contractFails, rep.BatteryFailures)
	writeLadderSummary(out, rep)
	if len(rep.Registry) > 0 {
		fmt.Fprintf(out, "\n%s\n", bold("registry"))
		for _, line := range rep.Registry {
			fmt.Fprintf(out, "  %s\n", line)
		}
	}

	rep.Reasons = validateReasons(res, verified, judged, whole, rep.Registry)
	rep.Green = len(rep.Reasons) == 0
	rep.Took = time.Since(start)
	writeReports(root, report.Page{Title: "contested validate", RunID: rep.RunID, Layer: rep.Layer, Green: rep.Green,
		Reasons: rep.Reasons, Gate: verified, Battery: res, Surfaces: judged, Level: level, Plain: rep.BatteryFailures,
		Ladder: rep.Ladder, Contracts: contractList(contracts), Capacity: rep.Capacity}, out)
	if path, err := saveJSON(root, "validate.json", rep); err != nil {
		notSaved(out, "validate", path, err)
	} else {
		fmt.Fprintf(out, "validate: saved %s\n", path)
	}
	if rep.Green {
		fmt.Fprintf(out, "\nvalidate: %s in %s\n", color.GreenString("GREEN"), rep.Took.Round(time.Second))
		return nil
	}
	fmt.Fprintf(out, "\nvalidate: %s: %s\n", color.RedString("RED"), strings.Join(rep.Reasons, "; "))
	return fmt.Errorf("%w: %s", ErrRed, strings.Join(rep.Reasons, "; "))
}

// ProgramGateOptions configures ProgramGate.
type ProgramGateOptions struct {
	Dir string
	Out io.Writer
}

// ProgramGate runs fault-preflight in required mode, then the six phases
// over whatever records are on disk, standalone: a missing stamp is
// announced, a present one is left in place. It is for triage after a
// battery, never a substitute for validate. It also shows the contract
// verdict of each registered surface with records on disk, by the same
// judge, from the records alone (it has no test outcomes: a leg whose test
// failed before arming shows as NOT-RUN there); its exit code is the six
// phases'.
func ProgramGate(ctx context.Context, opts ProgramGateOptions) error {
	ctx, cancel := withSignals(ctx)
	defer cancel()
	out := opts.Out
	if err := checkVariables(varLayer, varLevel); err != nil {
		return err
	}
	ws, err := openWorkspace(opts.Dir)
	if err != nil {
		return err
	}
	dir, reg, root := ws.dir, ws.reg, ws.root
	level, err := contested.Level()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if err := FaultPreflight(ctx, PreflightOptions{Required: true, Out: out}); err != nil {
		fmt.Fprintf(out, "program-gate: %s: fault-preflight failed; not verifying\n", color.RedString("CANNOT RUN"))
		return err
	}
	faultDir := faultrecord.FaultDir(root)
	if _, err := os.Lstat(filepath.Join(faultDir, faultrecord.StampName)); err != nil {
		fmt.Fprintf(out, "program-gate: no gate stamp in %s: the records on disk are not tied to a run; verifying them anyway (standalone)\n", faultDir)
	}
	verified, err := gate.Verify(ctx, gate.Options{
		Dir:              faultDir,
		Mode:             gate.Standalone,
		RecordingClasses: reg.Gate.RecordingClasses,
		KnownClasses:     reg.Classes(),
		Surfaces:         reg.IDs(),
		SelfTests:        reg.Gate.SelfTests,
		Inventory:        cachedInventory(dir),
	})
	if verified == nil {
		return fmt.Errorf("verify: %w", err)
	}
	mod, _ := contract.ModulePath(dir)
	recs, rerr := contract.ReadRecords(faultDir)
	if rerr != nil {
		fmt.Fprintf(out, "program-gate: read the records to judge the surfaces: %v\n", rerr)
	}
	judged := contract.JudgeBattery(contract.Battery{Registry: reg, Module: mod, Records: recs, Level: level})
	verified.Surfaces = contract.Verdicts(judged)
	if serr := verified.Save(); serr != nil {
		notSaved(out, "program-gate", filepath.Join(faultDir, faultrecord.ReportName), serr)
	}
	fmt.Fprintln(out)
	verified.WriteSummary(out)
	writeSurfaceSummary(out, judged, level, "from the records on disk alone: no test outcomes and no reruns, so a failure is FAIL-nondeterministic and a leg whose test failed before arming is NOT-RUN; validate.json has validate's verdicts")
	p := report.Page{Title: "contested program-gate", RunID: verified.RunID, Green: verified.Certified, Gate: verified, Surfaces: judged, Level: level}
	if !verified.Certified {
		p.Reasons = []string{"gate refused: " + failedPhases(verified)}
	}
	writeReports(root, p, out)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrRed, err)
	}
	return nil
}

// moduleDir returns dir (default: the working directory) made absolute,
// after checking it holds a go.mod.
func moduleDir(dir string) (string, error) {
	if dir == "" {
		var err error
		if dir, err = os.Getwd(); err != nil {
			return "", err
		}
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return "", fmt.Errorf("%w: %s has no go.mod: run the targets from the module root", ErrUsage, dir)
	}
	return dir, nil
}

// loadRegistryIn loads CONTESTED_SURFACES (relative to the module) and
// returns it with its absolute path.
func loadRegistryIn(dir string) (*registry.Registry, string, error) {
	p := registry.Path()
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	reg, err := registry.Load(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, p, fmt.Errorf("%w: %v: create the registry (see the README) or point %s at it", ErrUsage, err, registry.EnvPath)
		}
		if !errors.Is(err, registry.ErrInvalid) {
			err = fmt.Errorf("%w: %v", ErrUsage, err)
		}
		return nil, p, err
	}
	return reg, p, nil
}

// resultsRoot is the results directory for the module in dir, checked and
// readied once, before the command starts anything: CONTESTED_RESULTS_DIR
// (default test-results), relative to dir, through
// faultrecord.PrepareResultsDir. It comes back absolute with its ancestors'
// links resolved, because the battery's packages all run in other
// directories. A directory that can never hold artifacts (/, a system
// directory, the home directory, the module root, a file, a link,
// read-only, one that holds a link) is bad input: exit 2, saying what to
// set.
func resultsRoot(dir string) (string, error) {
	v := os.Getenv(faultrecord.EnvResultsDir)
	if v == "" {
		v = faultrecord.DefaultResultsDir
	}
	if !filepath.IsAbs(v) {
		v = filepath.Join(dir, v)
	}
	root, err := faultrecord.PrepareResultsDir(filepath.Clean(v), dir)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrUsage, err)
	}
	return root, nil
}

// workspace is the module a command runs on: its root, its registry and
// its results directory.
type workspace struct {
	dir     string
	reg     *registry.Registry
	regPath string
	root    string
}

// openWorkspace checks dir is a module root (default: the working
// directory), loads its registry and checks its results directory.
func openWorkspace(dir string) (*workspace, error) {
	dir, err := moduleDir(dir)
	if err != nil {
		return nil, err
	}
	reg, regPath, err := loadRegistryIn(dir)
	if err != nil {
		return nil, err
	}
	root, err := resultsRoot(dir)
	if err != nil {
		return nil, err
	}
	return &workspace{dir: dir, reg: reg, regPath: regPath, root: root}, nil
}

// layerConfig reads the fault layer's configuration from the environment,
// with progress going to out.
func layerConfig(out io.Writer) (faultlayer.Config, error) {
	cfg, err := faultlayer.ConfigFromEnv()
	cfg.Log = out
	return cfg, err
}

// cachedInventory lists the module's tests once, however often it is asked.
func cachedInventory(dir string) func(context.Context) ([]string, error) {
	var once sync.Once
	var names []string
	var err error
	return func(ctx context.Context) ([]string, error) {
		once.Do(func() { names, err = gotest.List(ctx, dir) })
		return names, err
	}
}

// createArtifact creates rel under the results directory root for
// streaming, never through a symbolic link (atomicfile.Root.Create).
func createArtifact(root, rel string) (*os.File, error) {
	r, err := atomicfile.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	return r.Create(rel)
}

// saveArtifact writes rel under the results directory root atomically,
// never through a symbolic link, and returns its path.
func saveArtifact(root, rel string, data []byte) (string, error) {
	r, err := atomicfile.OpenRoot(root)
	if err != nil {
		return filepath.Join(root, rel), err
	}
	return r.Join(rel), r.Write(rel, data)
}

// saveJSON is saveArtifact for v as indented JSON.
func saveJSON(root, rel string, v any) (string, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return filepath.Join(root, rel), err
	}
	return saveArtifact(root, rel, append(b, '\n'))
}

// notSaved says, in one line, that an artifact was not saved and why:
// never "saved" after a failed write.
func notSaved(out io.Writer, who, path string, err error) {
	if strings.Contains(err.Error(), path) {
		fmt.Fprintf(out, "%s: %s: %v\n", who, color.RedString("NOT saved"), err)
		return
	}
	fmt.Fprintf(out, "%s: %s %s: %v\n", who, color.RedString("NOT saved"), path, err)
}

func failedPhases(r *gate.Report) string {
	var parts []string
	for _, p := range r.Phases {
		if !p.OK {
			parts = append(parts, fmt.Sprintf("phase %d (%s)", p.Number, p.Name))
		}
	}
	return strings.Join(parts, ", ")
}

// writeBatterySummary prints the battery's outcome: the failing contract
// tests (arbitrated below), then every plain failure with its first
// failure line, owner and action.
func writeBatterySummary(out io.Writer, res *battery.Result, contractFails []battery.Test, plain []ladder.Plain) {
	fmt.Fprintf(out, "\n%s\n", bold("battery"))
	if res.OK() {
		fmt.Fprintf(out, "  %s: %d tests in %d packages (%s)\n", color.GreenString("passed"), len(res.Tests), len(res.Packages), res.Elapsed.Round(time.Second))
		return
	}
	for _, t := range contractFails {
		fmt.Fprintf(out, "  %s %s %s (%s): a contract test, arbitrated below\n", color.RedString("FAIL"), t.Package, t.Name, t.Elapsed.Round(10*time.Millisecond))
	}
	if len(plain) > 0 {
		fmt.Fprintf(out, "  not contract tests (no surface lists them): not arbitrated; owner %s\n", ladder.PlainOwner)
	}
	for _, p := range plain {
		what := "package " + p.Package
		if p.Test != "" {
			what = p.Package + " " + p.Test
		}
		fmt.Fprintf(out, "  %s %s\n      %s\n      action: %s\n", color.RedString("FAIL"), what, p.FirstLine, p.Action)
	}
}

// writeSurfaceSummary prints each registered surface's contract verdict
// from this battery, leg by leg.
func writeSurfaceSummary(out io.Writer, judged []*contract.Result, level int, note string) {
	fmt.Fprintf(out, "\n%s (level %d; the rules of mage contested; one battery is one seed, so a pass is PASS-smoke)\n", bold("surfaces"), level)
	if len(judged) == 0 {
		fmt.Fprintf(out, "  no registered surface ran\n")
		return
	}
	for _, r := range judged {
		fmt.Fprintf(out, "  %-22s %s\n", r.Surface, paintContract(r.Contract))
		for _, l := range r.Legs {
			fmt.Fprintf(out, "      %-17s %-30s %s\n", l.Lever, paintVerdict(l.Verdict), l.Reason)
			if l.Replay != "" && !l.Verdict.Pass() {
				fmt.Fprintf(out, "      %-17s replay: %s\n", "", l.Replay)
			}
		}
	}
	if note != "" {
		fmt.Fprintf(out, "  (%s)\n", note)
	}
}

// validateReasons is validate's verdict: the reasons it is not GREEN, none
// when it is. GREEN needs the battery to pass, the six phases to certify,
// every registered leg that ran to pass (no FAIL, INCONCLUSIVE or PARTIAL;
// in a whole battery no NOT-RUN either) and the registry's tests to exist.
func validateReasons(res *battery.Result, verified *gate.Report, judged []*contract.Result, whole bool, registryProblems []string) []string {
	var out []string
	if !res.OK() {
		out = append(out, fmt.Sprintf("battery failed (%d tests, %d packages)", len(res.Failed()), len(res.FailedPackages())))
	}
	if !verified.Certified {
		out = append(out, "gate refused: "+failedPhases(verified))
	}
	out = append(out, surfaceReasons(judged, whole)...)
	if len(registryProblems) > 0 {
		out = append(out, "registry names tests that do not exist")
	}
	return out
}

// surfaceReasons says which surfaces keep validate from GREEN.
func surfaceReasons(judged []*contract.Result, whole bool) []string {
	var out []string
	for _, r := range judged {
		var legs []string
		for _, l := range r.Blocking(whole) {
			legs = append(legs, l.Lever+" "+string(l.Verdict))
		}
		if len(legs) > 0 {
			out = append(out, fmt.Sprintf("surface %s is %s (%s)", r.Surface, r.Contract, strings.Join(legs, ", ")))
		}
	}
	return out
}

// wholeBattery reports whether validate ran every test of the module: no
// package selection and no -run, -skip or -short. Only then is a leg the
// battery did not run a finding (NOT-RUN) rather than a choice.
func wholeBattery(opts ValidateOptions) bool {
	for _, p := range opts.Patterns {
		if p != "./..." {
			return false
		}
	}
	for _, a := range opts.Args {
		for _, f := range []string{"-run", "-skip", "-short", "-test.run", "-test.skip", "-test.short"} {
			if a == f || strings.HasPrefix(a, f+"=") {
				return false
			}
		}
	}
	return true
}

func bold(s string) string { return color.New(color.Bold).Sprint(s) }

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func indent(s, prefix string) string {
	if s == "" {
		return ""
	}
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix) + "\n"
}

// startSampler samples the machine (and the project's containers, when an
// engine answers) every two seconds while the battery runs.
func startSampler(ctx context.Context, root string) *capacity.Sampler {
	var stats capacity.Stats
	if cli, err := dockerenv.Connect(ctx); err == nil {
		stats = cli
	}
	return capacity.Start(ctx, root, stats, 2*time.Second)
}

// arbitrateAll walks the ladder for each failing contract test until the
// budget is spent; the tests it did not reach are returned with the
// command that arbitrates them.
func arbitrateAll(ctx context.Context, tests []battery.Test, budget time.Duration, lo ladder.Options, out io.Writer) ([]*ladder.Outcome, []string) {
	if len(tests) == 0 {
		return nil, nil
	}
	fmt.Fprintf(out, "\nvalidate: walking the arbitration ladder for %d failing contract tests (budget %s)\n", len(tests), budget)
	deadline := time.Now().Add(budget)
	var done []*ladder.Outcome
	var left []string
	for _, t := range tests {
		if time.Now().After(deadline) || ctx.Err() != nil {
			left = append(left, t.ID())
			continue
		}
		wctx, cancel := context.WithDeadline(ctx, deadline)
		o, err := ladder.Walk(wctx, t.ID(), lo)
		cancel()
		if err != nil {
			fmt.Fprintf(out, "ladder: %s: %v\n", t.ID(), err)
			left = append(left, t.ID())
			continue
		}
		saveOutcome(lo.ResultsRoot, o, out)
		done = append(done, o)
	}
	return done, left
}

func writeLadderSummary(out io.Writer, rep *ValidateReport) {
	if len(rep.Ladder) == 0 && len(rep.NotArbitrated) == 0 {
		return
	}
	fmt.Fprintf(out, "\n%s\n", bold("arbitration"))
	for _, o := range rep.Ladder {
		owner := paintOwner(o.Owner)
		if o.OwnerName != "" {
			owner += " (" + o.OwnerName + ")"
		}
		fmt.Fprintf(out, "  %s\n      owner %s; %s\n      action: %s\n", o.Test, owner, o.Verdict, o.Action)
	}
	for _, t := range rep.NotArbitrated {
		_, name := ladder.SplitID(t)
		fmt.Fprintf(out, "  %s\n      not arbitrated (budget spent): go tool mage arbitrate %s\n", t, name)
	}
}

// writeReports writes the run for people (fault/fault-report.html) and for
// CI systems (battery/junit.xml, when a battery ran), and names what it
// saved and, apart, what it could not save.
func writeReports(root string, p report.Page, out io.Writer) {
	p.Visualizations = report.Visualizations(root)
	var html strings.Builder
	if err := report.WriteHTML(&html, p); err != nil {
		fmt.Fprintf(out, "report: %v\n", err)
		return
	}
	var saved []string
	path, err := saveArtifact(root, filepath.Join(faultrecord.FaultDirName, "fault-report.html"), []byte(html.String()))
	if err != nil {
		notSaved(out, "report", path, err)
	} else {
		saved = append(saved, path)
	}
	if p.Battery != nil {
		var x strings.Builder
		if err := report.WriteJUnit(&x, p.Battery); err != nil {
			fmt.Fprintf(out, "report: junit: %v\n", err)
		} else if path, err := saveArtifact(root, filepath.Join("battery", "junit.xml"), []byte(x.String())); err != nil {
			notSaved(out, "report", path, err)
		} else {
			saved = append(saved, path)
		}
	}
	if len(saved) > 0 {
		fmt.Fprintf(out, "reports: %s\n", strings.Join(saved, ", "))
	}
}

func contractList(m map[string]*contract.Result) []*contract.Result {
	var out []*contract.Result
	for _, r := range m {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Surface < out[j].Surface })
	return out
}
