package command

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/fatih/color"

	"github.com/contested/contested/internal/faultlayer"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gate/flakes"
	"github.com/contested/contested/internal/gate/verdict"
	"github.com/contested/contested/internal/gotest"
	"github.com/contested/contested/internal/registry"
	"github.com/contested/contested/internal/rundir"
	"github.com/contested/contested/internal/terminal"
)

// ContestedOptions configures Contested.
type ContestedOptions struct {
	Dir     string
	Surface string    // a surface id, or "all"
	Out     io.Writer `json:"-"`
}

// Contested runs surfaces' contracts in isolation over their seed budgets
// (CONTESTED_SEEDS overrides the count; CONTESTED_SEED replays one seed;
// CONTESTED_LEVEL sets the intensity) and prints each leg's verdict with
// its evidence, each surface's contract verdict, and a coverage line per
// lever. A leg the registry does not run at this level (its surface's
// levels key) is NOT-AT-LEVEL and left out of the surface's verdict; a
// surface with no leg at this level is NOT AT THIS LEVEL and is not run.
// Results go to contested/<surface>.json under the results directory. A
// leg a missing capability keeps from running names it and the command
// that provides it. With CONTESTED_NOISE (or [battery] noise) the seeds
// run beside a noisy neighbour, whose record goes to contested/noise/fault/.
// Exit: 0 all GREEN (or NOT AT THIS LEVEL); 1 any RED or INCONCLUSIVE;
// 3 CANNOT RUN.
func Contested(ctx context.Context, opts ContestedOptions) error {
	ctx, cancel := withSignals(ctx)
	defer cancel()
	out := opts.Out
	if err := checkVariables(varLayer, varLevel, varSeed, varSeeds, varTimeout, varNoise); err != nil {
		return err
	}
	ws, err := openWorkspace(opts.Dir)
	if err != nil {
		return err
	}
	dir, reg, root, level := ws.env.ModuleRoot, ws.reg, ws.env.ResultsDir, ws.env.Level
	surfaces, err := selectSurfaces(reg, opts.Surface)
	if err != nil {
		return err
	}
	if err := checkSurfaceTests(ctx, dir, reg, surfaces); err != nil {
		return err
	}
	hintIgnore(ctx, dir, root, out)
	cfg, err := layerConfig(ws, out)
	if err != nil {
		return err
	}
	capabilities := workCapabilities(ctx, root.String())

	bins, closeBinaries := testBinaries(ws.env.ResultsDir, out)
	defer closeBinaries()
	copts := contract.Options{Env: ws.env, Out: out, Binaries: bins}
	if logs, err := os.MkdirTemp("", "contested-testlogs-"); err == nil {
		defer os.RemoveAll(logs)
		copts.TestLogs = logs
	}
	l, err := faultlayer.Up(ctx, cfg)
	reportUpError(out, err)
	if err == nil {
		defer l.Close(context.WithoutCancel(ctx))
		if _, perr := Preflight(ctx, l, true, root, out); perr != nil {
			copts.EnvMissing = perr.Error()
		} else {
			reclaimVictims(ctx, l.DB(), cfg.Canonical, "fault layer", out)
		}
		copts.Env = copts.Env.Attach(l.Env(), l.RunID)
	} else {
		copts.EnvMissing = err.Error()
	}

	caps := capabilities()
	contract.Needs(caps, reg, layerKind(l), nil)
	copts.Capabilities = caps
	for _, c := range caps.MissingNeeded() {
		fmt.Fprintf(out, "contested: %s (needed by %s)\n", c.Missing(), neededBy(c.NeededBy, reg))
	}
	neighbour, err := armNeighbour(ctx, "contested", reg.Battery.Noise, copts.Env, out)
	if err != nil {
		return err
	}
	stopNeighbour := sync.OnceFunc(func() {
		recordNeighbour(neighbour, "contested", rundir.Dir(root.Join(rundir.ContestedDir, "noise")), copts.Env, out, "")
	})
	defer stopNeighbour()
	var results []*contract.Result
	for _, s := range surfaces {
		seeds, err := contract.Seeds(s.Budget.Hardening.Seeds, s.LegsAt(level), level)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrUsage, err)
		}
		o := copts
		o.Seeds = seeds
		fmt.Fprintf(out, "\n%s %s (%s, owner %s): %d seeds, level %d, legs %s\n", bold("contested:"), terminal.Escape(s.ID), terminal.Escape(s.Class), terminal.Escape(s.Owner), len(seeds), level, legsAt(s, level))
		if covers := contract.Covers(seeds, s.LegsAt(level), level); len(covers) > 0 {
			fmt.Fprintf(out, "  the seeds' schedules cover %s\n", strings.Join(covers, ", "))
		}
		res, err := contract.Run(ctx, s, o)
		if err != nil {
			return err
		}
		replayWith([]*contract.Result{res}, replaySet(copts.Env, readBy(res.Seeds)))
		results = append(results, res)
		if path, err := saveJSON(root, filepath.Join("contested", s.ID+".json"), res); err != nil {
			notSaved(out, "contested", path, err)
		}
	}

	stopNeighbour()
	var runs []contract.SeedRun
	for _, res := range results {
		runs = append(runs, res.Seeds...)
	}
	appendRuns(context.WithoutCancel(ctx), root, reg.Guard.CanonicalDatabases, "contested", copts.Env.RunID, runs, flakes.ReadRevision(ctx, dir), out)

	fmt.Fprintln(out)
	worst := verdict.Green
	for _, res := range results {
		WriteContractSummary(out, res)
		worst = worse(worst, res.Contract)
	}
	switch worst {
	case verdict.Green:
		return nil
	case verdict.CannotRun:
		return fmt.Errorf("%w: the fault layer cannot run: %s", ErrCannotRun, copts.EnvMissing)
	default:
		return fmt.Errorf("%w: contract verdict %s", ErrRed, worst)
	}
}

// layerKind is the provider of l, "" when no layer came up.
func layerKind(l *faultlayer.Layer) string {
	if l == nil {
		return ""
	}
	return string(l.Kind)
}

// WriteContractSummary prints one surface's verdict: per leg its verdict,
// reason, evidence and replay command; the contract verdict; a coverage
// line per lever.
func WriteContractSummary(out io.Writer, res *contract.Result) {
	fmt.Fprintf(out, "%s %s — %s (oracle %s)\n", bold("surface"), terminal.Escape(res.Surface), terminal.Escape(res.Behavior), terminal.Escape(res.Oracle))
	for _, l := range res.Legs {
		fmt.Fprintf(out, "  %-17s %s\n", terminal.Escape(l.Lever), paintVerdict(l.Verdict))
		fmt.Fprintf(out, "      %s\n", terminal.Escape(l.Reason))
		if l.Verdict == verdict.NotAtLevel {
			continue
		}
		if l.Armed > 0 || l.Injector != "" || l.Victim != "" {
			// A fault was armed: each side's evidence, or that it is missing.
			for _, line := range l.Landing() {
				fmt.Fprintf(out, "      %s\n", terminal.Escape(line))
			}
		}
		if l.Replay != "" {
			fmt.Fprintf(out, "      replay:   %s\n", terminal.Escape(l.Replay))
		}
	}
	fmt.Fprintf(out, "  contract: %s\n", paintContract(res.Contract))
	for _, l := range res.Legs {
		if l.Verdict == verdict.NotAtLevel {
			continue
		}
		flag := ""
		if l.Thin {
			flag = color.YellowString("  (under %d: thin coverage)", verdict.CoverageFloor)
		}
		fmt.Fprintf(out, "  coverage %-17s %d occurrences over %d seeds, %d distinct schedules%s\n", l.Lever, l.Fired, len(res.Seeds), l.Schedules, flag)
	}
	fmt.Fprintln(out)
}

func paintVerdict(v verdict.Verdict) string {
	switch {
	case v == verdict.NotAtLevel:
		return color.New(color.Faint).Sprint(string(v))
	case v.Pass():
		return color.GreenString(string(v))
	case v.Fail():
		return color.RedString(string(v))
	default:
		return color.YellowString(string(v))
	}
}

func paintContract(c verdict.Contract) string {
	switch c {
	case verdict.Green:
		return color.GreenString(string(c))
	case verdict.NotAtThisLevel:
		return color.New(color.Faint).Sprint(string(c))
	case verdict.Red:
		return color.RedString(string(c))
	default:
		return color.YellowString(string(c))
	}
}

// worse orders contract verdicts for the exit code: CANNOT RUN > RED >
// INCONCLUSIVE > GREEN = NOT AT THIS LEVEL (nothing judged, nothing wrong).
func worse(a, b verdict.Contract) verdict.Contract {
	rank := map[verdict.Contract]int{verdict.Green: 0, verdict.NotAtThisLevel: 0, verdict.Inconclusive: 1, verdict.Red: 2, verdict.CannotRun: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// legsAt lists a surface's legs for the header: those that run at level,
// then those that do not, marked.
func legsAt(s registry.Surface, level int) string {
	var parts []string
	for _, l := range s.Legs {
		if s.RunsAt(l, level) {
			parts = append(parts, l)
		}
	}
	for _, l := range s.Legs {
		if !s.RunsAt(l, level) {
			parts = append(parts, fmt.Sprintf("%s (not at this level: runs only at levels %s)", l, strings.Join(strings.Fields(strings.Trim(fmt.Sprint(s.LegLevels(l)), "[]")), ", ")))
		}
	}
	return strings.Join(parts, ", ")
}

func selectSurfaces(reg *registry.Registry, id string) ([]registry.Surface, error) {
	id = strings.TrimSpace(id)
	switch id {
	case "":
		return nil, fmt.Errorf("%w: name a surface or all (surfaces in %s: %s)", ErrUsage, reg.Path, strings.Join(reg.IDs(), ", "))
	case "all":
		return reg.Surfaces, nil
	}
	s, ok := reg.Surface(id)
	if !ok {
		return nil, fmt.Errorf("%w: surface %q is not in %s (surfaces: %s)", ErrUsage, id, reg.Path, strings.Join(reg.IDs(), ", "))
	}
	return []registry.Surface{s}, nil
}

// checkSurfaceTests makes sure each selected surface's tests exist in its
// package before anything runs, naming the registry line when not.
func checkSurfaceTests(ctx context.Context, dir string, reg *registry.Registry, ss []registry.Surface) error {
	byPkg := map[string][]string{}
	var problems []string
	for _, s := range ss {
		pkg := s.Package
		if pkg == "" {
			pkg = "./..."
		}
		names, ok := byPkg[pkg]
		if !ok {
			var err error
			names, err = gotest.List(ctx, dir, pkg)
			if err != nil {
				return fmt.Errorf("%w: list the tests of %s (surface %s, %s:%d): %v", ErrUsage, pkg, s.ID, reg.Path, s.Line, err)
			}
			byPkg[pkg] = names
		}
		have := map[string]bool{}
		for _, n := range names {
			have[n] = true
		}
		for _, t := range s.Tests {
			top, _, _ := strings.Cut(t, "/")
			if !have[top] {
				problems = append(problems, fmt.Sprintf("%s:%d: surface %q lists test %q, which is not in %s", reg.Path, s.Line, s.ID, t, pkg))
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", registry.ErrInvalid, strings.Join(problems, "\n"))
	}
	return nil
}

// readBy is what the seeds' tests read, by package.
func readBy(seeds []contract.SeedRun) map[string][]string {
	read := map[string][]string{}
	for _, s := range seeds {
		for pkg, names := range s.Read {
			for _, n := range names {
				if !slices.Contains(read[pkg], n) {
					read[pkg] = append(read[pkg], n)
				}
			}
		}
	}
	return read
}
