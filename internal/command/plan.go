package command

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/contested/contested/internal/capability"
	"github.com/contested/contested/internal/digest"
	"github.com/contested/contested/internal/gate/certify"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/plan"
	"github.com/contested/contested/internal/rundir"
	"github.com/contested/contested/internal/terminal"
)

// PlanOptions configures Plan.
type PlanOptions struct {
	// Dir is the module; empty means the working directory.
	Dir string
	// Since is the revision the change is compared with; empty means the
	// merge base of HEAD and the default branch.
	Since string
	// All plans for every claim of the registry, whatever changed.
	All bool
	// Author writes each scenario's skeleton at its target path.
	Author bool
	// NoProbe leaves the machine's capabilities unasked.
	NoProbe bool
	Out     io.Writer `json:"-"`
}

// Plan writes the test plan of a change (or, with All, of the whole
// registry) to plan.md and plan.json under the results directory: the
// blast radius from the files touched to the claims at risk, the
// hypotheses against them from the pitfall catalog, the coverage matrix
// and its gaps, the level, the environment and a scenario for each gap.
// With Author it writes the scenarios' skeletons into the module, never
// over a file, and commits nothing. A plan is advice, not a verdict: it
// exits 0 whatever it finds; bad input (a -since that names no commit, a
// module outside git without -all, a bad registry) exits 2.
func Plan(ctx context.Context, opts PlanOptions) error {
	if opts.All && opts.Since != "" {
		return fmt.Errorf("%w: -all plans for every claim whatever changed, and -since for one change: give one", ErrUsage)
	}
	ws, err := openWorkspace(opts.Dir)
	if err != nil {
		return err
	}
	p, err := makePlan(ctx, ws, opts)
	if err != nil {
		return err
	}
	root := ws.env.ResultsDir
	var md bytes.Buffer
	if err := plan.WriteMarkdown(&md, p); err != nil {
		return err
	}
	js, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	writePlanSummary(opts.Out, p)
	var saved []string
	for _, f := range []struct {
		name string
		data []byte
	}{{plan.MarkdownName, md.Bytes()}, {plan.JSONName, append(js, '\n')}} {
		path, err := saveArtifact(root, f.name, f.data)
		if err != nil {
			notSaved(opts.Out, "plan", path, err)
			return fmt.Errorf("save the plan: %w", err)
		}
		saved = append(saved, path)
	}
	fmt.Fprintf(opts.Out, "plan: saved %s\n", strings.Join(saved, ", "))
	if opts.Author {
		authored, err := plan.Author(ws.env.ModuleRoot, p)
		if err != nil {
			return err
		}
		for _, a := range authored {
			if a.Wrote {
				fmt.Fprintf(opts.Out, "plan: wrote %s (scenario %s): review it, fill its TODO regions, and commit it yourself\n", terminal.Escape(a.Target), a.Scenario)
				continue
			}
			fmt.Fprintf(opts.Out, "plan: %s (scenario %s): %s\n", terminal.Escape(a.Target), a.Scenario, terminal.Escape(a.Why))
		}
	}
	return nil
}

// makePlan gathers what a plan is built from and builds it.
func makePlan(ctx context.Context, ws *workspace, opts PlanOptions) (*plan.Plan, error) {
	root, results := ws.env.ModuleRoot, ws.env.ResultsDir
	module, err := contract.ModulePath(root)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	change, err := plan.Changes(ctx, root, opts.Since, opts.All, inside(root, results.String()))
	if err != nil {
		if errors.Is(err, plan.ErrChange) {
			return nil, fmt.Errorf("%w: %w", ErrUsage, err)
		}
		return nil, err
	}
	regFile := inside(root, ws.env.Registry)
	if regFile == "" {
		regFile = ws.env.Registry
	}
	fmt.Fprintf(opts.Out, "plan: reading the link graph of the module's packages (go list)\n")
	start := time.Now()
	mod, err := digest.Load(ctx, root, digest.WithEnv(os.Environ()))
	if err != nil {
		return nil, fmt.Errorf("plan: the module's packages: %w", err)
	}
	if took := time.Since(start); took > time.Second {
		fmt.Fprintf(opts.Out, "plan: read the link graph of %d packages in %s\n", len(mod.Packages), took.Round(10*time.Millisecond))
	}
	in := plan.Input{Root: root, Module: module, Registry: ws.reg, RegistryFile: regFile, Digest: mod, Change: change,
		Certificates: planCertificates(ctx, ws, mod.Path, opts.Out),
		OldRegistry:  plan.RegistryAt(ctx, root, change, regFile),
		History:      readHistory(ctx, results, ws.reg.Guard.CanonicalDatabases, io.Discard),
		PlanFile:     planFile(root, results), Now: time.Now()}
	if !opts.NoProbe {
		in.Probe = func(n capability.Name) capability.Capability { return capability.Probe(ctx, n, results.String()) }
	}
	return plan.Build(in), nil
}

// planCertificates reads the reuse certificates validate would trust, for
// what each package's tests touched when they last passed: a change to a
// file they read reaches the package. Without them the plan says so and
// goes on without that route.
func planCertificates(ctx context.Context, ws *workspace, module string, out io.Writer) *certify.Set {
	trust, err := reuseTrust(ws.reg, io.Discard)
	if err != nil {
		fmt.Fprintf(out, "plan: no reuse certificates read (%s): a file only a test's touched record names reaches no package\n", terminal.Escape(err.Error()))
		return nil
	}
	return readCertificates(ctx, ws.env.ResultsDir, ws.reg.Guard.CanonicalDatabases, trust, module, nil, io.Discard)
}

// hypotheses is n hypotheses in words.
func hypotheses(n int) string {
	if n == 1 {
		return "1 hypothesis"
	}
	return fmt.Sprintf("%d hypotheses", n)
}

// inside is path relative to root, slash-separated, when it is inside
// root; "" otherwise.
func inside(root, path string) string {
	rel, err := filepath.Rel(root, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return ""
	}
	return filepath.ToSlash(rel)
}

// planFile is plan.md's path as a skeleton's header names it: relative to
// the module root when the results directory is inside it.
func planFile(root string, results rundir.Dir) string {
	if rel := inside(root, results.String()); rel != "" {
		return rel + "/" + plan.MarkdownName
	}
	return filepath.Join(results.String(), plan.MarkdownName)
}

// writePlanSummary prints the plan in a few lines: the blast radius, the
// level, the gaps and the scenarios.
func writePlanSummary(out io.Writer, p *plan.Plan) {
	fmt.Fprintf(out, "%s %s\n", bold("plan:"), terminal.Escape(p.Radius.Summary))
	if p.EarlyExit != "" {
		fmt.Fprintf(out, "plan: %s\n", terminal.Escape(p.EarlyExit))
		return
	}
	gaps := map[string]int{}
	for _, r := range p.Coverage {
		if r.Gap != plan.GapNone {
			gaps[r.Gap]++
		}
	}
	var parts []string
	for _, g := range []string{plan.GapNoTest, plan.GapNoFault, plan.GapOracleWeak, plan.GapSmokeOnly} {
		if gaps[g] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", gaps[g], g))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "none")
	}
	them := "them"
	if len(p.Claims) == 1 {
		them = "it"
	}
	fmt.Fprintf(out, "plan: %s at risk, %s against %s; gaps: %s\n", count(len(p.Claims), "claim"), hypotheses(len(p.Hypotheses)), them, strings.Join(parts, ", "))
	fmt.Fprintf(out, "plan: %s\n", terminal.Escape(p.Level.Why))
	for _, s := range p.Scenarios {
		fmt.Fprintf(out, "  %s %s\n      %s %s; %s: %s\n", s.ID, terminal.Escape(s.Name), s.Lever, s.Gap, terminal.Escape(strings.Join(s.Closes, ", ")), terminal.Escape(s.Target))
	}
	for _, m := range p.MissingClaims {
		fmt.Fprintf(out, "  missing claim: %s: %s\n", terminal.Escape(m.Surface), terminal.Escape(m.Evidence))
	}
}
