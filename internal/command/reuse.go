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
	"github.com/contested/contested/internal/gate/verdict"
	"github.com/contested/contested/internal/registry"
	"github.com/contested/contested/internal/rundir"
	"github.com/contested/contested/internal/secret"
	"github.com/contested/contested/internal/terminal"
	"github.com/contested/contested/internal/touched"
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
	trust   *certify.Trust
	// paths says where the tests run and what they touch that is never an
	// input; logs is the private directory their test logs go to.
	paths touched.Paths
	logs  string
	// inputs digests the run-time records of the certificates on hand.
	inputs  *touched.Inputs
	pkgKey  map[string]string // import path → digest of everything its build stands on
	surfKey map[string]string // surface id → digest
	// surfPkgs are the packages declaring each surface's tests; dirs are
	// the packages' directories.
	surfPkgs map[string][]string
	dirs     map[string]string
	// files are each package's own source files and testdata (digest's
	// Files); source reads, from those files, what its tests could read
	// outside their log.
	files  map[string][]string
	source *touched.Source
	certs  *certify.Set
	pkgs   map[string]certify.Certificate // reused packages
	surfs  map[string]certify.Certificate // reused surfaces
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
// certificates someone this checkout trusts vouches for, and decides what
// the battery may skip. It never fails a run: when it cannot decide,
// everything runs and it says why.
func planReuse(ctx context.Context, opts ValidateOptions, ws *workspace, sharded bool, out io.Writer) *reuse {
	on, certifiable, why := reuseAllowed(opts, sharded)
	r := &reuse{rep: &ReuseReport{On: on, Why: why}, pkgs: map[string]certify.Certificate{}, surfs: map[string]certify.Certificate{}, changed: map[string]string{}}
	if !certifiable {
		return r
	}
	off := func(why string) *reuse {
		r.rep.On, r.rep.Why, r.certify = false, why, false
		fmt.Fprintf(out, "validate: reuse: %s; every package runs\n", terminal.Escape(why))
		return r
	}
	trust, err := reuseTrust(ws.reg, out)
	if err != nil {
		return off(err.Error())
	}
	r.trust = trust
	start := time.Now()
	mod, err := digest.Load(ctx, ws.env.ModuleRoot, digest.WithEnv(os.Environ()), digest.WithReads(readsOf(ws.reg)))
	r.rep.DigestTook = time.Since(start)
	if err != nil {
		return off("the inputs' digests could not be computed: " + err.Error())
	}
	for _, line := range absentReads(ws.env.ModuleRoot, ws.reg) {
		fmt.Fprintf(out, "validate: reuse: %s\n", terminal.Escape(line))
	}
	if r.logs, err = os.MkdirTemp("", "contested-testlogs-"); err != nil {
		return off("no directory for the tests' logs of what they touched: " + err.Error())
	}
	r.certify, r.module = true, mod.Path
	r.paths = touchedPaths(ws.env.ModuleRoot, ws.env.ResultsDir, mod.GoDirs)
	r.paths.Covered = []string{ws.env.Registry}
	r.inputs = touched.NewInputs(r.paths, os.LookupEnv)
	r.source = touched.NewSource()
	r.keys(mod, ws.reg, ws.env.Level)
	r.certs = readCertificates(ctx, ws.env.ResultsDir, ws.reg.Guard.CanonicalDatabases, trust, mod.Path, r.digests(), out)
	r.rep.Ignored = r.certs.Ignored
	r.decide(ws.reg, out)
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
	fmt.Fprintf(out, "validate: reuse: %d of %d packages and %d of %d surfaces reused from earlier certified runs (digests in %s); %d packages run\n",
		len(r.pkgs), len(r.all), len(r.surfs), len(ws.reg.Surfaces), r.rep.DigestTook.Round(10*time.Millisecond), r.rep.Ran)
	return r
}

// close removes the tests' logs.
func (r *reuse) close() {
	if r.logs != "" {
		os.RemoveAll(r.logs)
	}
}

// touchedPaths says where a module's tests run and which directories they
// touch that are never their inputs: the temporary directory, the results
// directory, the go command's directories, this tool's own store, and the
// kernel's.
func touchedPaths(root string, results rundir.Dir, goDirs []string) touched.Paths {
	ignore := append([]string{os.TempDir(), results.String(), "/proc", "/sys", "/dev"}, goDirs...)
	if d, err := os.UserCacheDir(); err == nil {
		ignore = append(ignore, filepath.Join(d, "contested"))
	}
	home, _ := os.UserHomeDir()
	return touched.Paths{Root: root, Home: home, Ignore: ignore}
}

// given are the variables a test binary gets from the runner, not from the
// user: the run's own (its id, its results directory, the layer's
// addresses), and the ones the runner sets per package or per machine
// (PWD, PATH with GOROOT/bin first, HOME), whose effects the record keeps
// as the files they lead to.
func given(env []string) []string {
	out := []string{"PWD", "OLDPWD", "PATH", "HOME"}
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); ok {
			out = append(out, k)
		}
	}
	return out
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
				out = append(out, fmt.Sprintf("%s:%d: [reuse] reads names %s for %s, which is not there now: its appearing runs the package; if it is a typo, correct the path", filepath.Base(reg.Path), r.Line, p, r.Pattern))
			}
		}
	}
	return out
}

// runInputs are the variables whose values can change a run's outcome
// beside the code: the level, the seeds, the battery's timeout, the noise
// and the fault layer's provider and images.
var runInputs = []string{envvar.Level, envvar.Seed, envvar.Seeds, envvar.TestTimeout, envvar.Noise, envvar.Layer,
	envvar.ToxiproxyURL, envvar.PostgresImage, envvar.ToxiproxyImage, envvar.PostgresBin, envvar.Surfaces, envvar.PostgresDSN}

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
		env = append(env, k+"="+secret.ForDigest(k, os.Getenv(k)))
	}
	run := digest.Sum(append([]string{"level", fmt.Sprint(level), string(gb)}, env...)...)
	entry := map[string]string{}
	for _, s := range reg.Surfaces {
		s.Line = 0
		b, _ := json.Marshal(s)
		entry[s.ID] = string(b)
	}
	r.pkgKey, r.surfKey, r.surfPkgs, r.dirs, r.files = map[string]string{}, map[string]string{}, map[string][]string{}, map[string]string{}, map[string][]string{}
	pkgSurfs := map[string][]string{}
	for _, p := range mod.Packages {
		r.all = append(r.all, p.ImportPath)
		r.dirs[p.ImportPath] = p.Dir
		r.files[p.ImportPath] = p.Files
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

// digests are the digests this run may reuse, for a store to read.
func (r *reuse) digests() []string {
	var out []string
	for _, d := range r.pkgKey {
		out = append(out, d)
	}
	for _, d := range r.surfKey {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

// decide reuses a package whose certificate's digest is its digest and
// whose tests' record of what they touched digests as it did then; a
// surface whose certificate's digest is its digest and whose packages'
// inputs are those of the packages reused. A surface never half runs: it
// is reused only when every one of its packages is, and a package only
// when every surface in it is. A surface with certificates, none of them
// for its inputs, has changed.
func (r *reuse) decide(reg *registry.Registry, out io.Writer) {
	for _, p := range r.all {
		for _, c := range r.certs.Candidates(certify.KindPackage, p, r.pkgKey[p]) {
			sum, err := r.inputs.Sum(*c.Touched)
			if err != nil {
				fmt.Fprintf(out, "validate: reuse: %s: %s; it runs\n", terminal.Escape(p), terminal.Escape(err.Error()))
				break
			}
			if sum == c.Inputs {
				r.pkgs[p] = c
				break
			}
		}
	}
	for _, s := range reg.Surfaces {
		pkgs := r.surfPkgs[s.ID]
		for _, c := range r.certs.Candidates(certify.KindSurface, s.ID, r.surfKey[s.ID]) {
			if len(pkgs) > 0 && len(c.Packages) == len(pkgs) && !slices.ContainsFunc(pkgs, func(p string) bool {
				pc, ok := r.pkgs[p]
				return !ok || c.Packages[p] != pc.Inputs
			}) {
				r.surfs[s.ID] = c
				break
			}
		}
		if _, ok := r.surfs[s.ID]; !ok {
			if c, ok := r.certs.Latest(certify.KindSurface, s.ID); ok {
				r.changed[s.ID] = fmt.Sprintf("its inputs changed since its certificate (run %s, %s)", c.RunID, c.At.Format(time.DateTime))
			}
			for _, p := range pkgs {
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
	return terminal.Escape(fmt.Sprintf("reused from run %s, %s, %s", from.RunID, commit, from.At.Local().Format(time.DateTime)))
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
		fmt.Fprintf(v.out, "\nvalidate: %s: %s\n", terminal.Escape(s.ID), terminal.Escape(say))
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
	if path, err := saveJSON(root, rundir.ValidateJSON, rep); err != nil {
		notSaved(v.out, "validate", path, err)
	} else {
		fmt.Fprintf(v.out, "validate: saved %s\n", path)
	}
	publishCI(v.env.ModuleRoot, rep.ciRun(), v.out)
	// The findings come before the verdict: the verdict line is the last
	// line a run prints, where a reader and a CI log end.
	v.writeFindings(nil)
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
