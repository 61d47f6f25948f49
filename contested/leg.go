package contested

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2/client"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/contested/history"
	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/faultdir"
	"github.com/contested/contested/internal/faultlayer"
	"github.com/contested/contested/internal/faultlayer/faulttest"
	"github.com/contested/contested/internal/faultlayer/lease"
	"github.com/contested/contested/internal/faultlayer/levers"
	"github.com/contested/contested/internal/legstart"
	"github.com/contested/contested/internal/registry"
	seedpkg "github.com/contested/contested/internal/seed"
)

// Leg is one fault leg in a test: a lever applied to a surface. Start
// returns it ready to arm; the test's end cleans it up.
type Leg struct {
	t       testing.TB
	surface registry.Surface
	lever   Lever
	value   levers.Lever // what the lever does
	seed    int64
	rand    *rand.Rand
	replay  string
	sched   levers.Schedule
	drive   drive

	layer   *faultlayer.Layer
	armer   *levers.PgFaultArmer
	victim  *levers.Victim
	paths   []*path // the proxied paths to Postgres: one shared, or one per client
	clients int     // how many clients the test names (Clients), at least 1
	pools   []*pgxpool.Pool
	worker  *Worker
	hold    int
	hist    *history.Recorder
	scoped  atomic.Bool // a fault that strikes some clients only is armed
	slowing atomic.Bool // a fault whose victim side is a slow round trip is armed (levers.Slowing)

	mu      sync.Mutex
	oracles []faultrecord.OracleRun
	faults  []*fault
	current *fault // the armed fault, nil when healed
}

// path is one proxied path to Postgres: a leased port and the proxy on it.
type path struct {
	lease lease.Lease
	keep  func() error
	port  faultlayer.ProxyPort
	proxy *toxiproxy.Proxy
}

// Option configures a leg.
type Option func(*options)

type options struct {
	hold    int
	span    int
	spanSet bool // Span was given, so that Span(0) is told from no Span
	clients int
}

// Hold has a pool-exhaustion leg's armer open and hold n connections of its
// own, counted in the limit it sets, besides the backends the victim
// database has; by default it holds none and the limit alone keeps the
// database full.
func Hold(n int) Option { return func(o *options) { o.hold = n } }

// Span says how many steps (Step, Progress) the test's workload takes, so
// that the schedule places its windows inside it. Without Span the
// default is 600 steps (levers.DefaultSpan), for a workload that runs
// until Done. steps must be at least 1: a workload of no steps has nowhere
// to place a fault, so Start fails the test on Span(0) or a negative span
// rather than quietly using the default.
func Span(steps int) Option { return func(o *options) { o.span, o.spanSet = steps, true } }

// checkSpan refuses a span no workload has: zero or negative steps.
func checkSpan(o options) error {
	if o.spanSet && o.span < 1 {
		return fmt.Errorf("Span(%d): a workload of %d steps has no step to place a fault window on; pass the number of Step or Progress calls the workload makes (at least 1), or leave Span out for the default of %d steps", o.span, o.span, levers.DefaultSpan)
	}
	return nil
}

// Start begins a leg of lever on surface in test t. It fails the test when
// the surface is not in the registry, does not list the lever, or the
// fault layer cannot run. Every leg gets a victim database of its own,
// owned by a role of its own; network levers also lease a proxy port and
// put a proxy to Postgres on it.
func Start(t testing.TB, surface string, lever Lever, opts ...Option) *Leg {
	t.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if err := checkSpan(o); err != nil {
		t.Fatalf("contested: %v", err)
	}
	value, err := lever.value()
	if err != nil {
		t.Fatalf("contested: %v", err)
	}
	reg, err := loadRegistry()
	if err != nil {
		t.Fatalf("contested: %v", err)
	}
	s, ok := reg.Surface(surface)
	if !ok {
		t.Fatalf("contested: surface %q is not in %s; declare it in the registry (see docs/reference/registry.md)", surface, reg.Path)
	}
	if !slices.Contains(s.Legs, string(lever)) {
		t.Fatalf("contested: surface %q (%s:%d) does not list lever %q in its legs %v; add it there", surface, reg.Path, s.Line, lever, s.Legs)
	}
	s0, err := seedpkg.FromEnv()
	if err != nil {
		t.Fatalf("contested: %v", err)
	}
	seed := s0.OrNew()
	level, err := Level()
	if err != nil {
		t.Fatalf("contested: %v", err)
	}
	if err := checkClients(lever, value, o.clients); err != nil {
		t.Fatalf("contested: %v", err)
	}
	dir, _ := packageDir()
	l := &Leg{t: t, surface: s, lever: lever, value: value, seed: int64(seed), rand: seed.Rand("leg"), replay: seed.Replay(level, dir, t.Name()),
		sched: levers.NewSchedule(value, int64(seed), levers.Scope{Level: level, Span: o.span}), hold: o.hold, clients: max(o.clients, defaultClients)}
	l.drive.done = make(chan struct{})
	t.Logf("contested: leg %s of surface %s: %s=%d; replay: %s; schedule %s (digest %s)", legName(t.Name(), lever), surface, envvar.Seed, seed, l.replay, l.sched, l.sched.Digest())
	t.Cleanup(l.cleanup)
	// The seed is recorded now, before anything can fail: a leg that
	// fails before its first fault arms writes no fault record, and its
	// rerun, ladder and replay still need the seed it ran with.
	rec, err := recorder()
	if err == nil {
		_, err = legstart.Write(filepath.Dir(rec.Dir()), legstart.Start{RunID: rec.RunID(), Package: rec.Package(), Test: t.Name(), Surface: s.ID,
			Leg: string(lever), Seed: int64(seed), Level: level, Replay: l.replay, StartedAt: time.Now()})
	}
	if err != nil {
		t.Fatalf("contested: record the start of leg %s: %v", legName(t.Name(), lever), err)
	}

	// The layer comes up under its own bounds (the first leg of a package
	// may build its images and start its containers on a busy machine):
	// the leg's own two minutes start once it is up.
	l.layer = faulttest.Layer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if l.armer, err = armerFor(ctx, l.layer, reg); err != nil {
		t.Fatalf("contested: %v", err)
	}
	if l.victim, err = l.armer.CreateVictim(ctx, t.Name()); err != nil {
		t.Fatalf("contested: %v", err)
	}
	if !l.proxied() {
		return l
	}
	n := 1
	if l.perClient() {
		n = l.clients
	}
	for i := range n {
		if err := l.openPath(ctx, i, n); err != nil {
			t.Fatalf("contested: %v", err)
		}
	}
	return l
}

// openPath leases a proxy port and puts a proxy to Postgres on it: path i
// of n (n > 1: one per client).
func (l *Leg) openPath(ctx context.Context, i, n int) error {
	ls, err := l.layer.Leases().Acquire(ctx, l.t.Name())
	if err != nil {
		return fmt.Errorf("lease a proxy port: %w", err)
	}
	p := &path{lease: ls, keep: l.layer.Leases().Keep(context.Background(), ls)}
	l.paths = append(l.paths, p) // cleanup releases it from now on
	p.port, _ = l.layer.Port(ls.Port)
	name := fmt.Sprintf("contested-%d-%s", ls.Port, faultdir.SafeName(l.t.Name()))
	if n > 1 {
		name += fmt.Sprintf("-c%d", i)
	}
	if p.proxy, err = l.layer.Toxiproxy().CreateProxy(name, p.port.Listen, l.layer.PostgresUpstream); err != nil {
		return fmt.Errorf("create proxy %s on %s: %w", name, p.port.Listen, err)
	}
	return nil
}

// legName names a leg by its test's path and its lever: the path alone
// when its last element is the lever already (TestX/reset, the usual
// subtest per leg), else the path and the lever (TestX/store/reset), so a
// leg never reads TestX/reset/reset.
func legName(test string, lever Lever) string {
	if test == string(lever) || strings.HasSuffix(test, "/"+string(lever)) {
		return test
	}
	return test + "/" + string(lever)
}

// name is the leg's name in what it prints (legName).
func (l *Leg) name() string { return legName(l.t.Name(), l.lever) }

// Seed is the leg's seed.
func (l *Leg) Seed() int64 { return l.seed }

// Rand is the leg's seeded random source: draw every random choice of the
// test from it, in a fixed order, and CONTESTED_SEED replays them.
func (l *Leg) Rand() *rand.Rand { return l.rand }

// Replay is the command that reruns this test with this leg's seed.
func (l *Leg) Replay() string { return l.replay }

// Addr is the proxied address of Postgres (network levers), host:port:
// client 0's when each client has a path of its own.
func (l *Leg) Addr() string {
	if len(l.paths) == 0 {
		return ""
	}
	return l.paths[0].port.Dial
}

// DSN is the victim database's DSN through the proxy for network levers,
// and direct for the others; client 0's when each client has a path of its
// own (Client).
func (l *Leg) DSN() string {
	l.t.Helper()
	return l.dsnOf(0)
}

// dsnOf is client i's DSN: through its own path, the shared one, or
// direct.
func (l *Leg) dsnOf(i int) string {
	l.t.Helper()
	if l.victim == nil {
		l.t.Fatalf("contested: lever %s has no victim database", l.lever)
	}
	if len(l.paths) == 0 {
		return l.DirectDSN()
	}
	return l.victim.DSN(l.paths[min(i, len(l.paths)-1)].port.Dial)
}

// DirectDSN is the victim database's DSN bypassing the proxy: for setup and
// for oracles, which must see the truth, not the fault.
func (l *Leg) DirectDSN() string {
	l.t.Helper()
	if l.victim == nil {
		l.t.Fatalf("contested: lever %s has no victim database", l.lever)
	}
	addr, err := l.layer.PostgresAddr()
	if err != nil {
		l.t.Fatalf("contested: %v", err)
	}
	return l.victim.DSN(addr)
}

// PoolConfig is a pgx pool configuration for DSN whose connections report
// their socket errors to the leg: the victim-side observer.
func (l *Leg) PoolConfig() *pgxpool.Config {
	l.t.Helper()
	return l.poolConfig(l.DSN(), anyClient)
}

// poolConfig is a pool configuration for dsn whose connections report to
// the leg as client's (anyClient: none in particular).
func (l *Leg) poolConfig(dsn string, client int) *pgxpool.Config {
	l.t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		l.t.Fatalf("contested: %v", err)
	}
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 5 * time.Second}
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			l.observe(err, "dial", client)
			return nil, err
		}
		return &observedConn{Conn: c, leg: l, client: client}, nil
	}
	return cfg
}

// Pool opens a pool with PoolConfig; the leg closes it at the end of the
// test.
func (l *Leg) Pool(ctx context.Context) *pgxpool.Pool {
	l.t.Helper()
	return l.openPool(ctx, l.PoolConfig())
}

func (l *Leg) openPool(ctx context.Context, cfg *pgxpool.Config) *pgxpool.Pool {
	l.t.Helper()
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		l.t.Fatalf("contested: open victim pool: %v", err)
	}
	l.mu.Lock()
	l.pools = append(l.pools, p)
	l.mu.Unlock()
	return p
}

// proxied reports whether the lever acts on a proxy in front of the
// victim database, shared or one per client.
func (l *Leg) proxied() bool { return l.value.Needs()&(levers.NeedProxy|levers.NeedClients) != 0 }

// perClient reports whether each client has a path of its own: the lever
// strikes some clients only.
func (l *Leg) perClient() bool { return l.value.Needs()&levers.NeedClients != 0 }

// ErrInconclusive marks an oracle error that means the oracle could not
// decide (a linearizability check that timed out, a history too weak to
// judge), as opposed to a violation.
var ErrInconclusive = errors.New("oracle could not decide")

// Oracle reports that an oracle ran over this leg's run: how many
// operations the run produced for it, how many it checked, and what it
// found: nil when the property held, an error wrapping ErrInconclusive when
// it could not decide, any other error for a violation. It goes into the
// leg's records, where mage contested reads it: a leg whose oracle did not
// run, or checked only part of the run, is not a full pass. Failing the
// test on a violation stays the test's job.
func (l *Leg) Oracle(name string, produced, checked int, err error) {
	o := faultrecord.OracleRun{Name: name, OpsProduced: produced, OpsChecked: checked, Result: "held"}
	switch {
	case errors.Is(err, ErrInconclusive):
		o.Result, o.Detail = "unknown", err.Error()
	case err != nil:
		o.Result, o.Detail = "violated", err.Error()
	}
	l.mu.Lock()
	l.oracles = append(l.oracles, o)
	l.mu.Unlock()
}

// Deliveries arms a burst: it returns the seeded delivery order of n
// messages (see Plan), planned by the schedule's next window (its
// permutation, duplicate rate and reordering window, where p leaves them
// zero). Call it once per window of the schedule; each call ends the burst
// before it. The consumer reports each delivery it processed
// with Consumed; the fault fired when it processed a perturbed one.
func (l *Leg) Deliveries(ctx context.Context, n int, p BurstPlan) []Delivery {
	l.t.Helper()
	if l.value.Needs()&levers.NeedPlan == 0 {
		l.t.Fatalf("contested: Deliveries on a %s leg", l.lever)
	}
	// The burst before this one is over: its deliveries were handed out.
	if err := l.heal(ctx); err != nil {
		l.t.Errorf("contested: heal %s: %v", l.lever, err)
	}
	i, w := l.nextWindow()
	f, err := l.arm(ctx, levers.BurstTarget{Messages: n, Plan: p.levers()}, i, w, timingTest)
	if err != nil {
		l.t.Fatalf("contested: arm %s: %v", l.lever, err)
	}
	d, ok := f.armed.(levers.Delivering)
	if !ok {
		l.t.Fatalf("contested: the %s lever armed no deliveries", l.lever)
	}
	return deliveries(d.Deliveries())
}

// Consumed reports that the consumer processed delivery d. Perturbed
// deliveries are victim-side evidence for the burst.
func (l *Leg) Consumed(d Delivery) {
	if d.Kind == Original {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.current
	if f == nil && len(l.faults) > 0 {
		f = l.faults[len(l.faults)-1]
	}
	if f != nil {
		f.victimSaw(d.Kind.String()+" delivery consumed", time.Now())
	}
}

// backends counts the victim database's backends: the injector side's view
// of the victim's connections.
func (l *Leg) backends(ctx context.Context) int {
	if l.victim == nil {
		return -1
	}
	var n int
	if err := l.layer.DB().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = $1`, l.victim.Database()).Scan(&n); err != nil {
		return -1
	}
	return n
}

// cleanup heals, records, and releases everything, in that order: the
// record must describe the fault before its resources are gone.
func (l *Leg) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l.stopDrive()
	if err := l.heal(ctx); err != nil {
		l.t.Errorf("contested: heal %s at the end of the test: %v", l.lever, err)
	}
	if l.worker != nil {
		l.worker.Stop()
	}
	l.record()

	l.mu.Lock()
	pools := l.pools
	l.pools = nil
	l.mu.Unlock()
	for _, p := range pools {
		p.Close()
	}
	for _, p := range l.paths {
		l.closePath(ctx, p)
	}
	if l.victim != nil {
		if err := l.armer.DropVictim(ctx, l.victim); err != nil {
			l.t.Errorf("contested: %v", err)
		}
	}
}

// closePath deletes a path's proxy and releases its port.
func (l *Leg) closePath(ctx context.Context, p *path) {
	if p.proxy != nil {
		if err := p.proxy.Delete(); err != nil {
			l.t.Errorf("contested: delete proxy %s: %v (the lease's reclaim will remove it)", p.proxy.Name, err)
		}
	}
	if err := p.keep(); err != nil {
		l.t.Errorf("contested: the lease on port %d was lost during the leg: %v", p.lease.Port, err)
	}
	if _, err := l.layer.Leases().Release(ctx, p.lease); err != nil {
		l.t.Errorf("contested: release port %d: %v", p.lease.Port, err)
	}
}
