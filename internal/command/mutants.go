package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/fatih/color"

	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/mutants"
)

// MutantsOptions configures Mutants.
type MutantsOptions struct {
	// Dir is the module; empty means the working directory.
	Dir string
	// Patterns are the packages to mutate; default the registry's
	// [mutants] packages, else the packages its surfaces name.
	Patterns []string
	Out      io.Writer `json:"-"`
}

// MutantsReport is mutants/mutants.json.
type MutantsReport struct {
	RunID  string `json:"run_id"`
	Layer  string `json:"layer"`
	Module string `json:"module"`
	*mutants.Report
}

// mutantsDir is where mutants writes under the results directory: the
// report, and run/ with gremlins' output and logs and the tests' own
// results directory (emptied at the start of every run).
const mutantsDir = "mutants"

// Mutants runs mutation testing (internal/mutants) over the packages,
// with the fault layer up and the battery's environment: the layer's
// coordinates and the registry, and a results directory of the mutated
// tests' own (mutants/run/results), so their records never mix with a
// battery's. It prints each package's figures and survivors, saves
// mutants/mutants.json, and fails (exit 1) when the kill rate of covered
// mutants is below the registry's [mutants] threshold or a package could
// not be measured.
func Mutants(ctx context.Context, opts MutantsOptions) error {
	ctx, cancel := withSignals(ctx)
	defer cancel()
	out := opts.Out
	start := time.Now()
	if err := checkVariables(varLayer, varLevel, varSeed, varSeeds); err != nil {
		return err
	}
	ws, err := openWorkspace(opts.Dir)
	if err != nil {
		return err
	}
	targets, err := mutantTargets(ctx, ws, opts.Patterns)
	if err != nil {
		return err
	}
	if err := mutants.CheckTool(ctx, ws.env.ModuleRoot); err != nil {
		return fmt.Errorf("%w: %v", ErrCannotRun, err)
	}
	cfg, err := layerConfig(ws, out)
	if err != nil {
		return err
	}
	dir := ws.env.ModuleRoot
	fmt.Fprintf(out, "%s %d packages in %s: %s\n", bold("mutants:"), len(targets), dir, targetList(targets))
	l, env, _, err := layerUp(ctx, cfg, ws.env, "mutants", "refusing to run the tests", out)
	if err != nil {
		return err
	}
	defer l.Close(context.WithoutCancel(ctx))
	root, err := atomicfile.OpenRoot(env.ResultsDir.String())
	if err != nil {
		return fmt.Errorf("open the results directory: %w", err)
	}
	work, results := path.Join(mutantsDir, "run"), path.Join(mutantsDir, "run", "results")
	if err := atomicfile.EmptyDir(env.ResultsDir.String(), work); err != nil {
		return fmt.Errorf("empty %s: %w", root.Join(work), err)
	}
	if err := root.MkdirAll(results); err != nil {
		return fmt.Errorf("make %s: %w", root.Join(results), err)
	}
	rep, err := mutants.Run(ctx, mutants.Options{
		Dir: dir, Targets: targets, Accepted: ws.reg.Mutants.Accepted, Threshold: ws.reg.Mutants.Threshold,
		Env: env.WithResultsDir(root.Join(results)).Environ(), Results: root, Work: work, Out: out,
	})
	if err != nil {
		return err
	}
	mod, _ := contract.ModulePath(dir)
	full := MutantsReport{RunID: l.RunID, Layer: string(l.Kind), Module: mod, Report: rep}
	rep.Took = time.Since(start)
	rep.WriteSummary(out, relTo(dir, env.Registry))
	saved, serr := saveJSON(env.ResultsDir, path.Join(mutantsDir, "mutants.json"), full)
	if serr != nil {
		notSaved(out, "mutants", saved, serr)
	} else {
		fmt.Fprintf(out, "mutants: saved %s (gremlins' output and logs: %s)\n", saved, root.Join(work))
	}
	if !rep.Passed {
		fmt.Fprintf(out, "\nmutants: %s: %s\n", color.RedString("RED"), strings.Join(rep.Reasons, "; "))
		return fmt.Errorf("%w: %s", ErrRed, strings.Join(rep.Reasons, "; "))
	}
	fmt.Fprintf(out, "\nmutants: %s in %s\n", color.GreenString("GREEN"), rep.Took.Round(time.Second))
	return nil
}

// mutantTargets resolves the packages to mutate: the patterns given, else
// the registry's. It also checks that every accepted survivor names a file
// of the module. Both are bad input (exit 2) when wrong.
func mutantTargets(ctx context.Context, ws *workspace, patterns []string) ([]mutants.Target, error) {
	if len(patterns) == 0 {
		patterns = ws.reg.MutantPackages()
	}
	if len(patterns) == 0 {
		return nil, fmt.Errorf("%w: no packages to mutate: give package patterns (go tool mage mutants ./pkg), list them in %s under [mutants] packages, or give its surfaces a package", ErrUsage, ws.env.Registry)
	}
	for _, a := range ws.reg.Mutants.Accepted {
		if fi, err := os.Stat(filepath.Join(ws.env.ModuleRoot, filepath.FromSlash(a.File))); err != nil || !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("%w: %s:%d: [[mutants.accepted]] names %s, which is not a file of the module in %s; fix the path or remove the entry", ErrUsage, ws.env.Registry, a.At, a.File, ws.env.ModuleRoot)
		}
	}
	targets, err := mutants.Resolve(ctx, ws.env.ModuleRoot, patterns)
	if errors.Is(err, mutants.ErrPackages) {
		return nil, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	return targets, err
}

func targetList(ts []mutants.Target) string {
	var s []string
	for _, t := range ts {
		s = append(s, t.Dir)
	}
	return strings.Join(s, " ")
}

// relTo is p relative to dir when it lies inside, else p.
func relTo(dir, p string) string {
	if r, err := filepath.Rel(dir, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}
