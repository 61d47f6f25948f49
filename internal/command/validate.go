package command

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fatih/color"

	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/capability"
	"github.com/contested/contested/internal/capacity"
	"github.com/contested/contested/internal/degraded"
	"github.com/contested/contested/internal/faultlayer"
	"github.com/contested/contested/internal/faultlayer/noise"
	"github.com/contested/contested/internal/gate"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gate/flakes"
	"github.com/contested/contested/internal/gate/ladder"
	"github.com/contested/contested/internal/legstart"
	"github.com/contested/contested/internal/registry"
	"github.com/contested/contested/internal/replayenv"
	"github.com/contested/contested/internal/runenv"
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
	// Plan is a plan file (validate -plan): run what it names, and judge
	// the findings against it.
	Plan string
	// PlanSet says -plan was given, even empty (a usage error).
	PlanSet bool
	Out     io.Writer `json:"-"`
}

// check refuses options that contradict each other or name nothing.
func (o ValidateOptions) check() error {
	if o.Reuse && o.Full {
		return fmt.Errorf("%w: -reuse and -full contradict each other: give one", ErrUsage)
	}
	if o.PlanSet && o.Plan == "" {
		return fmt.Errorf("%w: -plan needs the plan's file: -plan test-results/plan.json", ErrUsage)
	}
	return nil
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
	NotArbitrated []string `json:"not_arbitrated,omitempty"`
	// Confirming is set in the validate.json written the moment the
	// battery and the gate were done (firstVerdict): RED, each failure
	// with its likely owner, before the ladder confirms. The final
	// validate.json clears it; one that still says so was stopped before
	// the ladder ended.
	Confirming bool `json:"confirming,omitempty"`
	// FirstVerdictAfter is how long after the battery ended that RED was
	// given.
	FirstVerdictAfter time.Duration `json:"first_verdict_after_ns,omitempty"`
	// Unconfirmed are the failing tests whose likely owner no ladder walk
	// confirmed (its budget, or a signal, ended it first).
	Unconfirmed []string      `json:"unconfirmed,omitempty"`
	Green       bool          `json:"green"`
	Reasons     []string      `json:"reasons,omitempty"`
	Took        time.Duration `json:"took_ns"`
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
	// ReplayEnv are, by package, the variables its tests read that the
	// run set (package replayenv; a secret's value never kept): what the
	// replay lines carry, and what arbitrate's reruns set again.
	ReplayEnv *replayenv.Set `json:"replay_env,omitempty"`
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
//
// Its stages, one file each, in the order they run: workspace.go (the
// module, the registry, the results directory), reuse.go (what a change
// could not reach), validate_battery.go (the stamp, the battery),
// validate_gate.go (the six phases), validate_judge.go (each surface's
// verdict), validate_ladder.go (each failure's owner) and
// validate_report.go (the summary, validate.json and the reports).
func Validate(ctx context.Context, opts ValidateOptions) error {
	ctx, cancel := withSignals(ctx)
	defer cancel()
	start := time.Now()
	if err := opts.check(); err != nil {
		return err
	}
	if err := checkVariables(varLayer, varLevel, varSeed, varSeeds, varBudget, varTimeout, varNoise, varSignKey); err != nil {
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
	pl, err := loadPlan(ws, &opts, !spec.IsZero())
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
	v := &validation{out: opts.Out, reg: ws.reg, env: ws.env, whole: wholeBattery(opts) && sh == nil, shard: sh, start: start,
		rep: &ValidateReport{RunID: ws.env.RunID, Level: ws.env.Level, Revision: flakes.ReadRevision(ctx, ws.env.ModuleRoot)}}
	if sh != nil {
		v.rep.Shard = spec.String()
	}
	v.plan = pl
	fmt.Fprintf(v.out, "%s run %s in %s\n", bold("validate:"), ws.env.RunID, ws.env.ModuleRoot)
	pl.say(v.out)
	capabilities := workCapabilities(ctx, ws.env.ResultsDir.String())
	var closeBinaries func()
	v.binaries, closeBinaries = testBinaries(ws.env.ResultsDir, v.out)
	defer closeBinaries()
	hintIgnore(ctx, ws.env.ModuleRoot, ws.env.ResultsDir, v.out)

	// Never a battery on a stack a degraded stage is rerouting: wait for
	// one that runs, and restore what a crashed one left.
	if err := degraded.Await(ctx, ws.env.ResultsDir.String(), "validate", v.out); err != nil {
		return interrupted(stageError(err))
	}
	// What the change could not reach is reused, before a layer comes up:
	// a run that reuses everything needs none.
	v.reuse = planReuse(ctx, opts, ws, sh != nil, v.out)
	defer v.reuse.close()
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
	v.firstVerdict(ctx, res, verified)
	contracts := v.arbitrate(ctx, res, budget)
	judged := v.judge(ctx, res, verified)
	v.harden(ctx, judged, verified)
	v.summarize(res, verified, judged)
	v.rep.Reasons = append(validateReasons(res, verified, judged, v.whole, v.rep.Registry, v.caps), v.noiseReasons()...)
	v.rep.Green = len(v.rep.Reasons) == 0
	v.rep.Took = time.Since(start)
	return v.finish(res, verified, judged, contracts)
}

// validation is one validate run as it goes: the run environment (with
// the layer attached once it is up), the registry and the report so far.
type validation struct {
	out   io.Writer
	start time.Time
	reg   *registry.Registry
	env   runenv.Env
	rep   *ValidateReport
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
	starts []legstart.Start
	// interference is what other runs on this Docker host did to this
	// run's containers during the battery.
	interference []ladder.Interference
	// reuse is what this run reuses from earlier certified runs.
	reuse *reuse
	// plan is the plan validate -plan runs; nil for a plain validate.
	plan *runPlan
	// replay are the variables each package's tests read, which its
	// replays and reruns carry.
	replay *replayenv.Set
}

// faultDir is the run's fault directory.
func (v *validation) faultDir() string { return v.env.ResultsDir.Fault() }

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
