package command

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/findings"
	"github.com/contested/contested/internal/gate"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/plan"
	"github.com/contested/contested/internal/registry"
	"github.com/contested/contested/internal/terminal"
)

// runPlan is the plan validate -plan runs.
type runPlan struct {
	file string
	p    *plan.Plan
	// notes say what the plan changed about the run, or could not.
	notes []string
}

// loadPlan reads and checks the plan validate -plan names, before
// anything runs: a plan that cannot be read, that lacks an oracle or a
// budget, that is another module's, that names claims the registry no
// longer has or names nothing to run is bad input (exit 2). It sets the
// battery to the plan's packages, and the level to the plan's unless
// CONTESTED_LEVEL says otherwise.
func loadPlan(ws *workspace, opts *ValidateOptions, sharded bool) (*runPlan, error) {
	if opts.Plan == "" {
		return nil, nil
	}
	if sharded {
		return nil, fmt.Errorf("%w: -plan runs what one plan names on one machine; give it without -shard", ErrUsage)
	}
	p, err := plan.Read(opts.Plan)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if err := plan.Check(p); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrUsage, opts.Plan, err)
	}
	if mod, err := contract.ModulePath(ws.env.ModuleRoot); err == nil && mod != p.Module {
		return nil, fmt.Errorf("%w: %s is a plan of module %s, and this is %s: plan here with go tool mage plan", ErrUsage, opts.Plan, terminal.Escape(p.Module), mod)
	}
	for _, c := range p.Claims {
		s, ok := ws.reg.Surface(c.Surface)
		if !ok || !slices.ContainsFunc(s.Claims, func(rc registry.Claim) bool { return rc.ID == c.ID }) {
			return nil, fmt.Errorf("%w: %s names claim %s, which the registry does not have: the registry changed since the plan was made; plan again with go tool mage plan", ErrUsage, opts.Plan, terminal.Escape(c.Key))
		}
	}
	if p.EarlyExit != "" || len(p.Packages) == 0 {
		why := p.EarlyExit
		if why == "" {
			why = "it names no package"
		}
		return nil, fmt.Errorf("%w: %s names nothing to run: %s Plain validate runs the registry's surfaces", ErrUsage, opts.Plan, terminal.Escape(why))
	}
	for _, pat := range p.Packages {
		if !modulePattern(pat) {
			return nil, fmt.Errorf("%w: %s names package %q, which is no package pattern of this module (\".\" or \"./dir\"); plan again with go tool mage plan", ErrUsage, opts.Plan, terminal.Escape(pat))
		}
	}
	rp := &runPlan{file: opts.Plan, p: p}
	opts.Patterns = slices.Clone(p.Packages)
	switch set := strings.TrimSpace(os.Getenv(envvar.Level)); {
	case p.Level.Level < 1 || p.Level.Level > 3:
		rp.notes = append(rp.notes, fmt.Sprintf("the plan's level %d is no level; the run keeps level %d", p.Level.Level, ws.env.Level))
	case set == "":
		ws.env.Level = p.Level.Level
		rp.notes = append(rp.notes, fmt.Sprintf("level %d, the plan's", p.Level.Level))
	case ws.env.Level != p.Level.Level:
		rp.notes = append(rp.notes, fmt.Sprintf("level %d from %s, not the plan's %d: the plan's coverage counted the legs of level %d", ws.env.Level, envvar.Level, p.Level.Level, p.Level.Level))
	}
	if p.Edited() {
		rp.notes = append(rp.notes, "the plan was edited since plan wrote it: its sha256 no longer matches, and the skeletons it made name the old one")
	}
	return rp, nil
}

// modulePattern reports whether pat is a package pattern inside the
// module: "." or "./dir", with no "..", no flag and nothing a shell or
// go test would read as more than a path.
func modulePattern(pat string) bool {
	if pat == "." {
		return true
	}
	rest, ok := strings.CutPrefix(pat, "./")
	return ok && rest != "" && path.Clean(rest) == rest && rest != ".." && !strings.HasPrefix(rest, "../") &&
		!strings.ContainsAny(rest, " \t\n\\*?[") && !strings.Contains(rest, "...")
}

// say prints what the plan makes the run do.
func (r *runPlan) say(out io.Writer) {
	if r == nil {
		return
	}
	fmt.Fprintf(out, "validate: plan %s (%s, sha256 %s): the packages %s; then each surface at risk (%s) over its hardening seeds\n",
		terminal.Escape(r.file), r.p.Change.Mode, short(r.p.SHA256), terminal.Escape(strings.Join(r.p.Packages, " ")), terminal.Escape(strings.Join(r.p.Surfaces(), ", ")))
	for _, n := range r.notes {
		fmt.Fprintf(out, "validate: plan: %s\n", terminal.Escape(n))
	}
}

// harden runs each surface the plan puts at risk over its hardening
// budget's seeds when the battery found it GREEN (as mage contested runs
// it), so the findings can say whether the change earned PASS-hardening.
// The deeper result replaces the battery's judgement of the surface, and
// its seeds join the flake history, where the next plan sees them.
func (v *validation) harden(ctx context.Context, judged []*contract.Result, verified *gate.Report) {
	if v.plan == nil {
		return
	}
	level := max(v.env.Level, 1)
	why := map[string]string{}
	for i, j := range judged {
		s, ok := v.reg.Surface(j.Surface)
		if !ok || !slices.Contains(v.plan.p.Surfaces(), s.ID) || j.Contract != "GREEN" || s.Budget.Hardening.Seeds <= 1 {
			continue
		}
		seeds, err := contract.Seeds(s.Budget.Hardening.Seeds, s.LegsAt(level), level)
		if err != nil {
			fmt.Fprintf(v.out, "validate: %s: %v\n", s.ID, err)
			continue
		}
		say := fmt.Sprintf("the plan puts it at risk, so it ran over its hardening budget's %d seeds", len(seeds))
		fmt.Fprintf(v.out, "\nvalidate: %s: %s\n", terminal.Escape(s.ID), say)
		res, err := contract.Run(ctx, s, contract.Options{Env: v.env, Out: v.out, Binaries: v.binaries, Seeds: seeds, Capabilities: v.caps})
		if err != nil {
			fmt.Fprintf(v.out, "validate: %s: running it over its hardening seeds: %v; its battery verdict stands\n", s.ID, err)
			continue
		}
		judged[i] = res
		why[s.ID] = say
		appendRuns(context.WithoutCancel(ctx), v.env.ResultsDir, v.reg.Guard.CanonicalDatabases, "validate", v.rep.RunID, res.Seeds, v.rep.Revision, v.out)
	}
	if len(why) == 0 {
		return
	}
	fresh := map[string]gate.SurfaceVerdict{}
	for _, sv := range contract.Verdicts(judged) {
		fresh[sv.ID] = sv
	}
	for i, sv := range v.rep.Surfaces {
		if say, ok := why[sv.ID]; ok {
			nv := fresh[sv.ID]
			nv.Deeper = say
			v.rep.Surfaces[i] = nv
		}
	}
	verified.Surfaces = v.rep.Surfaces
	if err := verified.Save(); err != nil {
		fmt.Fprintf(v.out, "validate: the gate's report with the hardened surfaces: %v\n", err)
	}
}

// writeFindings writes findings.md and findings.json beside validate.json
// and prints their headline. res is the battery, nil when nothing ran.
func (v *validation) writeFindings(res *battery.Result) {
	in := findings.Input{Registry: v.reg, RunID: v.rep.RunID, Revision: v.rep.Revision, Level: max(v.env.Level, 1), Whole: v.whole,
		Surfaces: v.rep.Surfaces, Failures: v.rep.BatteryFailures, Green: v.rep.Green, Reasons: v.rep.Reasons,
		History: readHistory(context.Background(), v.env.ResultsDir, v.reg.Guard.CanonicalDatabases, io.Discard)}
	if res != nil {
		in.Tests = res.Tests
	}
	if v.plan != nil {
		in.Plan, in.PlanFile = v.plan.p, v.plan.file
	}
	f := findings.Build(in)
	var md bytes.Buffer
	if err := findings.WriteMarkdown(&md, f); err != nil {
		fmt.Fprintf(v.out, "findings: %v\n", err)
		return
	}
	js, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		fmt.Fprintf(v.out, "findings: %v\n", err)
		return
	}
	fmt.Fprintf(v.out, "\n%s %s\n", bold("findings:"), terminal.Escape(f.Summary))
	var saved []string
	for _, a := range []struct {
		name string
		data []byte
	}{{findings.MarkdownName, md.Bytes()}, {findings.JSONName, append(js, '\n')}} {
		path, err := saveArtifact(v.env.ResultsDir, a.name, a.data)
		if err != nil {
			notSaved(v.out, "findings", path, err)
			continue
		}
		saved = append(saved, path)
	}
	if len(saved) > 0 {
		fmt.Fprintf(v.out, "findings: saved %s\n", strings.Join(saved, ", "))
	}
}

// short clips a digest for a line.
func short(sum string) string {
	if len(sum) > 12 {
		return sum[:12]
	}
	return sum
}
