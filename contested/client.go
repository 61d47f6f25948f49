package contested

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2/client"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/contested/history"
	"github.com/contested/contested/internal/faultlayer/levers"
)

// MaxClients bounds Clients: each client of a leg whose lever strikes some
// clients only leases a proxy port of its own, and the fault layer's ports
// (32 by default) are shared by every leg running at once.
const MaxClients = 8

// Clients says the test's workload runs n clients. A lever that strikes
// some clients only (isolate) gives each its own proxied path to Postgres,
// on a proxy port of its own; the other levers give them one shared path.
// Either way the workload reaches Postgres as client i through Client(i),
// so one workload serves every leg. A leg has one client by default, and
// MaxClients at most.
func Clients(n int) Option { return func(o *options) { o.clients = n } }

// defaultClients is how many clients a leg has when Clients does not say.
const defaultClients = 1

// checkClients refuses a client count the lever cannot use.
func checkClients(lever Lever, value levers.Lever, n int) error {
	switch {
	case n > MaxClients:
		return fmt.Errorf("Clients(%d): at most %d clients, each leases one of the fault layer's proxy ports", n, MaxClients)
	case n < 0:
		return fmt.Errorf("Clients(%d): a number of clients is not negative", n)
	case value.Needs()&levers.NeedClients != 0 && n < 2:
		return fmt.Errorf("lever %s cuts some clients off while the others go on: start it with contested.Clients(n), n of at least 2, and reach Postgres as each client through leg.Client(i)", lever)
	}
	return nil
}

// Client is one client of a leg's workload: its path to Postgres (its
// own, under a lever that strikes some clients only; the shared one
// otherwise) and its observer.
type Client struct {
	leg *Leg
	i   int
}

// Client returns client i of the workload, 0 ≤ i < the n of Clients (1
// without it).
func (l *Leg) Client(i int) *Client {
	l.t.Helper()
	if i < 0 || i >= l.clients {
		l.t.Fatalf("contested: Client(%d) of a leg with %d clients; name them with contested.Clients(n)", i, l.clients)
	}
	return &Client{leg: l, i: i}
}

// ClientDSN is client i's DSN: Client(i).DSN().
func (l *Leg) ClientDSN(i int) string { l.t.Helper(); return l.Client(i).DSN() }

// Index is the client's index.
func (c *Client) Index() int { return c.i }

// DSN is the victim database's DSN through the client's path: its own
// proxy under a lever that strikes some clients only, the leg's shared
// proxy under the other network levers, direct under the rest.
func (c *Client) DSN() string { c.leg.t.Helper(); return c.leg.dsnOf(c.pathIndex()) }

func (c *Client) pathIndex() int {
	if c.leg.perClient() {
		return c.i
	}
	return 0
}

// PoolConfig is a pgx pool configuration for the client's DSN whose
// connections report to the leg as this client's: their socket errors
// (victim-side evidence when the client is struck) and, while another
// client is struck, the bytes this one read (its work).
func (c *Client) PoolConfig() *pgxpool.Config {
	c.leg.t.Helper()
	return c.leg.poolConfig(c.DSN(), c.i)
}

// Pool opens a pool with PoolConfig; the leg closes it at the end of the
// test.
func (c *Client) Pool(ctx context.Context) *pgxpool.Pool {
	c.leg.t.Helper()
	return c.leg.openPool(ctx, c.PoolConfig())
}

// Observe reports the outcome of one of the client's operations: an error
// with the lever's signature while the client is struck is victim-side
// evidence (it returns true then); nil, while another client is struck,
// is work this client did. Call it after every operation.
func (c *Client) Observe(err error) bool {
	if err == nil {
		if c.leg.scoped.Load() {
			c.leg.worked(c.i, 0, true)
		}
		return false
	}
	return c.leg.observe(err, "app", c.i)
}

// Begin marks that the client starts an operation the schedule may want to
// land a fault in (what names it: "acquire"); call the function it returns
// when the operation ended. A window that waits for a busy client (the
// isolate lever's at level 3) is armed here, before the operation's
// request leaves, when its step has come and this client is not one it
// strikes.
func (c *Client) Begin(ctx context.Context, what string) (end func()) {
	d := &c.leg.drive
	d.mu.Lock()
	if d.busy == nil {
		d.busy = map[int]string{}
	}
	d.busy[c.i] = what
	c.leg.transition(ctx)
	d.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			d.mu.Lock()
			delete(d.busy, c.i)
			d.mu.Unlock()
		})
	}
}

// work is what one spared client did while a scoped fault was armed.
type work struct {
	reads, bytes, ops int
}

// worked counts a spared client's work: a read that carried bytes, or an
// operation it observed answered.
func (l *Leg) worked(client, bytes int, op bool) {
	if client < 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.current
	if f == nil || f.strikes(client) {
		return
	}
	w := f.spared[client]
	if w == nil {
		w = &work{}
		f.spared[client] = w
	}
	if op {
		w.ops++
	} else {
		w.reads++
		w.bytes += bytes
	}
}

// bystanders counts the spared clients' work for the fired rule.
func (f *fault) bystanders() int {
	n := 0
	for _, w := range f.spared {
		n += w.reads + w.ops
	}
	return n
}

// sparedText is the spared clients' work, for the victim side's evidence.
func (f *fault) sparedText() string {
	if len(f.spared) == 0 {
		return "the clients it spared did no work meanwhile"
	}
	var parts []string
	for _, i := range slices.Sorted(maps.Keys(f.spared)) {
		w := f.spared[i]
		parts = append(parts, fmt.Sprintf("client %d read %d times (%d bytes) and answered %d ops", i, w.reads, w.bytes, w.ops))
	}
	return "meanwhile the clients it spared kept working: " + strings.Join(parts, ", ")
}

// sharedProxy is the proxy every client shares, nil when each has its own.
func (l *Leg) sharedProxy() *toxiproxy.Proxy {
	if l.perClient() || len(l.paths) == 0 {
		return nil
	}
	return l.paths[0].proxy
}

// clientProxies are the clients' own proxies, nil when they share one.
func (l *Leg) clientProxies() []*toxiproxy.Proxy {
	if !l.perClient() {
		return nil
	}
	out := make([]*toxiproxy.Proxy, len(l.paths))
	for i, p := range l.paths {
		out[i] = p.proxy
	}
	return out
}

// waitsForBusy reports whether window w must wait for a spared client to
// be mid-operation before it is armed, and, when it may be armed now, what
// the injector side should say about the moment. d.mu is held.
func (l *Leg) waitsForBusy(w levers.Window) (wait bool, note string) {
	p, ok := w.Params.(levers.Striking)
	if !ok || !p.AwaitsBusy() || !l.perClient() {
		return false, ""
	}
	d := &l.drive
	victims := p.Victims(l.clients)
	for _, i := range slices.Sorted(maps.Keys(d.busy)) {
		if !slices.Contains(victims, i) {
			d.dueSince = time.Time{}
			return false, fmt.Sprintf("armed while client %d was in the middle of %s", i, d.busy[i])
		}
	}
	if d.dueSince.IsZero() {
		d.dueSince = time.Now()
	}
	if time.Since(d.dueSince) < levers.MaxHold {
		return true, ""
	}
	d.dueSince = time.Time{}
	return false, fmt.Sprintf("no client it spares began an operation (Client.Begin) within %v of its step; armed without one", levers.MaxHold)
}

// Name is the client's process name in the leg's history: "client-<i>".
func (c *Client) Name() string { return fmt.Sprintf("client-%d", c.i) }

// Invoke starts an op of the client in the leg's history (History): call
// it just before the request leaves, then Record its outcome.
func (c *Client) Invoke(typ, key string, input any) int64 {
	c.leg.t.Helper()
	id, err := c.leg.History().Invoke(c.Name(), typ, key, input)
	if err != nil {
		c.leg.t.Errorf("contested: %v", err)
	}
	return id
}

// Record records the outcome of op id (from Invoke, or from the leg's
// History for a stream of the client's own, such as a heartbeat) and
// observes err as the client's (Observe): output when err is nil; a
// definite failure when err guarantees the op took no effect (Definite);
// an ambiguous outcome otherwise. Where the error chain cannot tell (a
// library's own error type, a retry loop that gave up), say it: wrap err
// in Ambiguous or NoEffect, which keep the chain for Observe. Map the
// component's business answers (busy, fenced, rejected) to outputs
// before: they are answers, not errors.
func (c *Client) Record(id int64, output any, err error) {
	c.leg.t.Helper()
	c.Observe(err)
	if rerr := record(c.leg.History(), id, output, err); rerr != nil {
		c.leg.t.Errorf("contested: %v", rerr)
	}
}

// record records op id's outcome in rec as Client.Record decides it.
func record(rec *history.Recorder, id int64, output any, err error) error {
	switch {
	case err == nil:
		return rec.Complete(id, output, nil)
	case Definite(err):
		return rec.Complete(id, nil, err)
	default:
		return rec.Ambiguous(id, err)
	}
}

// Definite reports whether err guarantees that the operation it ended took
// no effect. An error marked by NoEffect does, one marked by Ambiguous
// does not, whatever else its chain holds (the outermost mark decides).
// Otherwise it reads the chain: the request never left (no connection
// could be made for it, or pgconn.SafeToRetry: nothing was written), or
// Postgres answered it with an error of its own (the statement, and its
// transaction, did not commit). Any other error (a reset, a timeout, a
// connection closed under the request) leaves the outcome unknown: the op
// may or may not have taken effect.
func Definite(err error) bool {
	var m *outcomeMark
	if errors.As(err, &m) {
		return m.definite
	}
	var pgErr *pgconn.PgError
	var connErr *pgconn.ConnectError
	return errors.As(err, &pgErr) || errors.As(err, &connErr) || pgconn.SafeToRetry(err)
}

// Ambiguous marks err as an unknown outcome: the operation may or may not
// have taken effect (a library that gave up after a reset, a timeout it
// reports as its own error). Client.Record records it as ambiguous, and a
// model lets such an op take effect at any time after its invoke, or
// never. errors.Is and errors.As see through the mark. Ambiguous(nil) is
// nil.
func Ambiguous(err error) error {
	if err == nil {
		return nil
	}
	return &outcomeMark{err: err}
}

// NoEffect marks err as a definite failure: the operation certainly took
// no effect (the library says it rolled back, the request was refused
// before it was sent). Client.Record records it as failed, and a model
// holds that it never happened: a later read that sees its effect is a
// violation. Mark only what the component guarantees; an error marked so
// wrongly hides a lost acknowledgement. errors.Is and errors.As see
// through the mark. NoEffect(nil) is nil.
func NoEffect(err error) error {
	if err == nil {
		return nil
	}
	return &outcomeMark{err: err, definite: true}
}

// outcomeMark is an error marked as a definite or an ambiguous outcome.
type outcomeMark struct {
	err      error
	definite bool
}

func (m *outcomeMark) Error() string { return m.err.Error() }
func (m *outcomeMark) Unwrap() error { return m.err }

// Fail records that op id took no effect because the component refused it
// before doing anything (a lease it knows is lost, a request it did not
// send), and observes err as the client's.
func (c *Client) Fail(id int64, err error) {
	c.leg.t.Helper()
	c.Observe(err)
	if rerr := c.leg.History().Complete(id, nil, err); rerr != nil {
		c.leg.t.Errorf("contested: %v", rerr)
	}
}
