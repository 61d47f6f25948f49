package command

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fatih/color"

	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/digest"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/gate"
	"github.com/contested/contested/internal/gate/certify"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gate/flakes"
	"github.com/contested/contested/internal/gate/verdict"
	"github.com/contested/contested/internal/registry"
	"github.com/contested/contested/internal/terminal"
)

// ReuseReport is validate.json's account of reuse: whether it was on, why
// not when it was off, and what it reused from where.
type ReuseReport struct {
	// On says validate looked for results to reuse.
	On bool `json:"on"`
	// Why says why reuse was off, or what decided it.
	Why string `json:"why,omitempty"`
	// Packages and Surfaces are what was reused, each with the run it was
	// reused from.
	Packages []ReusedItem `json:"packages,omitempty"`
	Surfaces []ReusedItem `json:"surfaces,omitempty"`
	// Ran are the packages that ran, because their inputs changed or no
	// certificate covered them.
	Ran int `json:"ran"`
	// All says every package and surface was reused: no fault fired in
	// this run, and its verdict is the earlier runs'.
	All bool `json:"all,omitempty"`
	// Ignored are the certificates that did not verify, one line each.
	Ignored []string `json:"ignored_certificates,omitempty"`
	// Certified counts the certificates this run wrote.
	Certified int `json:"certified,omitempty"`
	// DigestTook is how long the input digests took.
	DigestTook time.Duration `json:"digest_ns,omitempty"`
}

// ReusedItem is one reused package or surface.
type ReusedItem struct {
	Name   string         `json:"name"`
	Reused battery.Reused `json:"reused"`
}

// reuse is validate's reuse for one run: the inputs' digests of every
// package and surface, the certificates on hand, and what they let it
// skip.
type reuse struct {
	rep *ReuseReport
	// certify says this run may write certificates: the whole battery,
	// not a shard, and digests that could be computed.
	certify bool
	module  string
	pkgKey  map[string]string // import path → digest of everything its outcome stands on
	surfKey map[string]string // surface id → digest
	// surfPkgs are the packages declaring each surface's tests.
	surfPkgs map[string][]string
	certs    *certify.Set
	pkgs     map[string]certify.Certificate // reused packages
	surfs    map[string]certify.Certificate // reused surfaces
	// changed are the surfaces whose certificate is for other inputs,
	// with why: they run deeper.
	changed map[string]string
	all     []string // every package of the module
}

// reuseAllowed says whether validate may reuse: not under -full, not
// under CI unless -reuse, only for the whole battery and never a shard.
// Certificates can still be written when reuse is off but the battery is
// whole (a CI run on main certifies what a pre-push reuses).
func reuseAllowed(opts ValidateOptions, sharded bool) (on, certifiable bool, why string) {
	certifiable = !sharded && wholeBattery(opts)
	switch {
	case sharded:
		return false, false, "a shard of the battery: every test of its share runs"
	case !wholeBattery(opts):
		return false, false, "a selected battery: every selected test runs"
	case opts.Full:
		return false, true, "-full: every package runs"
	case os.Getenv("CI") == "true" && !opts.Reuse:
		return false, true, "CI=true: every package runs (give -reuse to reuse under CI)"
	}
	return true, true, ""
}

// planReuse digests the module's packages and surfaces, reads the
// certificates, and decides what the battery may skip. It never fails a
// run: when it cannot decide, everything runs and it says why.
func planReuse(ctx context.Context, opts ValidateOptions, ws *workspace, sharded bool, out io.Writer) *reuse {
	on, certifiable, why := reuseAllowed(opts, sharded)
	r := &reuse{rep: &ReuseReport{On: on, Why: why}, pkgs: map[string]certify.Certificate{}, surfs: map[string]certify.Certificate{}, changed: map[string]string{}}
	if !certifiable {
		return r
	}
	start := time.Now()
	mod, err := digest.Load(ctx, ws.env.ModuleRoot, digest.WithEnv(os.Environ()), digest.WithReads(readsOf(ws.reg)))
	r.rep.DigestTook = time.Since(start)
	if err != nil {
		r.rep.On, r.rep.Why = false, "the inputs' digests could not be computed: "+err.Error()
		fmt.Fprintf(out, "validate: reuse: %s; every package runs\n", terminal.Escape(r.rep.Why))
		return r
	}
	for _, line := range absentReads(ws.env.ModuleRoot, ws.reg) {
		fmt.Fprintf(out, "validate: reuse: %s\n", terminal.Escape(line))
	}
	r.certify, r.module = true, mod.Path
	r.keys(mod, ws.reg, ws.env.Level)
	store, where, closeStore, err := certificateStore(ctx, ws.env.ResultsDir, ws.reg.Guard.CanonicalDatabases)
	if err != nil {
		fmt.Fprintf(out, "validate: reuse: the certificates: %v; every package runs\n", err)
		r.rep.On = false
		r.rep.Why = "the certificates could not be read"
		return r
	}
	defer closeStore()
	r.certs, err = store.Read(ctx, mod.Path)
	if err != nil {
		fmt.Fprintf(out, "validate: reuse: %s: %v\n", where, err)
	}
	for _, line := range r.certs.Ignored {
		fmt.Fprintf(out, "validate: %s\n", terminal.Escape(line))
	}
	r.rep.Ignored = r.certs.Ignored
	r.decide(ws.reg)
	if !on {
		fmt.Fprintf(out, "validate: reuse off (%s); digests of %d packages in %s\n", why, len(r.all), r.rep.DigestTook.Round(10*time.Millisecond))
		r.pkgs, r.surfs = map[string]certify.Certificate{}, map[string]certify.Certificate{}
		r.rep.Ran = len(r.all)
		return r
	}
	r.rep.Ran = len(r.all) - len(r.pkgs)
	for _, p := range sortedKeys(r.pkgs) {
		r.rep.Packages = append(r.rep.Packages, ReusedItem{Name: p, Reused: reusedFrom(r.pkgs[p])})
	}
	for _, s := range sortedKeys(r.surfs) {
		r.rep.Surfaces = append(r.rep.Surfaces, ReusedItem{Name: s, Reused: reusedFrom(r.surfs[s])})
	}
	r.rep.All = len(r.all) > 0 && len(r.pkgs) == len(r.all)
	fmt.Fprintf(out, "validate: reuse: %d of %d packages and %d of %d surfaces reused from earlier certified runs (%s; digests in %s); %d packages run\n",
		len(r.pkgs), len(r.all), len(r.surfs), len(ws.reg.Surfaces), where, r.rep.DigestTook.Round(10*time.Millisecond), r.rep.Ran)
	return r
}

// readsOf is [reuse] reads as digest.WithReads takes it: the paths every
// entry whose pattern matches a package's directory names.
func readsOf(reg *registry.Registry) func(dir string) []string {
	return func(dir string) []string {
		var out []string
		for _, r := range reg.Reuse.Reads {
			if r.Matches(dir) {
				out = append(out, r.Paths...)
			}
		}
		return out
	}
}

// absentReads says which paths [reuse] reads names are not there: most
// likely a typo, which would leave the files the tests read unwatched.
func absentReads(root string, reg *registry.Registry) []string {
	var out []string
	for _, r := range reg.Reuse.Reads {
		for _, p := range r.Paths {
			if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(p))); errors.Is(err, fs.ErrNotExist) {
				out = append(out, fmt.Sprintf("%s:%d: [reuse] reads names %s for %s, which is not there; correct the path, or remove it", filepath.Base(reg.Path), r.Line, p, r.Pattern))
			}
		}
	}
	return out
}

// certificateStore is where the certificates live: beside the flake
// history, in its database when CONTESTED_HISTORY_DSN is set.
func certificateStore(ctx context.Context, root string, canonical []string) (certify.Store, string, func(), error) {
	dsn := strings.TrimSpace(os.Getenv(envvar.HistoryDSN))
	if dsn == "" {
		return certify.NewFile(root), "certificates under " + certify.DirName, func() {}, nil
	}
	h, err := flakes.OpenPostgres(ctx, dsn, canonical)
	if err != nil {
		return nil, "", nil, err
	}
	p, err := certify.NewPostgres(ctx, h.Pool())
	if err != nil {
		h.Close()
		return nil, "", nil, err
	}
	return p, "certificates in the history database (" + envvar.HistoryDSN + ")", h.Close, nil
}

// runInputs are the variables whose values can change a run's outcome
// beside the code: the level, the seeds, the battery's timeout, the noise
// and the fault layer's provider and images.
var runInputs = []string{envvar.Level, envvar.Seed, envvar.Seeds, envvar.TestTimeout, envvar.Noise, envvar.Layer,
	envvar.ToxiproxyURL, envvar.PostgresImage, envvar.ToxiproxyImage, "CONTESTED_PG_DSN", "CONTESTED_PG_BIN", "CONTESTED_SURFACES"}

// keys computes every package's and surface's digest: the package's Go
// inputs (digest.Load) with the registry's global tables, the entries of
// the surfaces whose tests it declares, the level and the run's inputs;
// a surface's, its entry with the digests of the packages its tests are
// in.
func (r *reuse) keys(mod *digest.Module, reg *registry.Registry, level int) {
	global := *reg
	global.Surfaces, global.Path = nil, ""
	gb, _ := json.Marshal(global)
	var env []string
	for _, k := range runInputs {
		env = append(env, k+"="+os.Getenv(k))
	}
	run := digest.Sum(append([]string{"level", fmt.Sprint(level), string(gb)}, env...)...)
	entry := map[string]string{}
	for _, s := range reg.Surfaces {
		s.Line = 0
		b, _ := json.Marshal(s)
		entry[s.ID] = string(b)
	}
	r.pkgKey, r.surfKey, r.surfPkgs = map[string]string{}, map[string]string{}, map[string][]string{}
	pkgSurfs := map[string][]string{}
	for _, p := range mod.Packages {
		r.all = append(r.all, p.ImportPath)
		for _, t := range p.Tests {
			if s, ok := contract.SurfaceOf(reg, mod.Path, p.ImportPath, t); ok && !slices.Contains(pkgSurfs[p.ImportPath], s.ID) {
				pkgSurfs[p.ImportPath] = append(pkgSurfs[p.ImportPath], s.ID)
				r.surfPkgs[s.ID] = append(r.surfPkgs[s.ID], p.ImportPath)
			}
		}
		// A surface's test listed by subtest ("TestContracts/store") is
		// in the package declaring its top-level test.
		for _, s := range reg.Surfaces {
			for _, t := range s.Tests {
				top, _, _ := strings.Cut(t, "/")
				if slices.Contains(p.Tests, top) && !slices.Contains(pkgSurfs[p.ImportPath], s.ID) {
					pkgSurfs[p.ImportPath] = append(pkgSurfs[p.ImportPath], s.ID)
					r.surfPkgs[s.ID] = append(r.surfPkgs[s.ID], p.ImportPath)
				}
			}
		}
		parts := []string{"package", p.Digest, run}
		for _, id := range pkgSurfs[p.ImportPath] {
			parts = append(parts, id, entry[id])
		}
		r.pkgKey[p.ImportPath] = digest.Sum(parts...)
	}
	for _, s := range reg.Surfaces {
		parts := []string{"surface", entry[s.ID], run}
		for _, p := range r.surfPkgs[s.ID] {
			parts = append(parts, p, r.pkgKey[p])
		}
		r.surfKey[s.ID] = digest.Sum(parts...)
	}
}

// decide reuses a package whose certificate matches its digest when every
// surface whose tests it declares is reused too, and a surface whose
// certificate matches when all its packages are: a surface never half
// runs. A surface with certificates, none of them for its inputs, has
// changed.
func (r *reuse) decide(reg *registry.Registry) {
	for _, s := range reg.Surfaces {
		if c, ok := r.certs.Get(certify.KindSurface, s.ID, r.surfKey[s.ID]); ok && len(r.surfPkgs[s.ID]) > 0 {
			r.surfs[s.ID] = c
		} else if c, ok := r.certs.Latest(certify.KindSurface, s.ID); ok {
			r.changed[s.ID] = fmt.Sprintf("its inputs changed since its certificate (run %s, %s)", c.RunID, c.At.Format(time.DateTime))
		}
	}
	for _, p := range r.all {
		if c, ok := r.certs.Get(certify.KindPackage, p, r.pkgKey[p]); ok {
			r.pkgs[p] = c
		}
	}
	for _, s := range reg.Surfaces {
		for _, p := range r.surfPkgs[s.ID] {
			if _, ok := r.pkgs[p]; !ok {
				delete(r.surfs, s.ID)
			}
		}
	}
	for _, s := range reg.Surfaces {
		if _, ok := r.surfs[s.ID]; !ok {
			for _, p := range r.surfPkgs[s.ID] {
				delete(r.pkgs, p)
			}
		}
	}
}

// patterns are the packages the battery runs: all of them, as ./..., when
// nothing is reused.
func (r *reuse) patterns(given []string) []string {
	if len(r.pkgs) == 0 {
		return given
	}
	var run []string
	for _, p := range r.all {
		if _, ok := r.pkgs[p]; !ok {
			run = append(run, p)
		}
	}
	return run
}

func reusedFrom(c certify.Certificate) battery.Reused {
	return battery.Reused{RunID: c.RunID, Commit: c.Commit, Dirty: c.Dirty, At: c.At}
}

// evidence is the reused surfaces' faults, for the gate's phases 4 and 5.
func (r *reuse) evidence() []gate.ReusedEvidence {
	var out []gate.ReusedEvidence
	for _, id := range sortedKeys(r.surfs) {
		c := r.surfs[id]
		out = append(out, gate.ReusedEvidence{Surface: id, Class: c.Class, Fired: c.Fired, RunID: c.RunID})
	}
	return out
}

// verdicts are the reused surfaces' verdicts as their certificates hold
// them, each saying where it was reused from.
func (r *reuse) verdicts() []gate.SurfaceVerdict {
	var out []gate.SurfaceVerdict
	for _, id := range sortedKeys(r.surfs) {
		c := r.surfs[id]
		sv := gate.SurfaceVerdict{ID: id, Verdict: verdict.Contract(c.Verdict), Legs: []verdict.Leg{}}
		if c.Surface != nil {
			sv = *c.Surface
		}
		from := reusedFrom(c)
		sv.Reused = &from
		out = append(out, sv)
	}
	return out
}

// packages are the reused packages as battery entries.
func (r *reuse) packages() []battery.Package {
	var out []battery.Package
	for _, p := range sortedKeys(r.pkgs) {
		from := reusedFrom(r.pkgs[p])
		out = append(out, battery.Package{Name: p, Action: "pass", Reused: &from})
	}
	return out
}

// write certifies what this GREEN, certified run passed: each package
// that ran and passed, and each surface that ran GREEN.
func (r *reuse) write(ctx context.Context, root string, canonical []string, rep *ValidateReport, res *battery.Result, judged []*contract.Result, classes map[string]string, out io.Writer) {
	if !r.certify || !rep.Green || rep.Gate == nil || !rep.Gate.Certified || res == nil {
		return
	}
	at := time.Now().UTC()
	base := certify.Certificate{Module: r.module, RunID: rep.RunID, Commit: rep.Revision.Commit, Dirty: rep.Revision.Dirty, At: at}
	var certs []certify.Certificate
	tests := map[string]int{}
	for _, t := range res.Tests {
		tests[t.Package]++
	}
	for _, p := range res.Packages {
		key, ok := r.pkgKey[p.Name]
		if !ok || p.Reused != nil || (p.Action != "pass" && p.Action != "skip") {
			continue
		}
		c := base
		c.Kind, c.Key, c.Digest, c.Verdict, c.Tests = certify.KindPackage, p.Name, key, "PASS", tests[p.Name]
		certs = append(certs, c)
	}
	for _, j := range judged {
		key, ok := r.surfKey[j.Surface]
		if !ok || !certify.Certifiable(certify.KindSurface, string(j.Contract)) {
			continue
		}
		sv := j.Verdict()
		c := base
		c.Kind, c.Key, c.Digest, c.Verdict, c.Class, c.Surface = certify.KindSurface, j.Surface, key, string(j.Contract), classes[j.Surface], &sv
		for _, l := range sv.Legs {
			c.Armed += l.Armed
			c.Fired += l.Fired
		}
		certs = append(certs, c)
	}
	for i := range certs {
		sealed, err := certify.Sealed(certs[i])
		if err != nil {
			fmt.Fprintf(out, "validate: %s certificates: %v\n", color.RedString("NOT saved"), err)
			return
		}
		certs[i] = sealed
	}
	if len(certs) == 0 {
		return
	}
	store, where, closeStore, err := certificateStore(ctx, root, canonical)
	if err != nil {
		notSaved(out, "validate", "the certificates", err)
		return
	}
	defer closeStore()
	if err := store.Write(ctx, certs); err != nil {
		notSaved(out, "validate", where, err)
		return
	}
	r.rep.Certified = len(certs)
	var pkgs int
	for _, c := range certs {
		if c.Kind == certify.KindPackage {
			pkgs++
		}
	}
	fmt.Fprintf(out, "validate: certified %s and %s for reuse (%s)\n", count(pkgs, "package"), count(len(certs)-pkgs, "surface"), where)
}

// reusedLine says where a reused result came from, for the terminal.
func reusedLine(from battery.Reused) string {
	commit := from.Commit
	if len(commit) > 12 {
		commit = commit[:12]
	}
	if commit == "" {
		commit = "no commit"
	}
	if from.Dirty {
		commit += " (uncommitted changes)"
	}
	return fmt.Sprintf("reused from run %s, %s, %s", from.RunID, commit, from.At.Local().Format(time.DateTime))
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// verdictNote is what the verdict line adds when part of the run was
// reused: how much, so nobody takes it for a full run.
func (r *ReuseReport) verdictNote() string {
	if r == nil || len(r.Packages) == 0 && len(r.Surfaces) == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d packages and %d surfaces reused from earlier certified runs; -full runs them all)", len(r.Packages), len(r.Surfaces))
}

// writeReusedSummary prints the reused surfaces beside the ones that ran,
// each with the run it was reused from, and why a surface ran deeper.
func writeReusedSummary(out io.Writer, surfaces []gate.SurfaceVerdict, r *ReuseReport) {
	for _, s := range surfaces {
		switch {
		case s.Reused != nil:
			fmt.Fprintf(out, "  %-22s %s  %s\n", terminal.Escape(s.ID), paintContract(s.Verdict), reusedLine(*s.Reused))
		case s.Deeper != "":
			fmt.Fprintf(out, "  %-22s ran deeper: %s\n", terminal.Escape(s.ID), terminal.Escape(s.Deeper))
		}
	}
	if r != nil && !r.On && r.Why != "" {
		fmt.Fprintf(out, "  (reuse off: %s)\n", terminal.Escape(r.Why))
	}
}

// deeper runs each surface whose inputs changed since its certificate
// over more seeds than the battery's one: its budget's seeds of the tier
// [reuse] changed names (hardening by default), so a change can earn
// PASS-hardening before it is pushed. The deeper result replaces the
// battery's judgement of the surface. It returns why each ran deeper.
func (v *validation) deeper(ctx context.Context, judged []*contract.Result) map[string]string {
	why := map[string]string{}
	if !v.reuse.rep.On || len(v.reuse.changed) == 0 {
		return why
	}
	for i, j := range judged {
		reason, changed := v.reuse.changed[j.Surface]
		s, ok := v.reg.Surface(j.Surface)
		if !changed || !ok || j.Contract != "GREEN" {
			continue
		}
		n := v.reg.Reuse.Seeds(s)
		if n <= 1 {
			continue
		}
		level := max(v.env.Level, 1)
		seeds, err := contract.Seeds(n, s.LegsAt(level), level)
		if err != nil {
			fmt.Fprintf(v.out, "validate: %s: %v\n", s.ID, err)
			continue
		}
		say := fmt.Sprintf("%s, so it ran over the %s budget's %d seeds ([reuse] changed = %q)", reason, v.reg.Reuse.Changed, len(seeds), v.reg.Reuse.Changed)
		fmt.Fprintf(v.out, "\nvalidate: %s %s\n", terminal.Escape(s.ID), terminal.Escape(say))
		res, err := contract.Run(ctx, s, contract.Options{Env: v.env, Out: v.out, Binaries: v.binaries, Seeds: seeds, Capabilities: v.caps})
		if err != nil {
			fmt.Fprintf(v.out, "validate: %s: running it deeper: %v; its battery verdict stands\n", s.ID, err)
			continue
		}
		judged[i] = res
		why[s.ID] = say
	}
	return why
}

// finishReused ends a run that reused every package and surface: nothing
// ran, no fault fired, and the verdict is the earlier runs' and says so.
func (v *validation) finishReused(start time.Time) error {
	rep, root := v.rep, v.env.ResultsDir
	if err := v.clearEarlier(); err != nil {
		return err
	}
	rep.Surfaces = v.reuse.verdicts()
	rep.Battery = &battery.Result{Packages: v.reuse.packages(), Tests: []battery.Test{}}
	rep.Green = true
	rep.Took = time.Since(start)
	fmt.Fprintf(v.out, "\n%s (every one reused; no fault ran in this run)\n", bold("surfaces"))
	writeReusedSummary(v.out, rep.Surfaces, nil)
	if path, err := saveJSON(root, "validate.json", rep); err != nil {
		notSaved(v.out, "validate", path, err)
	} else {
		fmt.Fprintf(v.out, "validate: saved %s\n", path)
	}
	publishCI(v.env.ModuleRoot, rep.ciRun(), v.out)
	fmt.Fprintf(v.out, "\nvalidate: %s in %s, all reused: every package and surface matched a certificate of an earlier GREEN, certified run, so nothing ran and no fault fired now; this verdict is theirs (-full runs everything)\n",
		color.GreenString("GREEN"), rep.Took.Round(time.Second))
	return nil
}

// summary is the step summary's sentence on reuse; empty when nothing was
// reused.
func (r *ReuseReport) summary() string {
	if r == nil || len(r.Packages) == 0 && len(r.Surfaces) == 0 {
		return ""
	}
	if r.All {
		return fmt.Sprintf("Every package (%d) and surface (%d) was reused from earlier GREEN, certified runs: nothing ran and no fault fired in this run; this verdict is theirs.", len(r.Packages), len(r.Surfaces))
	}
	return fmt.Sprintf("Reused from earlier GREEN, certified runs: %d packages and %d surfaces (their faults are those runs' evidence); %d packages ran.", len(r.Packages), len(r.Surfaces), r.Ran)
}
