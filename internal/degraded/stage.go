package degraded

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
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
