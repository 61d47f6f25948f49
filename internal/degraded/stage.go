package degraded

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/faultlayer"
	"github.com/contested/contested/internal/faultlayer/levers"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/registry"
	"github.com/contested/contested/internal/secret"
)

// Class is the recording class of the stage's fault records.
const Class = "ux"

// DefaultTest is the test name the stage's records carry when no surface
// of class ux is registered.
const DefaultTest = "TestDegradedStage"

// browserSlack is what the bound allows the browser itself (navigation,
// rendering) beyond the front's promise of an answer within timeout + 1s.
const browserSlack = 500 * time.Millisecond

// settleWait is how long a cell waits for a pending transfer to be
// settled by the front once the backend is back.
const settleWait = 5 * time.Second

// tabTimeout bounds one cell's tab.
const tabTimeout = 45 * time.Second

// victimHolder prefixes the run id as the holder of the front's database
// in the harness table, so a later stage knows a killed stage's database.
const victimHolder = "degraded-"

// Options configure Run.
type Options struct {
	// Layer is the fault layer the stage runs on; the caller brought it up
	// and ran the required preflight, and holds the stage lock (Hold).
	Layer *faultlayer.Layer
	// Registry gives the front ([degraded]), the surface of class ux the
	// records belong to and the guard's canonical databases.
	Registry *registry.Registry
	// ModuleRoot is where the front is built; ResultsDir the results root.
	ModuleRoot string
	ResultsDir string
	RunID      string
	// Cells selects cells by flow/condition pattern (Select); none runs
	// the whole matrix.
	Cells []string
	// Keep saves a screenshot of every cell, not only of failing ones.
	Keep bool
	// Tags are build tags for the front (the planted defects' tests).
	Tags string
	// Browser is the Chromium to drive ("" finds one: FindBrowser).
	Browser string
	// Seed decides the plan (amounts, latencies: see Plan); 0 draws one,
	// which the stage prints with its replay.
	Seed int64
	// Out receives progress lines; nil discards them.
	Out io.Writer
}

// CellResult is one cell's outcome.
type CellResult struct {
	Cell      string `json:"cell"`
	Flow      string `json:"flow"`
	Condition string `json:"condition"`
	Leg       string `json:"leg"`
	Passed    bool   `json:"passed"`
	// Fired: the injector read the fault back in place and the user saw it.
	Fired    bool     `json:"fired"`
	Problems []string `json:"problems,omitempty"`
	Injector string   `json:"injector"`
	Victim   string   `json:"victim"`
	// Views are the pages the user saw, in order.
	Views []View `json:"views"`
	// Database is what the database held afterwards.
	Database string `json:"database,omitempty"`
	// Screenshot is the screenshot's path relative to the results
	// directory ("" when none was kept).
	Screenshot string `json:"screenshot,omitempty"`
	Record     string `json:"record,omitempty"`
	// ArmedAt is when the condition was armed; LandedAt when the user's
	// page under it answered (zero when it did not).
	ArmedAt  time.Time `json:"armed_at"`
	LandedAt time.Time `json:"landed_at,omitzero"`
}

// Result is a stage's outcome.
type Result struct {
	RunID    string       `json:"run_id"`
	Front    string       `json:"front"`
	Timeout  string       `json:"timeout"`
	Bound    string       `json:"bound"`
	Seed     int64        `json:"seed"`
	Schedule string       `json:"schedule"` // the plan's digest
	Cells    []CellResult `json:"cells"`
	Duration string       `json:"duration"`
}

// Failed returns the cells that failed.
func (r Result) Failed() []CellResult {
	var out []CellResult
	for _, c := range r.Cells {
		if !c.Passed {
			out = append(out, c)
		}
	}
	return out
}

// Run runs the stage: it builds and sets up the front, creates the standing
// proxy in front of the layer's Postgres, starts the front through it,
// runs the selected cells in a headless Chromium, writes one fault record
// per cell and cells.json, and restores the base shape. The error is
// about the stage itself (it could not run); failing cells are in Result.
func Run(ctx context.Context, opts Options) (res Result, err error) {
	start := time.Now()
	out := opts.Out
	if out == nil {
		out = io.Discard
	}
	cells, err := Select(opts.Cells)
	if err != nil {
		return res, err
	}
	browserPath, err := FindBrowser(opts.Browser)
	if err != nil {
		return res, err
	}
	cfg := opts.Registry.Degraded
	if cfg.Build == "" {
		cfg = registry.DefaultDegraded()
	}
	res = Result{RunID: opts.RunID, Front: cfg.Build, Timeout: cfg.Timeout.String(), Bound: (cfg.Timeout + time.Second + browserSlack).String()}
	lay := opts.Layer
	dir := filepath.Join(opts.ResultsDir, DirName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, fmt.Errorf("make %s: %w", dir, err)
	}
	clearOld(dir)
	rec, surface, test, err := recorder(opts)
	if err != nil {
		return res, err
	}
	tmp, err := os.MkdirTemp("", "contested-degraded-*")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(tmp)

	bin, err := buildFront(ctx, opts.ModuleRoot, tmp, cfg, opts.Tags, out)
	if err != nil {
		return res, err
	}
	armer, err := levers.NewPgFaultArmer(ctx, lay.DB(), opts.Registry.Guard.CanonicalDatabases)
	if err != nil {
		return res, fmt.Errorf("%w: %v", faultlayer.ErrCannotRun, err)
	}
	// The stage lock makes this the only stage: a victim another stage
	// holds is one a killed stage left behind.
	holder := victimHolder + opts.RunID
	if gone, err := armer.DropVictimsHeldBy(ctx, func(h string) bool { return strings.HasPrefix(h, victimHolder) && h != holder }); len(gone) > 0 || err != nil {
		fmt.Fprintf(out, "degraded: dropped %d database(s) a killed stage left: %s", len(gone), strings.Join(gone, ", "))
		if err != nil {
			fmt.Fprintf(out, " (not all: %v)", err)
		}
		fmt.Fprintln(out)
	}
	victim, err := armer.CreateVictim(ctx, holder)
	if err != nil {
		return res, fmt.Errorf("%w: create the front's database: %v", faultlayer.ErrCannotRun, err)
	}
	defer func() {
		if derr := armer.DropVictim(context.WithoutCancel(ctx), victim); derr != nil {
			fmt.Fprintf(out, "degraded: drop the front's database %s: %v\n", victim.Database(), derr)
		}
	}()
	pgAddr, err := lay.PostgresAddr()
	if err != nil {
		return res, err
	}
	directDSN := victim.DSN(pgAddr)
	if err := setupFront(ctx, bin, cfg, directDSN); err != nil {
		return res, err
	}
	direct, err := pgxpool.New(ctx, directDSN)
	if err != nil {
		return res, fmt.Errorf("open the front's database: %s", secret.ScrubString(err.Error()))
	}
	defer direct.Close()

	// The overlay: a leased port, the marker, the standing proxy, the front.
	lease, err := lay.Leases().Acquire(ctx, "degraded-"+opts.RunID)
	if err != nil {
		return res, fmt.Errorf("%w: lease a proxy port: %v", faultlayer.ErrCannotRun, err)
	}
	stopKeep := lay.Leases().Keep(context.WithoutCancel(ctx), lease)
	port, _ := lay.Port(lease.Port)
	name := fmt.Sprintf("contested-degraded-%d", lease.Port)
	marker := Marker{RunID: opts.RunID, Started: time.Now().UTC(), StagePID: os.Getpid(), ToxiproxyURL: lay.ToxiproxyURL, Proxies: []string{name}}
	if err := writeMarker(opts.ResultsDir, marker); err != nil {
		stopKeep()
		lay.Leases().Release(context.WithoutCancel(ctx), lease)
		return res, err
	}
	var fr *front
	defer func() {
		tctx := context.WithoutCancel(ctx)
		fr.stop()
		derr := deleteProxy(lay.Toxiproxy(), name)
		stopKeep()
		if _, rerr := lay.Leases().Release(tctx, lease); rerr != nil {
			fmt.Fprintf(out, "degraded: release port %d: %v (its lease expires on its own)\n", lease.Port, rerr)
		}
		if derr != nil {
			fmt.Fprintf(out, "degraded: %v: the marker stays; %s\n", fmt.Errorf("%w: delete proxy %s: %v", ErrRestore, name, derr), escape(opts.ResultsDir, marker))
			return
		}
		if cerr := clearMarker(opts.ResultsDir); cerr != nil && err == nil {
			err = cerr
		}
	}()
	tp := lay.Toxiproxy()
	proxy, err := tp.CreateProxy(name, port.Listen, lay.PostgresUpstream)
	if err != nil {
		return res, fmt.Errorf("%w: create proxy %s on %s: %v", faultlayer.ErrCannotRun, name, port.Listen, err)
	}
	const appName = "contested-degraded-front"
	frontDSN := withParam(victim.DSN(port.Dial), "application_name", appName)
	slowest, err := measureFront(ctx, bin, cfg, frontDSN, filepath.Join(dir, "front.log"))
	if err != nil {
		return res, err
	}
	if t := frontTimeout(cfg.Timeout, slowest); t != cfg.Timeout {
		fmt.Fprintf(out, "degraded: a healthy page took up to %s on this machine: the front runs with a timeout of %s instead of the registry's %s, so that a healthy backend never reads as slow\n",
			slowest.Round(time.Millisecond), t.Round(time.Millisecond), cfg.Timeout)
		cfg.Timeout = t.Round(time.Millisecond)
		res.Timeout, res.Bound = cfg.Timeout.String(), (cfg.Timeout + time.Second + browserSlack).String()
	}
	if fr, err = startFront(ctx, bin, cfg, frontDSN, filepath.Join(dir, "front.log")); err != nil {
		return res, err
	}
	marker.FrontPID, marker.FrontExe = fr.cmd.Process.Pid, bin
	if err := writeMarker(opts.ResultsDir, marker); err != nil {
		return res, err
	}
	fmt.Fprintf(out, "degraded: front %s serves %s; its database goes through proxy %s (%s)\n", cfg.Build, fr.url, name, port.Dial)

	b, err := startBrowser(ctx, browserPath, filepath.Join(tmp, "chromium"))
	if err != nil {
		return res, fmt.Errorf("%w: %v", ErrNoBrowser, err)
	}
	defer b.close()

	r := &runner{
		cfg: cfg, front: fr, browser: b, direct: direct, dir: dir, results: opts.ResultsDir, keep: opts.Keep,
		bound: cfg.Timeout + time.Second + browserSlack,
		t:     &target{tp: tp, proxy: proxy, armer: armer, directDSN: directDSN, admin: lay.DB(), database: victim.Database(), appName: appName, timeout: cfg.Timeout},
	}
	seed := opts.Seed
	if seed == 0 {
		seed = 1 + rand.Int64N(1<<53-1)
	}
	plan := newPlan(seed, cells, cfg.Timeout)
	res.Seed, res.Schedule = seed, plan.Digest
	fmt.Fprintf(out, "degraded: seed %d, plan %s (replay: CONTESTED_SEED=%d go tool mage degraded)\n", seed, plan.Digest, seed)
	for i, c := range cells {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		r.t.latency = plan.Latency(c)
		if !fr.alive() {
			return res, fmt.Errorf("the web front exited mid-matrix (%v); its log: %s", fr.err, filepath.Join(dir, "front.log"))
		}
		cr := r.run(ctx, c, plan.Amount(c))
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		// A cell whose precondition never held armed nothing: it fails,
		// and writes no fault record.
		if !cr.ArmedAt.IsZero() {
			cr.Record, err = writeRecord(rec, surface, test, c, cr, plan, i+1)
			if err != nil {
				return res, err
			}
		}
		res.Cells = append(res.Cells, cr)
		mark := "PASS"
		if !cr.Passed {
			mark = "FAIL"
		}
		fmt.Fprintf(out, "degraded: %-4s %-28s fired=%v  %s\n", mark, cr.Cell, cr.Fired, cr.Victim)
		for _, p := range cr.Problems {
			fmt.Fprintf(out, "degraded:        - %s\n", p)
		}
	}
	res.Duration = time.Since(start).Round(time.Millisecond).String()
	root, err := atomicfile.MakeRoot(opts.ResultsDir)
	if err != nil {
		return res, err
	}
	return res, root.WriteJSON(DirName+"/cells.json", res)
}

// clearOld removes the screenshots and cells.json of an earlier stage.
func clearOld(dir string) {
	old, _ := filepath.Glob(filepath.Join(dir, "cell-*.png"))
	for _, f := range append(old, filepath.Join(dir, "cells.json")) {
		_ = os.Remove(f)
	}
}

// withParam adds a query parameter to a URL DSN.
func withParam(dsn, key, value string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return dsn
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// recorder is the stage's fault recorder, the surface its records belong
// to and their test name: the registry's surface of class ux, when one is
// registered, and its first test.
func recorder(opts Options) (*faultrecord.Recorder, registry.Surface, string, error) {
	s := registry.Surface{ID: "degraded", Class: Class}
	for _, rs := range opts.Registry.Surfaces {
		if rs.Class == Class {
			s = rs
			break
		}
	}
	test := DefaultTest
	if len(s.Tests) > 0 {
		test = s.Tests[0]
	}
	pkg, _ := contract.ModulePath(opts.ModuleRoot) // "" without one
	if rel := strings.TrimPrefix(s.Package, "./"); s.Package != "" && strings.HasPrefix(s.Package, ".") && rel != "." {
		pkg += "/" + rel
	} else if s.Package != "" && !strings.HasPrefix(s.Package, ".") {
		pkg = s.Package
	}
	rec, err := faultrecord.NewRecorder(pkg, faultrecord.WithResultsDir(opts.ResultsDir), faultrecord.WithRunID(opts.RunID), faultrecord.WithModuleRoot(opts.ModuleRoot))
	return rec, s, test, err
}

// writeRecord writes the cell's fault record.
func writeRecord(rec *faultrecord.Recorder, s registry.Surface, test string, c Cell, cr CellResult, plan Plan, window int) (string, error) {
	oracle := func(name string, problems []string) faultrecord.OracleRun {
		o := faultrecord.OracleRun{Name: name, OpsProduced: 1, OpsChecked: 1, Result: "held"}
		if len(problems) > 0 {
			o.Result, o.Detail = "violated", strings.Join(problems, "; ")
		}
		return o
	}
	var sees, db []string
	for _, p := range cr.Problems {
		if strings.HasPrefix(p, "database: ") {
			db = append(db, p)
		} else {
			sees = append(sees, p)
		}
	}
	armedAt := cr.ArmedAt
	if armedAt.IsZero() {
		armedAt = time.Now()
	}
	r := faultrecord.Record{
		Test: test + "/" + c.Flow + "/" + c.Condition.Lever, Surface: s.ID, Class: Class, Leg: c.Condition.Lever,
		Seed: plan.Seed, Replay: fmt.Sprintf("CONTESTED_SEED=%d go tool mage degraded -cells=%s", plan.Seed, c.ID()), Armed: true, ArmedAt: armedAt,
		Schedule: &faultrecord.Schedule{Digest: plan.Digest, Summary: plan.Summary, Window: window, Timing: "test"},
		Fired:    cr.Fired, FiredAt: cr.LandedAt,
		Evidence:   faultrecord.Evidence{Injector: cr.Injector, Victim: cr.Victim},
		Oracles:    []faultrecord.OracleRun{oracle("user-sees", sees), oracle("exactly-once", db)},
		TestFailed: !cr.Passed,
	}
	p, err := rec.Write(r)
	if err != nil {
		return "", fmt.Errorf("write the record of cell %s: %w", c.ID(), err)
	}
	return p, nil
}

// runner runs cells.
type runner struct {
	cfg     registry.Degraded
	front   *front
	browser *browser
	direct  *pgxpool.Pool
	t       *target
	dir     string
	results string
	keep    bool
	bound   time.Duration
	// baseline is what the cell's healthy page took before its fault: how
	// slowly this machine answers a page now, when nothing is wrong.
	baseline time.Duration
}

// run runs one cell: amount is its transfer's amount, distinct per cell.
func (r *runner) run(ctx context.Context, c Cell, amount int64) CellResult {
	cr := CellResult{Cell: c.ID(), Flow: c.Flow, Condition: c.Condition.Name, Leg: c.Condition.Lever}
	var problems []string
	tab, cancel, err := r.browser.tab(tabTimeout)
	if err != nil {
		cr.Problems = []string{err.Error()}
		return cr
	}
	defer cancel()
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	from, to := r.cfg.Accounts[0], r.cfg.Accounts[1]
	landed := false
	var key string
	var before int64

	// The precondition: a healthy page, waited for (a busy machine may
	// answer one slowly for a while); the fault is armed only once it holds,
	// and how long that page took is the cell's baseline for the browser's
	// share of the bound.
	v, tries := r.healthy(tab)
	cr.Views = append(cr.Views, v)
	if !v.healthy() {
		fail("the page was not healthy before the fault within %s (%d tries, the last %s, form key %q): the cell did not arm its fault", healthyWait, tries, v, v.FormKey)
		return r.finish(tab, cr, problems, false)
	}
	r.baseline, r.bound = v.Elapsed, cellBound(r.cfg.Timeout, v.Elapsed)
	if c.Flow != FlowLoad {
		key = v.FormKey
		if before, err = r.balance(ctx, from); err != nil {
			fail("database: read the balance of %s before: %v", from, err)
			return r.finish(tab, cr, problems, false)
		}
	}

	cr.ArmedAt = time.Now()
	a, err := r.t.arm(ctx, c.Condition)
	healed := false
	heal := func() {
		if a != nil && !healed {
			healed = true
			if herr := a.heal(context.WithoutCancel(ctx)); herr != nil {
				fail("heal %s: %v", c.Condition.Name, herr)
			}
		}
	}
	defer heal()
	if a != nil {
		cr.Injector = a.what
	}
	if err != nil {
		fail("arm %s: %v", c.Condition.Name, err)
		heal()
		return r.finish(tab, cr, problems, false)
	}

	var first View
	if c.Flow == FlowLoad {
		first = navigate(tab, r.front.url+"/")
	} else {
		first = submit(tab, from, to, amount)
	}
	cr.Views = append(cr.Views, first)
	landedAt := time.Now()
	heal()
	problems = append(problems, r.answered(first)...)
	switch c.Flow {
	case FlowLoad:
		landed = first.Status >= 500 || (first.Banner != "" && first.Banner != "ok")
		switch {
		case first.Err != "" || first.Status >= 500:
		case first.Banner == "":
			fail("no #banner on the page: the user is not told the backend failed")
		case !slices.Contains(c.Condition.Banners, first.Banner):
			fail("banner %q, want %s under %s", first.Banner, strings.Join(c.Condition.Banners, " or "), c.Condition.Name)
		}
		if first.Banner != "ok" && first.Rows > 0 {
			fail("%d balance rows shown while the backend failed: figures the page could not have read", first.Rows)
		}
	default:
		landed = first.Status >= 500 || (first.Outcome != "" && first.Outcome != "confirmed")
		problems = append(problems, r.outcome(first, key)...)
	}
	if !landed && first.Err == "" {
		fail("the fault did not reach the user (%s): the cell proves nothing", first)
	}

	final := first
	if c.Flow == FlowReload {
		time.Sleep(r.cfg.Timeout / 2)
		again := repost(tab, r.front.url, key, from, to, amount)
		cr.Views = append(cr.Views, again)
		problems = append(problems, r.answered(again)...)
		problems = append(problems, r.outcome(again, key)...)
		if again.Err == "" && again.Outcome != "confirmed" {
			fail("the reload after the backend came back answered %q, want confirmed: the user is left without a decision", again.Outcome)
		}
		final = again
	}
	if c.Flow != FlowLoad {
		pending := first.Outcome == "pending" || final.Outcome == "pending"
		db, dbProblems := r.exactlyOnce(ctx, key, from, before, amount, final.Outcome, pending)
		cr.Database = db
		problems = append(problems, dbProblems...)
	}
	fired := a.in && landed
	if landed {
		cr.LandedAt = landedAt
	}
	victim := first.String()
	if c.Flow == FlowReload {
		victim += "; reload: " + final.String()
	}
	cr.Victim = victim
	return r.finish(tab, cr, problems, fired)
}

// healthyWait bounds how long a cell waits for a healthy page before its
// fault: well inside tabTimeout, so the cell still has its time after it.
const healthyWait = 20 * time.Second

// healthy loads the front's page until it is healthy (healthyWait at
// most) and returns the last view and how many it took.
func (r *runner) healthy(tab context.Context) (View, int) {
	deadline := time.Now().Add(healthyWait)
	for tries := 1; ; tries++ {
		v := navigate(tab, r.front.url+"/")
		if v.healthy() || time.Now().After(deadline) || tab.Err() != nil {
			return v, tries
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// cellBound is a cell's bound on an answer: the front's promise (its
// timeout and a second) and what the browser takes beyond it, at least
// browserSlack and at least what a healthy page took just before the
// fault (baseline): a busy machine slows the browser and the front alike,
// but not the timeout the front promises to keep.
func cellBound(timeout, baseline time.Duration) time.Duration {
	return timeout + time.Second + max(browserSlack, baseline)
}

// finish records the verdict and keeps a screenshot of a failing cell (of
// every cell with Keep).
func (r *runner) finish(tab context.Context, cr CellResult, problems []string, fired bool) CellResult {
	cr.Problems, cr.Fired = problems, fired
	cr.Passed = len(problems) == 0 && fired
	if cr.Victim == "" && len(cr.Views) > 0 {
		cr.Victim = cr.Views[len(cr.Views)-1].String()
	}
	if !fired && len(problems) == 0 {
		cr.Problems = append(cr.Problems, "the fault did not fire")
	}
	if cr.Passed && !r.keep {
		return cr
	}
	png, err := screenshot(tab)
	if err != nil {
		cr.Problems = append(cr.Problems, "screenshot: "+err.Error())
		cr.Passed = false
		return cr
	}
	rel := DirName + "/cell-" + cr.Flow + "-" + cr.Condition + ".png"
	root, err := atomicfile.MakeRoot(r.results)
	if err == nil {
		err = root.Write(rel, png)
	}
	if err != nil {
		cr.Problems = append(cr.Problems, "save screenshot: "+err.Error())
		cr.Passed = false
		return cr
	}
	cr.Screenshot = rel
	return cr
}

// answered checks what holds for every answer: one came, not a 5xx page,
// within the bound. The one 5xx a front may answer is the 503 of a
// submission it refused as certainly not applied: a page whose #outcome
// says refused (outcome checks its key, and exactlyOnce that the database
// holds nothing of it). A 53300 at connect under pool exhaustion is such a
// refusal, as a connection dropped after the send is a pending 202.
func (r *runner) answered(v View) []string {
	var p []string
	switch {
	case v.Err != "":
		p = append(p, "no answer the user could read: "+v.Err)
	case v.Status == 0:
		p = append(p, "no HTTP response for the page")
	case v.Status == 503 && v.Outcome == "refused":
	case v.Status >= 500:
		p = append(p, fmt.Sprintf("HTTP %d: the user sees an error page (%.80s)", v.Status, v.Text))
	}
	if v.Elapsed > r.bound {
		p = append(p, fmt.Sprintf("answered in %s, above the bound %s (timeout %s + 1s + %s for the browser, what a healthy page took before the fault, at least %s)",
			v.Elapsed.Round(time.Millisecond), r.bound.Round(time.Millisecond), r.cfg.Timeout, (r.bound-r.cfg.Timeout-time.Second).Round(time.Millisecond), browserSlack))
	}
	return p
}

// outcome checks an answer to a submitted transfer: an outcome element for
// the form's key, with the status the outcome promises.
func (r *runner) outcome(v View, key string) []string {
	if v.Err != "" || v.Status >= 500 {
		return nil
	}
	var p []string
	want := map[string][]int64{"confirmed": {200}, "pending": {202}, "refused": {422, 503}}
	codes, ok := want[v.Outcome]
	switch {
	case v.Outcome == "":
		p = append(p, "no #outcome on the answer page: the user cannot tell what happened to the transfer")
	case !ok:
		p = append(p, fmt.Sprintf("outcome %q is none of confirmed, refused, pending", v.Outcome))
	case !slices.Contains(codes, v.Status):
		p = append(p, fmt.Sprintf("outcome %s answered HTTP %d, want %v", v.Outcome, v.Status, codes))
	}
	if v.Outcome != "" && v.Key != key {
		p = append(p, fmt.Sprintf("the answer is for key %q, the form sent %q", v.Key, key))
	}
	return p
}

// exactlyOnce checks the database after a submitted transfer: the form's
// key applied at most once, exactly once when the user was told confirmed,
// never when told refused, and the source moved by exactly that many
// amounts (more means money moved under another key).
//
// A front may settle a pending transfer in the background once the backend
// is back: when the user saw pending, the check waits up to settleWait for
// the key to be applied, then as long again as one backend call may take
// (the timeout, and what the cell's healthy page took, at least half a
// second), so that a stray apply under another key has landed before it
// reads.
func (r *runner) exactlyOnce(ctx context.Context, key, from string, before, amount int64, told string, pending bool) (string, []string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleWait+time.Minute)
	defer cancel()
	var n int64
	deadline := time.Now().Add(settleWait)
	for {
		if err := r.direct.QueryRow(ctx, r.cfg.Applied, key).Scan(&n); err != nil {
			return "", []string{"database: count the applies of " + key + ": " + err.Error()}
		}
		if !pending || n > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(r.cfg.Timeout + max(500*time.Millisecond, r.baseline))
	if err := r.direct.QueryRow(ctx, r.cfg.Applied, key).Scan(&n); err != nil {
		return "", []string{"database: count the applies of " + key + ": " + err.Error()}
	}
	after, err := r.balance(ctx, from)
	if err != nil {
		return "", []string{"database: read the balance of " + from + ": " + err.Error()}
	}
	moved := before - after
	db := fmt.Sprintf("key %s applied %d time(s); %s moved %d (amount %d); the user was told %q", key, n, from, moved, amount, told)
	var p []string
	if n > 1 {
		p = append(p, fmt.Sprintf("database: key %s applied %d times", key, n))
	}
	if moved != n*amount {
		p = append(p, fmt.Sprintf("database: %s moved %d but key %s was applied %d time(s) of %d: money moved under another key (a retry with a new idempotency key)", from, moved, key, n, amount))
	}
	switch told {
	case "confirmed":
		if n != 1 {
			p = append(p, fmt.Sprintf("database: confirmed to the user but applied %d times: a lost confirmation", n))
		}
	case "refused":
		if n != 0 {
			p = append(p, fmt.Sprintf("database: refused to the user but applied %d time(s)", n))
		}
	}
	return db, p
}

func (r *runner) balance(ctx context.Context, account string) (int64, error) {
	var b int64
	err := r.direct.QueryRow(ctx, r.cfg.Balance, account).Scan(&b)
	return b, err
}

// healthy reports whether the view is a healthy page: read, its banner ok,
// its transfer form there.
func (v View) healthy() bool { return v.Err == "" && v.Banner == "ok" && v.FormKey != "" }
