package contested

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2/client"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/contested/history"
	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/faultlayer"
	"github.com/contested/contested/internal/faultlayer/faulttest"
	"github.com/contested/contested/internal/faultlayer/lease"
	"github.com/contested/contested/internal/faultlayer/levers"
	"github.com/contested/contested/internal/registry"
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
	armer   *PgFaultArmer
	victim  *Victim
	paths   []*path // the proxied paths to Postgres: one shared, or one per client
	clients int     // how many clients the test names (Clients), at least 1
	pools   []*pgxpool.Pool
	worker  *Worker
	hold    int
	hist    *history.Recorder
	scoped  atomic.Bool // a fault that strikes some clients only is armed

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

// fault is one armed fault of a leg, from Arm to Heal: it becomes one
// record.
type fault struct {
	faultrecord.Sides              // the evidence from both sides
	armed             levers.Fault // what the lever armed; nil when arming failed before it acted
	armedAt           time.Time
	healedAt          time.Time
	confirmed         bool          // server-side confirmation a lever needs (confirm-timeout's commit)
	index             int           // which window of the schedule, from 0
	window            levers.Window // the window's timing and the lever's parameters
	timing            string        // who decided when it was armed and healed
	struck            []int         // the clients a scoped fault cut off (nil: every client)
	spared            map[int]*work // what the clients it spared did meanwhile
}

func (f *fault) victimSaw(what string, at time.Time) { f.Victim(what, true, at) }

// Option configures a leg.
type Option func(*options)

type options struct {
	hold    int
	span    int
	clients int
}

// Hold has a pool-exhaustion leg's armer open and hold n connections of its
// own, counted in the limit it sets, besides the backends the victim
// database has; by default it holds none and the limit alone keeps the
// database full.
func Hold(n int) Option { return func(o *options) { o.hold = n } }

// Span says how many steps (Step, Progress) the test's workload takes, so
// that the schedule places its windows inside it. The default is 600
// steps (levers.DefaultSpan), for a workload that runs until Done.
func Span(steps int) Option { return func(o *options) { o.span = steps } }

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
	seed, err := Seed()
	if err != nil {
		t.Fatalf("contested: %v", err)
	}
	level, err := Level()
	if err != nil {
		t.Fatalf("contested: %v", err)
	}
	if err := checkClients(lever, value, o.clients); err != nil {
		t.Fatalf("contested: %v", err)
	}
	dir, _ := packageDir()
	l := &Leg{t: t, surface: s, lever: lever, value: value, seed: seed, rand: newRand(seed), replay: ReplayCommandAt(seed, level, dir, t.Name()),
		sched: levers.NewSchedule(value, seed, levers.Scope{Level: level, Span: o.span}), hold: o.hold, clients: max(o.clients, defaultClients)}
	l.drive.done = make(chan struct{})
	t.Logf("contested: leg %s/%s of surface %s: %s=%d; replay: %s; schedule %s (digest %s)", t.Name(), lever, surface, envvar.Seed, seed, l.replay, l.sched, l.sched.Digest())
	t.Cleanup(l.cleanup)
	// The seed is recorded now, before anything can fail: a leg that
	// fails before its first fault arms writes no fault record, and its
	// rerun, ladder and replay still need the seed it ran with.
	rec, err := recorder()
	if err == nil {
		_, err = rec.WriteStart(faultrecord.LegStart{Test: t.Name(), Surface: s.ID, Leg: string(lever), Seed: seed, Level: level, Replay: l.replay, StartedAt: time.Now()})
	}
	if err != nil {
		t.Fatalf("contested: record the start of leg %s/%s: %v", t.Name(), lever, err)
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
	name := fmt.Sprintf("contested-%d-%s", ls.Port, faultrecord.SafeName(l.t.Name()))
	if n > 1 {
		name += fmt.Sprintf("-c%d", i)
	}
	if p.proxy, err = l.layer.Toxiproxy().CreateProxy(name, p.port.Listen, l.layer.PostgresUpstream); err != nil {
		return fmt.Errorf("create proxy %s on %s: %w", name, p.port.Listen, err)
	}
	return nil
}

// Seed is the leg's seed.
func (l *Leg) Seed() int64 { return l.seed }

// Rand is the leg's seeded random source: draw every random choice of the
// test from it, in a fixed order, and CONTESTED_SEED replays them.
func (l *Leg) Rand() *rand.Rand { return l.rand }

// Replay is the command that reruns this test with this leg's seed.
func (l *Leg) Replay() string { return l.replay }

// Surface is the registry entry the leg contests.
func (l *Leg) Surface() registry.Surface { return l.surface }

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

// Arm sets the fault up now, with the parameters of the schedule's next
// window, and proves it from the injector side (the proxy's state read
// back, the toxic in place, the connection limit reached, the worker's
// exit status). Each Arm is one armed fault and one record. A test that
// calls Arm decides when its faults land; one that marks its workload's
// steps (Step) leaves that to the schedule too, which is what makes a
// seed replay a run.
func (l *Leg) Arm(ctx context.Context) {
	l.t.Helper()
	i, w := l.nextWindow()
	if _, err := l.arm(ctx, levers.BurstTarget{}, i, w, timingTest); err != nil {
		l.t.Fatalf("contested: arm %s: %v", l.lever, err)
	}
}

// nextWindow takes the schedule's next window for a fault the test arms.
func (l *Leg) nextWindow() (int, levers.Window) {
	d := &l.drive
	d.mu.Lock()
	defer d.mu.Unlock()
	d.byTest = true
	i := d.next
	d.next++
	return i, l.sched.Window(i)
}

// arm arms one fault of the leg's lever on what the leg holds, in window
// i of the schedule (w), with burst as the shape of a burst, and returns
// it. The fault is recorded as armed from the start, also when arming
// fails.
func (l *Leg) arm(ctx context.Context, burst levers.BurstTarget, i int, w levers.Window, timing string) (*fault, error) {
	l.mu.Lock()
	if l.current != nil {
		l.mu.Unlock()
		return nil, errors.New("armed twice without Heal")
	}
	f := &fault{armedAt: time.Now(), index: i, window: w, timing: timing}
	if p, ok := w.Params.(levers.Striking); ok && l.perClient() {
		// Set before arming, so that the struck clients' errors count from the cut on.
		f.struck, f.spared = p.Victims(l.clients), map[int]*work{}
		l.scoped.Store(true)
	}
	l.faults = append(l.faults, f)
	l.current = f
	l.mu.Unlock()
	target, err := l.target(burst, w)
	if err != nil {
		return f, err
	}
	armed, err := l.value.Arm(ctx, target)
	if armed != nil {
		in, what := armed.Injector()
		l.mu.Lock()
		f.armed = armed
		if sc, ok := armed.(levers.Scoped); ok {
			f.struck = sc.Struck()
		}
		l.mu.Unlock()
		l.injector(f, in, what)
	}
	return f, err
}

// target is what the leg holds for its lever to act on, in window w.
func (l *Leg) target(burst levers.BurstTarget, w levers.Window) (levers.Target, error) {
	t := levers.Target{
		Toxiproxy: l.layer.Toxiproxy(),
		Proxy:     l.sharedProxy(),
		Clients:   l.clientProxies(),
		Backends:  l.backends,
		Armer:     l.armer,
		DSN:       l.DirectDSN(),
		Hold:      l.hold,
		Burst:     burst,
		Window:    w,
	}
	if l.value.Needs()&levers.NeedProcess != 0 {
		if l.worker == nil {
			return t, errors.New("no worker: call StartWorker before Arm")
		}
		t.Process = l.worker
	}
	return t, nil
}

func (l *Leg) injector(f *fault, ok bool, what string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f.Injector(what, ok)
}

// Heal takes the fault away. A fault still armed at the end of the test is
// healed then. A window the schedule holds is healed as the schedule
// would (its heal hooks run).
func (l *Leg) Heal(ctx context.Context) {
	l.t.Helper()
	d := &l.drive
	d.mu.Lock()
	defer d.mu.Unlock()
	if a := d.armed; a != nil {
		l.healHeld(ctx, a)
	} else if err := l.heal(ctx); err != nil {
		l.t.Errorf("contested: heal %s: %v", l.lever, err)
	}
	l.checkDone()
}

func (l *Leg) heal(ctx context.Context) error {
	l.mu.Lock()
	f := l.current
	l.current = nil
	l.scoped.Store(false)
	l.mu.Unlock()
	if f == nil {
		return nil
	}
	f.healedAt = time.Now()
	if f.armed == nil {
		return nil
	}
	return f.armed.Heal(ctx)
}

// Observe reports an error the victim saw. It returns true when the error
// carries this lever's signature and a fault is armed: that is victim-side
// evidence the fault landed. Other errors are the application's own. A
// fault that strikes some clients only counts the errors their own clients
// report (Client.Observe).
func (l *Leg) Observe(err error) bool { return l.observe(err, "app", anyClient) }

// anyClient is the client of an observation that is no client's in
// particular: the shared pool, Leg.Observe.
const anyClient = -1

func (l *Leg) observe(err error, where string, client int) bool {
	s := Classify(err)
	if s == "" || !slices.Contains(l.value.Signals(), s) {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.current
	if f == nil || (f.spared != nil && !slices.Contains(f.struck, client)) {
		return false
	}
	what := fmt.Sprintf("%s (%s)", s, where)
	if f.spared != nil {
		what = fmt.Sprintf("client %d: %s", client, what)
	}
	f.victimSaw(what, time.Now())
	return true
}

// Note records victim-side evidence the test observed itself: a duplicate
// delivery consumed, a resumed worker that finished the remainder. It
// counts for the fault armed now, or else the last one armed (a crashed
// worker is proven resumed after Heal).
func (l *Leg) Note(what string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.current
	if f == nil && len(l.faults) > 0 {
		f = l.faults[len(l.faults)-1]
	}
	if f == nil {
		l.t.Errorf("contested: Note(%q) before any Arm", what)
		return
	}
	f.victimSaw(what, time.Now())
}

// Committed checks from the server side, bypassing the proxy, that a write
// the client saw time out was in fact committed: query must return one
// boolean. For confirm-timeout this is the injector-side half of the
// proof (the other half is the client's timeout, through Observe). A write
// the server received commits on the server's time, which a busy machine
// stretches past the client's timeout and past the heal: Committed asks
// again until the query says true, for at most five seconds (levers.MaxHold).
func (l *Leg) Committed(ctx context.Context, query string, args ...any) bool {
	l.t.Helper()
	conn, err := pgx.Connect(ctx, l.DirectDSN())
	if err != nil {
		l.t.Fatalf("contested: connect directly: %v", err)
	}
	defer conn.Close(ctx)
	start := time.Now()
	var ok bool
	for {
		if err := conn.QueryRow(ctx, query, args...).Scan(&ok); err != nil {
			l.t.Fatalf("contested: check the commit: %v", err)
		}
		if ok || time.Since(start) >= commitWait || !sleep(ctx, 20*time.Millisecond) {
			break
		}
	}
	waited := ""
	if d := time.Since(start); d >= 20*time.Millisecond {
		waited = fmt.Sprintf(" (asked for %s)", d.Round(time.Millisecond))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.current
	if f == nil && len(l.faults) > 0 {
		f = l.faults[len(l.faults)-1]
	}
	if f != nil {
		f.confirmed = f.confirmed || ok
		f.Injector(fmt.Sprintf("server side, bypassing the proxy: %s → %v%s", query, ok, waited), false)
	}
	return ok
}

// commitWait bounds how long Committed waits for a write the server
// received to be committed: the longest a window is held for its victim
// (levers.MaxHold).
const commitWait = levers.MaxHold

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
	f, err := l.arm(ctx, levers.BurstTarget{Messages: n, Plan: p}, i, w, timingTest)
	if err != nil {
		l.t.Fatalf("contested: arm %s: %v", l.lever, err)
	}
	d, ok := f.armed.(levers.Delivering)
	if !ok {
		l.t.Fatalf("contested: the %s lever armed no deliveries", l.lever)
	}
	return d.Deliveries()
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

// StartWorker starts the process a crash-and-resume leg kills (Arm) and
// restarts (Heal). make builds a fresh command each time.
func (l *Leg) StartWorker(make func() *exec.Cmd) *Worker {
	l.t.Helper()
	if l.value.Needs()&levers.NeedProcess == 0 {
		l.t.Fatalf("contested: StartWorker on a %s leg", l.lever)
	}
	l.worker = levers.NewWorker(l.t, make)
	if err := l.worker.Start(context.Background()); err != nil {
		l.t.Fatalf("contested: %v", err)
	}
	return l.worker
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

// proof is what both sides proved about the fault, for the lever's fired
// rule (levers.Lever.Fired).
func (f *fault) proof() levers.Proof {
	return levers.Proof{Injected: f.Injected(), Confirmed: f.confirmed, Victim: f.VictimKinds(), Bystanders: f.bystanders()}
}

func (f *fault) victimEvidence() string {
	s := f.VictimText()
	if !f.Landed() {
		s = "nothing: no error or event with this lever's signature was seen while it was armed"
		if f.spared != nil {
			s = fmt.Sprintf("nothing: the clients it cut off (%v) reported no error with this lever's signature while it was armed", f.struck)
		}
	}
	if f.spared != nil {
		s += "; " + f.sparedText()
	}
	return s
}

func (l *Leg) record() {
	// Taken before this function reports anything itself: a failure now is
	// the test's own (an oracle, an assertion), not an unfired fault.
	testFailed := l.t.Failed()
	l.mu.Lock()
	faults, oracles := l.faults, l.oracles
	l.mu.Unlock()
	if len(faults) == 0 {
		if !l.t.Skipped() && !l.t.Failed() {
			l.t.Errorf("contested: leg %s/%s was started and never armed; call Arm (or Deliveries for a burst)", l.t.Name(), l.lever)
		}
		return
	}
	rec, err := recorder()
	if err != nil {
		l.t.Errorf("contested: %v", err)
		return
	}
	ran := l.ran(faults)
	for i, f := range faults {
		unfired := l.value.Fired(f.proof())
		sched := ran
		sched.Window, sched.Timing = i+1, f.timing
		fired := unfired == nil
		r := faultrecord.Record{
			Test:    l.t.Name(),
			Surface: l.surface.ID,
			Class:   l.surface.Class,
			Leg:     string(l.lever),
			Seed:    l.seed,
			Replay:  l.replay,
			Armed:   true,
			ArmedAt: f.armedAt,
			Fired:   fired,
			FiredAt: f.LandedAt(),
			Evidence: faultrecord.Evidence{
				Injector: f.InjectorText(),
				Victim:   f.victimEvidence(),
			},
			Oracles:    oracles,
			TestFailed: testFailed,
			Schedule:   &sched,
		}
		if _, err := rec.Write(r); err != nil {
			l.t.Errorf("contested: %v", err)
		}
		if !fired {
			l.t.Errorf("contested: leg %s/%s (fault %d of %d) ARMED BUT DID NOT FIRE: %v.\n\tinjector: %s\n\tvictim: %s\n\treplay: %s",
				l.t.Name(), l.lever, i+1, len(faults), unfired, r.Evidence.Injector, r.Evidence.Victim, l.replay)
		}
	}
}
