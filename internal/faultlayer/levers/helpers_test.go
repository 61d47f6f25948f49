package levers

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2/client"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/internal/faultlayer"
	"github.com/contested/contested/internal/faultlayer/faulttest"
	"github.com/contested/contested/internal/reexec"
)

func TestMain(m *testing.M) {
	reexec.Main(reexec.Roles{"worker": worker, "replica": replicaMain})
	faulttest.Main(m)
}

// worker is crash-and-resume's victim: it works until killed, or, with
// WORKER_FINISH set, finishes the remainder and exits 0.
func worker() int {
	fmt.Println("working")
	if os.Getenv("WORKER_FINISH") != "" {
		time.Sleep(100 * time.Millisecond)
		fmt.Println("finished the remainder")
		return 0
	}
	select {}
}

// fixture is one victim database on the shared fault layer, and, when
// proxied, a Toxiproxy proxy to Postgres on a leased port: what a leg of
// package contested gives its lever.
type fixture struct {
	layer  *faultlayer.Layer
	armer  *PgFaultArmer
	victim *Victim
	proxy  *toxiproxy.Proxy
	dial   string
}

func newFixture(t *testing.T, proxied bool) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{layer: faulttest.Layer(t)}
	var err error
	if f.armer, err = NewPgFaultArmer(ctx, f.layer.DB(), nil); err != nil {
		t.Fatal(err)
	}
	if f.victim, err = f.armer.CreateVictim(ctx, t.Name()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.armer.DropVictim(context.Background(), f.victim); err != nil {
			t.Error(err)
		}
	})
	if proxied {
		f.proxy, f.dial = proxyTo(t, f.layer, f.layer.PostgresUpstream)
	}
	return f
}

// proxyTo leases a port and puts a proxy to upstream on it for the test.
func proxyTo(t *testing.T, l *faultlayer.Layer, upstream string) (*toxiproxy.Proxy, string) {
	t.Helper()
	ctx := context.Background()
	ls, err := l.Leases().Acquire(ctx, t.Name())
	if err != nil {
		t.Fatalf("lease a proxy port: %v", err)
	}
	t.Cleanup(func() { l.Leases().Release(context.Background(), ls) })
	port, _ := l.Port(ls.Port)
	p, err := l.Toxiproxy().CreateProxy("levers-"+strconv.Itoa(ls.Port), port.Listen, upstream)
	if err != nil {
		t.Fatalf("create proxy on %s: %v", port.Listen, err)
	}
	t.Cleanup(func() { p.Delete() })
	return p, port.Dial
}

// target is what a contested leg would hand the lever.
func (f *fixture) target(t *testing.T) Target {
	return Target{
		Toxiproxy: f.layer.Toxiproxy(),
		Proxy:     f.proxy,
		Backends:  f.backends,
		Armer:     f.armer,
		DSN:       f.direct(t),
		Hold:      2,
	}
}

func (f *fixture) backends(ctx context.Context) int {
	var n int
	if err := f.layer.DB().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = $1`, f.victim.Database()).Scan(&n); err != nil {
		return -1
	}
	return n
}

// direct is the victim's DSN bypassing the proxy.
func (f *fixture) direct(t *testing.T) string {
	cfg, err := pgx.ParseConfig(f.layer.PostgresDSN)
	if err != nil {
		t.Fatal(err)
	}
	return f.victim.DSN(net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))))
}

// pool opens a pool to the victim: through the proxy when there is one.
func (f *fixture) pool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	if f.proxy != nil {
		return f.poolVia(t, f.dial)
	}
	return f.poolTo(t, f.direct(t))
}

// poolVia opens a pool to the victim through the proxy that listens at dial.
func (f *fixture) poolVia(t *testing.T, dial string) *pgxpool.Pool {
	t.Helper()
	return f.poolTo(t, f.victim.DSN(dial))
}

func (f *fixture) poolTo(t *testing.T, dsn string) *pgxpool.Pool {
	t.Helper()
	p, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// seen counts the errors that carry one of the lever's signals: the
// victim side as a leg observes it.
func seen(l Lever, errs ...error) int {
	n := 0
	for _, err := range errs {
		if s := Classify(err); s != "" && slices.Contains(l.Signals(), s) {
			n++
		}
	}
	return n
}

// arm arms l on t and fails the test on an error; the fault is healed at
// the end of the test if the test did not.
func arm(t *testing.T, l Lever, tg Target) Fault {
	t.Helper()
	f, err := l.Arm(context.Background(), tg)
	if err != nil {
		if f != nil {
			f.Heal(context.Background())
		}
		t.Fatalf("arm %s: %v", l.Name(), err)
	}
	return f
}

func mustExec(t *testing.T, ctx context.Context, p *pgxpool.Pool, sql string) {
	t.Helper()
	if _, err := p.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// query runs sql with a deadline and returns its error.
func query(ctx context.Context, p *pgxpool.Pool, d time.Duration, sql string) error {
	qctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	_, err := p.Exec(qctx, sql)
	return err
}
