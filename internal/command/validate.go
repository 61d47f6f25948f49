package command

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fatih/color"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/capability"
	"github.com/contested/contested/internal/capacity"
	"github.com/contested/contested/internal/degraded"
	"github.com/contested/contested/internal/dockerenv"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/faultlayer"
	"github.com/contested/contested/internal/faultlayer/noise"
	"github.com/contested/contested/internal/gate"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gate/flakes"
	"github.com/contested/contested/internal/gate/ladder"
	"github.com/contested/contested/internal/gate/report"
	"github.com/contested/contested/internal/gate/shard"
	"github.com/contested/contested/internal/gotest"
	"github.com/contested/contested/internal/hostevents"
	"github.com/contested/contested/internal/registry"
	"github.com/contested/contested/internal/rundir"
	"github.com/contested/contested/internal/runenv"
	"github.com/contested/contested/internal/terminal"
)

// ValidateOptions configures Validate.
type ValidateOptions struct {
	// Dir is the module to validate; empty means the working directory.
	Dir string
	// Patterns are the battery's packages; default ./...
	Patterns []string
	// Args are extra go test flags (for example -run).
	Args []string
	// Shard is validate -shard's value ("I/N"): run that share of the
	// battery (CONTESTED_SHARD when empty; see shardSpec).
	Shard string
	// ShardSet says -shard was given, even empty (a usage error).
	ShardSet bool
	// Reuse reuses certified results under CI=true too (validate -reuse);
	// outside CI validate reuses them unless Full.
	Reuse bool
	// Full runs every package whatever the certificates say (validate
	// -full).
	Full bool
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
	// judge mage contested uses (docs/concepts/verdicts.md).
	Surfaces []gate.SurfaceVerdict `json:"surfaces"`
	// BatteryFailures lists every failing test (the most specific: a leg,
	// not its parent), contract test or not, with the evidence of its
	// ladder walk (ladder.Plain.With), and every package that failed
	// outside any test.
	BatteryFailures []ladder.Plain `json:"battery_failures,omitempty"`
	// Ladder holds the arbitration of each failing contract test.
	Ladder []*ladder.Outcome `json:"ladder,omitempty"`
	// Interference is what other runs on this Docker host did to this
	// run's containers during the battery: each container another run's
	// sweep removed, with when and by whom.
	Interference []ladder.Interference `json:"interference,omitempty"`
	// NotArbitrated are failing tests the ladder's time budget did not reach.
	NotArbitrated []string      `json:"not_arbitrated,omitempty"`
	Green         bool          `json:"green"`
	Reasons       []string      `json:"reasons,omitempty"`
	Took          time.Duration `json:"took_ns"`
	// Shard is "I/N" when this run was one shard of a battery split
	// across machines (its manifest is shard.json beside validate.json).
	Shard string `json:"shard,omitempty"`
	// Capabilities is the capability matrix: what each registered leg,
	// stage and test needs (a Docker engine, Postgres, Chromium, cores,
	// disk), whether this machine has it, its version and where it came
	// from, and the command that provides a missing one.
	Capabilities capability.Matrix `json:"capabilities"`
	// Noise is what the noisy neighbour beside the battery did and what the
	// run saw beside it (CONTESTED_NOISE, [battery] noise); absent when
	// none was armed. Its record, of class capacity, is among the faults.
	Noise *noise.Evidence `json:"noise,omitempty"`
	// Revision is the code the battery ran: its commit, its uncommitted
	// changes and GOFLAGS. arbitrate judges a failure of other code as no
	// evidence about this code.
	Revision flakes.Revision `json:"revision"`
	// Reuse says what this run reused from earlier certified runs instead
	// of running it, and why it did not when it did not.
	Reuse *ReuseReport `json:"reuse,omitempty"`
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
	if err := checkVariables(varLayer, varLevel, varSeed, varSeeds, varBudget, varTimeout, varNoise); err != nil {
		return err
	}
	spec, err := shardSpec(opts.Shard, opts.ShardSet)
	if err != nil {
		return err
	}
	ws, err := openWorkspace(opts.Dir)
	if err != nil {
		return err
	}
	budget, err := ladderBudget()
	if err != nil {
		return err
	}
	var sh *sharding
	if !spec.IsZero() {
		if sh, err = planShard(ctx, spec, opts, ws, opts.Out); err != nil {
			return err
		}
	}
	cfg, err := layerConfig(ws, opts.Out)
	if err != nil {
		return err
	}
	v := &validation{out: opts.Out, reg: ws.reg, env: ws.env, whole: wholeBattery(opts) && sh == nil, shard: sh,
		rep: &ValidateReport{RunID: ws.env.RunID, Level: ws.env.Level, Revision: flakes.ReadRevision(ctx, ws.env.ModuleRoot)}}
	if sh != nil {
		v.rep.Shard = spec.String()
	}
	fmt.Fprintf(v.out, "%s run %s in %s\n", bold("validate:"), ws.env.RunID, ws.env.ModuleRoot)
	capabilities := workCapabilities(ctx, ws.env.ResultsDir)
	var closeBinaries func()
	v.binaries, closeBinaries = testBinaries(ws.env.ResultsDir, v.out)
	defer closeBinaries()
	hintIgnore(ctx, ws.env.ModuleRoot, ws.env.ResultsDir, v.out)

	// Never a battery on a stack a degraded stage is rerouting: wait for
	// one that runs, and restore what a crashed one left.
	if err := degraded.Await(ctx, ws.env.ResultsDir, "validate", v.out); err != nil {
		return interrupted(stageError(err))
	}
	// What the change could not reach is reused, before a layer comes up:
	// a run that reuses everything needs none.
	v.reuse = planReuse(ctx, opts, ws, sh != nil, v.out)
	v.rep.Reuse = v.reuse.rep
	if v.reuse.rep.All {
		return v.finishReused(start)
	}
	opts.Patterns = v.reuse.patterns(opts.Patterns)
	l, err := v.layerUp(ctx, cfg)
	if err != nil {
		return err
	}
	defer l.Close(context.WithoutCancel(ctx))
	if err := v.stamp(); err != nil {
		return err
	}
	stopSpares := makeSpares(ctx, l, v.reg, max(v.env.Level, 1), v.out)
	// The inventory phase 6 reads is listed while go test builds, not after.
	v.inventory = cachedInventory(v.env.ModuleRoot)
	go v.inventory(ctx)
	res, err := v.runBattery(ctx, opts.Patterns, opts.Args)
	stopSpares()
	if err != nil {
		return err
	}
	v.caps = capabilities()
	contract.Needs(v.caps, v.reg, v.rep.Layer, res)
	v.rep.Capabilities = v.caps
	verified, err := v.verify(ctx, res)
	if err != nil {
		return err
	}
	if v.shard != nil {
		v.shard.writeManifest(v.env.ResultsDir, v.faultDir(), verified, res, v.out)
	}
	contracts := v.arbitrate(ctx, res, budget)
	judged := v.judge(ctx, res, verified)
	v.summarize(res, verified, judged)
	v.rep.Reasons = validateReasons(res, verified, judged, v.whole, v.rep.Registry, v.caps)
	v.rep.Green = len(v.rep.Reasons) == 0
	v.rep.Took = time.Since(start)
	return v.finish(res, verified, judged, contracts)
}

// validation is one validate run as it goes: the run environment (with
// the layer attached once it is up), the registry and the report so far.
type validation struct {
	out io.Writer
	reg *registry.Registry
	env runenv.Env
	rep *ValidateReport
	// whole says the battery is the module's whole (see wholeBattery).
	whole bool
	// shard is this run's share of a split battery; nil for the whole.
	shard *sharding
	// preflight and capacity are the evidence the ladder reads.
	preflight faultlayer.Preflight
	capacity  capacity.Report
	// inventory lists the module's tests, once (cachedInventory).
	inventory func(context.Context) ([]string, error)
	// binaries are the test binaries of the reruns and the ladder.
	binaries *battery.Binaries
	// caps is the capability matrix, once the battery ran.
	caps capability.Matrix
	// noise is the neighbour armed beside the battery, nil when none was.
	noise *noise.Evidence
	// starts are the legs' start records of the battery: their seeds.
	starts []faultrecord.LegStart
	// interference is what other runs on this Docker host did to this
	// run's containers during the battery.
	interference []ladder.Interference
	// reuse is what this run reuses from earlier certified runs.
	reuse *reuse
}

// faultDir is the run's fault directory.
func (v *validation) faultDir() string { return faultrecord.FaultDir(v.env.ResultsDir) }

// layerUp brings the fault layer up and runs fault-preflight in required
// mode; the layer's coordinates join the run environment. On error nothing
// was purged and the layer is down.
func (v *validation) layerUp(ctx context.Context, cfg faultlayer.Config) (*faultlayer.Layer, error) {
	l, env, p, err := layerUp(ctx, cfg, v.env, "validate", "refusing to run the battery (nothing was purged)", v.out)
	v.rep.Preflight, v.preflight = p, p
	if err != nil {
		return nil, err
	}
	v.env = env
	v.rep.RunID, v.rep.Layer = l.RunID, string(l.Kind)
	return l, nil
}

// stamp purges the previous run's evidence and writes a fresh gate stamp.
func (v *validation) stamp() error {
	if err := gate.Purge(v.faultDir()); err != nil {
		return fmt.Errorf("purge old records: %w", err)
	}
	if err := gate.WriteStamp(v.faultDir(), v.env.RunID); err != nil {
		return fmt.Errorf("write the gate stamp: %w", err)
	}
	// The legs' start records are the battery's, like its fault records.
	if err := atomicfile.EmptyDir(v.env.ResultsDir, faultrecord.LegsDirName); err != nil {
		return fmt.Errorf("purge the legs' start records: %w", err)
	}
	fmt.Fprintf(v.out, "validate: purged old records and wrote %s\n", filepath.Join(v.faultDir(), faultrecord.StampName))
	// The run before's pages and issue bodies go aside, so that this
	// run's reports link, and its directory holds, its own evidence only.
	if _, err := rundir.Rotate(v.env.ResultsDir, previousRunID(v.env.ResultsDir), v.out); err != nil {
		return fmt.Errorf("move the previous run's pages aside: %w", err)
	}
	if v.shard != nil {
		st, err := shard.ReadStamp(v.faultDir())
		if err != nil {
			return err
		}
		v.shard.stamp = st
	}
	return nil
}

// runBattery runs go test over the module with the run environment, its
// events saved, while the machine is sampled. The registry's [battery]
// packages_per_core sets go test's -p (flags of validate's own come later
// and win), which is only the ceiling: another package starts only while
// the machine's run queue is under two per core (capacity.Admission), so
// the battery takes what the machine can give, its own load and a noisy
// neighbour's alike.
func (v *validation) runBattery(ctx context.Context, patterns, args []string) (*battery.Result, error) {
	ceiling := v.reg.Battery.P(runtime.GOMAXPROCS(0))
	if ceiling > 0 {
		args = append([]string{"-p", strconv.Itoa(ceiling)}, args...)
	}
	queue := capacity.FollowRunQueue(ctx)
	defer queue.Stop()
	root := v.env.ResultsDir
	events, err := createArtifact(root, filepath.Join("battery", "go-test.json"))
	if err != nil {
		return nil, fmt.Errorf("create the battery's event log: %w", err)
	}
	sampler := startSampler(ctx, root)
	host := watchHost(ctx, v.env.RunID)
	neighbour, err := v.armNoise(ctx)
	if err != nil {
		events.Close()
		sampler.Stop()
		host.Stop()
		return nil, err
	}
	bo := battery.Options{Dir: v.env.ModuleRoot, Patterns: patterns, Args: args,
		Env: v.env.Environ(), Out: v.out, Events: events, Binaries: v.binaries,
		Admit: capacity.Admission{Queue: queue}.Admit}
	var res *battery.Result
	if v.shard != nil {
		res, err = v.shard.runShare(ctx, bo)
	} else {
		res, err = battery.Run(ctx, bo)
	}
	v.recordNoise(neighbour, res)
	events.Close()
	if res != nil && res.MostAtOnce > 0 {
		fmt.Fprintf(v.out, "battery: at most %d of %d packages ran at once (another started only while the machine's run queue was under 2 per core)\n", res.MostAtOnce, res.Ceiling)
	}
	v.capacity = sampler.Stop()
	v.rep.Capacity = &v.capacity
	for _, i := range host.Stop() {
		v.interference = append(v.interference, ladder.Interference{At: i.At, What: i.Say()})
		fmt.Fprintf(v.out, "validate: interference: %s\n", i.Say())
	}
	v.rep.Interference = v.interference
	if path, err := saveJSON(root, capacityFile, v.capacity); err != nil {
		notSaved(v.out, "validate", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRed, err)
	}
	v.rep.Battery = res
	return res, nil
}

// previousRunID is the run id of the validate.json the run before left,
// "" when there is none.
func previousRunID(root string) string {
	var last struct {
		RunID string `json:"run_id"`
	}
	r, err := atomicfile.OpenRoot(root)
	if err != nil || r.ReadJSON("validate.json", &last, atomicfile.MaxArtifact) != nil {
		return ""
	}
	return last.RunID
}

// verify runs the six phases, paired (consuming the stamp only on
// success), and checks that the tests the registry names exist.
func (v *validation) verify(ctx context.Context, res *battery.Result) (*gate.Report, error) {
	inv := v.inventory
	verified, err := gate.Verify(ctx, gate.Options{
		Dir:              v.faultDir(),
		Mode:             gate.Paired,
		RecordingClasses: v.reg.Gate.RecordingClasses,
		KnownClasses:     v.reg.Classes(),
		Surfaces:         v.surfaceIDs(),
		SelfTests:        v.reg.Gate.SelfTests,
		Inventory:        inv,
		Shard:            v.shard != nil,
		Reused:           v.reuse.evidence(),
	})
	if err != nil && verified == nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	v.rep.Gate = verified
	if names, err := inv(ctx); err == nil {
		if err := v.reg.CheckTests(names); err != nil {
			v.rep.Registry = strings.Split(err.Error(), "\n")
		}
	}
	return verified, nil
}

// judge gives every registered surface that ran its contract verdict from
// this battery (one verdict: a failing leg is judged by its reruns alone
// with its seed, the ladder's), and saves the verdicts beside the six
// phases.
func (v *validation) judge(ctx context.Context, res *battery.Result, verified *gate.Report) []*contract.Result {
	mod, _ := contract.ModulePath(v.env.ModuleRoot)
	recs, err := contract.ReadRecords(v.faultDir())
	if err != nil {
		fmt.Fprintf(v.out, "validate: read the records to judge the surfaces: %v\n", err)
	}
	bat := contract.Battery{Registry: v.reg, Module: mod, Result: res, Records: recs, Level: v.env.Level, Capabilities: v.caps,
		Starts: v.starts, Reruns: map[string]bool{}}
	for _, o := range v.rep.Ladder {
		if o.Reruns.Runs > 0 && o.Reruns.Class != ladder.PackageFails && o.Reruns.Class != ladder.NeverRuns {
			bat.Reruns[o.Package+"."+o.Test] = o.Reruns.Class == ladder.Consistent
		}
	}
	judged := contract.JudgeBattery(bat)
	decideLegs(judged, v.rep.Ladder)
	deeper := v.deeper(ctx, judged)
	v.rep.Surfaces = contract.Verdicts(judged)
	for i := range v.rep.Surfaces {
		v.rep.Surfaces[i].Deeper = deeper[v.rep.Surfaces[i].ID]
	}
	v.rep.Surfaces = append(v.rep.Surfaces, v.reuse.verdicts()...)
	verified.Surfaces, verified.Capabilities = v.rep.Surfaces, v.caps
	if err := verified.Save(); err != nil {
		notSaved(v.out, "validate", filepath.Join(v.faultDir(), faultrecord.ReportName), err)
	}
	return judged
}

// decideLegs gives each failing leg the ladder's decision on its test, so
// that the surfaces table and the arbitration show one owner.
func decideLegs(judged []*contract.Result, walked []*ladder.Outcome) {
	for _, o := range walked {
		if o.Surface == nil || o.NoFailure() {
			continue
		}
		for _, r := range judged {
			if r.Surface != o.Surface.ID {
				continue
			}
			for i, l := range r.Legs {
				if slices.Contains(l.Tests, o.Test) {
					d := o.Decision()
					r.Legs[i].Decision = &d
				}
			}
		}
	}
}

// arbitrate walks the ladder for every failing test of the battery, the
// cheapest to decide first, within the budget, and lists every failure
// (and every package that failed outside a test) with the evidence the
// walk gathered.
func (v *validation) arbitrate(ctx context.Context, res *battery.Result, budget time.Duration) map[string]*contract.Result {
	failures := contract.LeafFailures(res)
	starts, skipped, err := faultrecord.ReadStarts(v.env.ResultsDir)
	if err != nil || skipped > 0 {
		fmt.Fprintf(v.out, "validate: the legs' start records: %d skipped, %v\n", skipped, err)
	}
	v.starts = faultrecord.OfRun(starts, v.env.RunID)
	var records []faultrecord.Record
	if len(failures) > 0 {
		// An oracle's violation in them outranks the machine's load.
		records, _ = contract.ReadRecords(v.faultDir())
	}
	contracts := map[string]*contract.Result{}
	v.rep.Ladder, v.rep.NotArbitrated = arbitrateAll(ctx, failures, budget, ladder.Options{
		Env: v.env, Registry: v.reg, Preflight: &v.preflight, Capacity: &v.capacity, Contracts: contracts, Seen: res, SeenRunID: v.env.RunID, Out: v.out, Binaries: v.binaries,
		Starts: starts, Noise: v.noise, Records: records, Quiet: ladder.NewQuiet(), Interference: v.interference,
		History: readHistoryIf(ctx, v.env.ResultsDir, v.reg.Guard.CanonicalDatabases, len(failures) > 0, v.out),
	}, v.out)
	walked := map[string]*ladder.Outcome{}
	for _, o := range v.rep.Ladder {
		walked[o.Package+"."+o.Test] = o
	}
	for _, t := range failures {
		v.rep.BatteryFailures = append(v.rep.BatteryFailures, ladder.PlainTest(t).With(walked[t.ID()]))
	}
	for _, p := range res.FailedPackages() {
		v.rep.BatteryFailures = append(v.rep.BatteryFailures, ladder.PlainPackage(p, testsRan(res, p.Name)))
	}
	return contracts
}

// testsRan is how many tests of pkg ran to an end in the battery.
func testsRan(res *battery.Result, pkg string) int {
	n := 0
	for _, t := range res.Tests {
		if t.Package == pkg {
			n++
		}
	}
	return n
}

// summarize prints the six phases, the surfaces, the battery, the ladder
// and the registry's problems.
func (v *validation) summarize(res *battery.Result, verified *gate.Report, judged []*contract.Result) {
	fmt.Fprintln(v.out)
	verified.WriteSummary(v.out)
	note := ""
	switch {
	case v.shard != nil:
		note = "shard " + v.shard.spec.String() + ", a share of the battery: NOT-RUN legs do not count against it; program-gate -merge judges the union"
	case !v.whole:
		note = "a selected battery: NOT-RUN legs do not count against it"
	}
	writeSurfaceSummary(v.out, judged, v.env.Level, note)
	writeReusedSummary(v.out, v.rep.Surfaces, v.reuse.rep)
	writeCapabilities(v.out, v.caps)
	writeBatterySummary(v.out, res, v.rep.BatteryFailures)
	writeLadderSummary(v.out, v.rep)
	if len(v.rep.Registry) > 0 {
		fmt.Fprintf(v.out, "\n%s\n", bold("registry"))
		for _, line := range v.rep.Registry {
			fmt.Fprintf(v.out, "  %s\n", terminal.Escape(line))
		}
	}
}

// finish writes the reports and validate.json and returns the verdict.
func (v *validation) finish(res *battery.Result, verified *gate.Report, judged []*contract.Result, contracts map[string]*contract.Result) error {
	rep, root := v.rep, v.env.ResultsDir
	if v.shard == nil && v.whole && v.noise == nil && len(v.reuse.pkgs) == 0 {
		// A battery beside a neighbour ran slower than its own pace: its
		// times would mislead the shards' split and the next comparison.
		// One that reused packages has no times for them, and the split
		// keeps the last full run's.
		saveTimings(root, v.out, res)
	}
	recs, _ := contract.ReadRecords(v.faultDir())
	appendHistory(context.Background(), root, v.reg.Guard.CanonicalDatabases, "validate", rep.RunID, rep.Shard, res, recs, rep.Revision, v.out)
	writeReports(root, report.Page{Title: "contested validate", RunID: rep.RunID, Layer: rep.Layer, Green: rep.Green,
		Reasons: rep.Reasons, Gate: verified, Battery: res, Surfaces: judged, Level: v.env.Level, Plain: rep.BatteryFailures,
		Ladder: rep.Ladder, Contracts: contractList(contracts), Capacity: rep.Capacity,
		Records: recs, History: reportHistory(context.Background(), root, v.reg.Guard.CanonicalDatabases, v.out)}, v.out)
	if rep.Battery != nil && len(v.reuse.pkgs) > 0 {
		b := *rep.Battery
		b.Packages = append(slices.Clone(b.Packages), v.reuse.packages()...)
		rep.Battery = &b
	}
	classes := map[string]string{}
	for _, s := range v.reg.Surfaces {
		classes[s.ID] = s.Class
	}
	v.reuse.write(context.Background(), root, v.reg.Guard.CanonicalDatabases, rep, res, judged, classes, v.out)
	if path, err := saveJSON(root, "validate.json", rep); err != nil {
		notSaved(v.out, "validate", path, err)
	} else {
		fmt.Fprintf(v.out, "validate: saved %s\n", path)
	}
	publishCI(v.env.ModuleRoot, rep.ciRun(), v.out)
	if rep.Green {
		fmt.Fprintf(v.out, "\nvalidate: %s in %s%s\n", color.GreenString("GREEN"), rep.Took.Round(time.Second), v.reuse.rep.verdictNote())
		return nil
	}
	fmt.Fprintf(v.out, "\nvalidate: %s: %s\n", color.RedString("RED"), terminal.Escape(strings.Join(rep.Reasons, "; ")))
	return fmt.Errorf("%w: %s", ErrRed, strings.Join(rep.Reasons, "; "))
}

// ProgramGateOptions configures ProgramGate.
type ProgramGateOptions struct {
	Dir string
	// Merge are shard directories to certify as one run (program-gate
	// -merge DIR...); empty verifies this module's records.
	Merge []string
	// MergeSet says -merge was given, even with no directory (a usage
	// error).
	MergeSet bool
	Out      io.Writer
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
	if opts.MergeSet || len(opts.Merge) > 0 {
		if err := checkVariables(varLevel); err != nil {
			return err
		}
		if len(opts.Merge) == 0 {
			writeMergeUsage(out)
			return fmt.Errorf("%w: -merge needs the shards' directories: go tool mage program-gate -merge shards/1 shards/2 shards/3", ErrUsage)
		}
		return mergeShards(ctx, opts.Merge, opts)
	}
	if err := checkVariables(varLayer, varLevel); err != nil {
		return err
	}
	ws, err := openWorkspace(opts.Dir)
	if err != nil {
		return err
	}
	dir, reg, root, level := ws.env.ModuleRoot, ws.reg, ws.env.ResultsDir, ws.env.Level
	hintIgnore(ctx, dir, root, out)
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
	p := report.Page{Title: "contested program-gate", RunID: verified.RunID, Green: verified.Certified, Gate: verified, Surfaces: judged, Level: level,
		Records: recs, History: reportHistory(ctx, root, reg.Guard.CanonicalDatabases, out)}
	if !verified.Certified {
		p.Reasons = []string{"gate refused: " + failedPhases(verified)}
	}
	writeReports(root, p, out)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrRed, err)
	}
	return nil
}

// moduleDir is the module root a command runs in (runenv.ModuleDir), a
// usage error when dir is none.
func moduleDir(dir string) (string, error) {
	dir, err := runenv.ModuleDir(dir)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrUsage, err)
	}
	return dir, nil
}

// resultsRoot is the results directory of the module in dir, checked and
// readied once, before the command starts anything
// (runenv.PrepareResultsDir). A directory that can never hold artifacts
// (/, a system directory, the home directory, the module root, a file, a
// link, read-only, one that holds a link) is bad input: exit 2, saying
// what to set.
func resultsRoot(dir string) (string, error) {
	root, err := runenv.PrepareResultsDir(dir)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrUsage, err)
	}
	return root, nil
}

// loadRegistry loads the registry at path (runenv.RegistryPath).
func loadRegistry(path string) (*registry.Registry, error) {
	reg, err := registry.Load(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %v: create the registry (see docs/reference/registry.md) or point %s at it", ErrUsage, err, envvar.Surfaces)
		}
		if !errors.Is(err, registry.ErrInvalid) {
			err = fmt.Errorf("%w: %v", ErrUsage, err)
		}
		return nil, err
	}
	return reg, nil
}

// workspace is the module a command runs on: its run environment, built
// once from the environment (runenv.Load), and its registry.
type workspace struct {
	env runenv.Env
	reg *registry.Registry
}

// testBinaries makes the command's store of test binaries under the
// results directory (battery.Binaries), so that every go test the command
// runs again (a seed, a rerun) links its package once, and the battery
// relinks only the packages whose sources changed since the last command;
// when it cannot, each go test builds its own as before, and it says why.
// The returned function removes the command's own (the kept copies stay).
func testBinaries(root string, out io.Writer) (*battery.Binaries, func()) {
	b, err := battery.NewBinaries(root, battery.WithLog(out))
	if err != nil {
		fmt.Fprintf(out, "contested: every rerun builds its own test binary: %v\n", err)
		return nil, func() {}
	}
	return b, func() { _ = b.Close() }
}

// openWorkspace builds the run environment of the module in dir (default:
// the working directory), which must be a module root, loads its registry
// and reads the level: everything a command reads, checked before it
// starts anything. Bad input is a usage error.
func openWorkspace(dir string) (*workspace, error) {
	dir, err := moduleDir(dir)
	if err != nil {
		return nil, err
	}
	reg, err := loadRegistry(runenv.RegistryPath(dir))
	if err != nil {
		return nil, err
	}
	env, err := runenv.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if env.Level, err = runenv.Level(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	return &workspace{env: env, reg: reg}, nil
}

// layerConfig is the fault layer's configuration from the environment
// (faultlayer.ConfigFromEnv), carrying the run's id and the registry's
// canonical databases (refused as a test plane), with progress going to
// out.
func layerConfig(ws *workspace, out io.Writer) (faultlayer.Config, error) {
	cfg, err := faultlayer.ConfigFromEnv()
	cfg.RunID, cfg.SharedRunID, cfg.Log = ws.env.RunID, ws.env.SharedRunID, out
	cfg.Canonical = ws.reg.Guard.CanonicalDatabases
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

// writeBatterySummary prints the battery's outcome: every failure with
// its reason (what the test reported, never a log line); the arbitration
// below gives each one's owner and action.
func writeBatterySummary(out io.Writer, res *battery.Result, failures []ladder.Plain) {
	fmt.Fprintf(out, "\n%s\n", bold("battery"))
	if res.OK() {
		fmt.Fprintf(out, "  %s: %d tests in %d packages (%s)\n", color.GreenString("passed"), len(res.Tests), len(res.Packages), res.Elapsed.Round(time.Second))
		return
	}
	for _, p := range failures {
		what := "package " + p.Package
		switch {
		case p.Test != "":
			what = p.Package + " " + p.Test
		case p.What != "":
			what += ": " + p.What
		}
		fmt.Fprintf(out, "  %s %s\n      %s\n", color.RedString("FAIL"), terminal.Escape(what), terminal.Escape(p.FirstLine))
		if p.Test == "" {
			fmt.Fprintf(out, "      owner %s; action: %s\n", terminal.Escape(p.Owner), terminal.Escape(p.Action))
		}
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
		fmt.Fprintf(out, "  %-22s %s\n", terminal.Escape(r.Surface), paintContract(r.Contract))
		for _, l := range r.Legs {
			fmt.Fprintf(out, "      %-17s %-30s %s\n", terminal.Escape(l.Lever), paintVerdict(l.Verdict), terminal.Escape(l.Reason))
			if d := l.Decision; d != nil {
				fmt.Fprintf(out, "      %-17s arbitrated: %s\n", "", terminal.Escape(d.Say()))
			}
			if l.Replay != "" && !l.Verdict.Pass() {
				fmt.Fprintf(out, "      %-17s replay: %s\n", "", terminal.Escape(l.Replay))
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
func validateReasons(res *battery.Result, verified *gate.Report, judged []*contract.Result, whole bool, registryProblems []string, caps capability.Matrix) []string {
	var out []string
	if !res.OK() {
		out = append(out, fmt.Sprintf("battery failed (%d tests, %d packages%s)", len(res.Failed()), len(res.FailedPackages()), packageReasons(res)))
	}
	for _, p := range res.TimedOut() {
		out = append(out, ladder.TimeoutReason(p))
	}
	if !verified.Certified {
		out = append(out, "gate refused: "+failedPhases(verified))
	}
	out = append(out, surfaceReasons(judged, whole, caps)...)
	if len(registryProblems) > 0 {
		out = append(out, "registry names tests that do not exist")
	}
	return out
}

// packageReasons names the packages that failed outside any test and
// what happened to each, for the verdict line: ": example.com/m/x does not
// build", or nothing.
func packageReasons(res *battery.Result) string {
	var parts []string
	for _, p := range res.FailedPackages() {
		parts = append(parts, p.Name+" "+ladder.PlainPackage(p, testsRan(res, p.Name)).What)
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + strings.Join(parts, "; ")
}

// surfaceReasons says which surfaces keep validate from GREEN, and, for
// legs that could not run for a missing capability, which one and the
// command that provides it.
func surfaceReasons(judged []*contract.Result, whole bool, caps capability.Matrix) []string {
	var out []string
	for _, r := range judged {
		var legs, missing []string
		for _, l := range r.Blocking(whole) {
			legs = append(legs, l.Lever+" "+string(l.Verdict))
			for _, n := range l.Missing {
				if !slices.Contains(missing, n) {
					missing = append(missing, n)
				}
			}
		}
		if len(legs) == 0 {
			continue
		}
		reason := fmt.Sprintf("surface %s is %s (%s)", r.Surface, r.Contract, strings.Join(legs, ", "))
		for _, n := range missing {
			c, ok := caps.Get(capability.Name(n))
			if !ok {
				c = capability.Capability{Name: capability.Name(n), Provide: capability.Provide(capability.Name(n))}
			}
			reason += ": " + c.Missing()
		}
		out = append(out, reason)
	}
	return out
}

// workCapabilities works the machine's capabilities out while the run goes
// on (asking Chromium its version takes a moment), and returns what waits
// for the matrix.
func workCapabilities(ctx context.Context, dir string) func() capability.Matrix {
	done := make(chan capability.Matrix, 1)
	go func() { done <- capability.Work(ctx, dir) }()
	var m capability.Matrix
	var once sync.Once
	return func() capability.Matrix {
		once.Do(func() { m = <-done })
		return m
	}
}

// writeCapabilities prints the capability matrix: every missing capability
// someone needs, with who needs it and the command that provides it, then
// one line of what is present.
func writeCapabilities(out io.Writer, m capability.Matrix) {
	if len(m) == 0 {
		return
	}
	fmt.Fprintf(out, "\n%s\n", bold("capabilities"))
	var present []string
	for _, c := range m {
		if c.Present {
			present = append(present, c.Say())
			continue
		}
		if len(c.NeededBy) == 0 {
			continue
		}
		fmt.Fprintf(out, "  %s %s\n      needed by %s\n", color.RedString("MISSING"), c.Missing(), neededBy(c.NeededBy))
	}
	fmt.Fprintf(out, "  present: %s\n", strings.Join(present, "; "))
}

// neededBy lists who needs a capability, the first few by name.
func neededBy(who []string) string {
	const show = 4
	if len(who) <= show {
		return strings.Join(who, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(who[:show], ", "), len(who)-show)
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

// watchHost follows the Docker engine's events for this run's containers
// while the battery runs: another run's sweep of one of them is
// interference, which the ladder names as such.
func watchHost(ctx context.Context, run string) *hostevents.Watch {
	var d hostevents.Eventer
	if cli, err := dockerenv.Connect(ctx); err == nil {
		d = cli
	}
	return hostevents.Follow(ctx, d, run)
}

// arbitrateAll walks the ladder for each failing test, the cheapest to
// decide first (the shortest in the battery: a rerun costs about what the
// test took), until the budget is spent. A walk the budget ends reports
// what it learned so far; the tests it did not reach are returned with the
// command that arbitrates them.
func arbitrateAll(ctx context.Context, tests []battery.Test, budget time.Duration, lo ladder.Options, out io.Writer) ([]*ladder.Outcome, []string) {
	if len(tests) == 0 {
		return nil, nil
	}
	tests = slices.Clone(tests)
	slices.SortStableFunc(tests, func(a, b battery.Test) int { return cmp.Compare(a.Elapsed, b.Elapsed) })
	fmt.Fprintf(out, "\nvalidate: walking the arbitration ladder for %d failing tests, the quickest first (budget %s, %s)\n", len(tests), budget, envvar.LadderBudget)
	deadline := time.Now().Add(budget)
	var done []*ladder.Outcome
	var left []string
	for i, t := range tests {
		if time.Now().After(deadline) || ctx.Err() != nil {
			left = append(left, t.ID())
			continue
		}
		fmt.Fprintf(out, "ladder: [%d/%d] %s (%s in the battery)\n", i+1, len(tests), terminal.Escape(t.ID()), t.Elapsed.Round(10*time.Millisecond))
		wctx, cancel := context.WithDeadline(ctx, deadline)
		o, err := ladder.Walk(wctx, t.ID(), lo)
		cancel()
		if err != nil {
			fmt.Fprintf(out, "ladder: %s: %s\n", terminal.Escape(t.ID()), terminal.Escape(err.Error()))
			left = append(left, t.ID())
			continue
		}
		if !o.NoFailure() {
			saveOutcome(lo.Env.ResultsDir, o, out)
		}
		done = append(done, o)
	}
	return done, left
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

// writeReports writes the run for people (fault/fault-report.html) and for
// CI systems (battery/junit.xml, when a battery ran), and names what it
// saved and, apart, what it could not save.
func writeReports(root string, p report.Page, out io.Writer) {
	p.Visualizations = report.Visualizations(root)
	if p.Degraded == nil {
		p.Degraded = report.Degraded(root)
	}
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
		if err := report.WriteJUnit(&x, p.Battery, junitOwners(p.Plain)...); err != nil {
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
