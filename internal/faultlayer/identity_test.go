package faultlayer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2/client"
	"github.com/jackc/pgx/v5"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/contested/contested/internal/dockerenv"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/faultlayer/lease"
	"github.com/contested/contested/internal/images"
	"github.com/contested/contested/internal/reap"
	"github.com/contested/contested/internal/runid"
	"github.com/contested/contested/internal/testlog"
	"github.com/contested/contested/internal/tier"
)

// scratchDB creates a database of the test's own on l's Postgres and
// returns its DSN; it is dropped when the test ends.
func scratchDB(t *testing.T, l *Layer) string {
	t.Helper()
	name := fmt.Sprintf("identity_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9)
	ctx := context.Background()
	if _, err := l.DB().Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		l.DB().Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	})
	u, err := url.Parse(l.PostgresDSN)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

func hasLeaseTable(t *testing.T, dsn string) bool {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var ok bool
	if err := conn.QueryRow(context.Background(), `SELECT to_regclass($1) IS NOT NULL`, lease.TableName).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

// notToxiproxy answers /version as Toxiproxy would, but to a browser too
// (Toxiproxy refuses browsers with 403), and lists no proxies. It counts
// the requests that would change anything.
type notToxiproxy struct {
	mu      sync.Mutex
	changes []string
}

func (f *notToxiproxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		f.mu.Lock()
		f.changes = append(f.changes, r.Method+" "+r.URL.Path)
		f.mu.Unlock()
	}
	switch r.URL.Path {
	case "/version":
		fmt.Fprint(w, `{"version":"2.12.0"}`)
	case "/proxies":
		fmt.Fprint(w, `{}`)
	default:
		http.NotFound(w, r)
	}
}

// TestUpTouchesNothingInALayerThatFailsItsIdentityChecks points Up at
// layers that are not what they claim: an HTTP service that is not
// Toxiproxy, and a real Toxiproxy on this host's network with proxies set
// to listen on 0.0.0.0. Each database holds an expired lease of a dead
// owner with a live proxy on its port. Up must refuse before it creates
// the lease table in an empty database or reclaims (deleting the proxy)
// in the other; the control case, the same layer set to listen on
// loopback, shows the reclaim does delete it when allowed.
func TestUpTouchesNothingInALayerThatFailsItsIdentityChecks(t *testing.T) {
	backing := shared.get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	fake := &notToxiproxy{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	real, stop, err := startLocalToxiproxy()
	if err != nil {
		t.Fatal(err)
	}
	defer stop(context.Background())

	me := reap.Self()
	dead := reap.Owner{Host: me.Host, Boot: me.Boot, PIDNS: me.PIDNS, PID: 1 << 30, Start: 1}.String()
	tests := []struct {
		name       string
		toxiproxy  string
		listenHost string
		refused    string // the failed check; "" when Up must proceed
	}{
		{"not Toxiproxy", srv.URL, "127.0.0.1", "toxiproxy /version"},
		{"proxies off loopback on the host network", real, "0.0.0.0", "proxy listen host"},
		{"control: the same Toxiproxy on loopback", real, "127.0.0.1", ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			port, err := freePort()
			if err != nil {
				t.Fatal(err)
			}
			ports := fmt.Sprintf("%d=127.0.0.1:%d,%d=127.0.0.1:%d", port, port, port+1, port+1)
			empty, held := scratchDB(t, backing), scratchDB(t, backing)

			// The residue a dead run left: an expired lease and its proxy.
			conn, err := pgx.Connect(ctx, held)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			if err := lease.Migrate(ctx, conn, []int{port, port + 1}); err != nil {
				t.Fatal(err)
			}
			old := lease.New(conn, []int{port}, nil, lease.WithOwner(dead), lease.WithTTL(time.Millisecond))
			if _, err := old.Acquire(ctx, "dead holder"); err != nil {
				t.Fatal(err)
			}
			tp := toxiproxy.NewClient(real)
			tp.UserAgent = "contested-test"
			name := fmt.Sprintf("residue-%d", i)
			if _, err := tp.CreateProxy(name, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), backing.PostgresUpstream); err != nil {
				t.Fatal(err)
			}
			defer func() {
				if p, err := tp.Proxy(name); err == nil {
					p.Delete()
				}
			}()

			for _, dsn := range []string{empty, held} {
				l, err := Up(ctx, Config{Kind: External, ToxiproxyURL: tt.toxiproxy, PostgresDSN: dsn,
					ProxyPorts: ports, ProxyListenHost: tt.listenHost, Log: testlog.Writer(t)})
				if tt.refused == "" {
					if err != nil {
						t.Fatalf("Up: %v", err)
					}
					l.Close(context.Background())
					continue
				}
				var pe *PreflightError
				if !errors.As(err, &pe) || !errors.Is(err, ErrCannotRun) || !strings.Contains(err.Error(), tt.refused) {
					t.Fatalf("Up: err = %v, want a PreflightError (ErrCannotRun) naming %q", err, tt.refused)
				}
			}

			_, err = tp.Proxy(name)
			proxyThere := err == nil
			tbl := lease.New(conn, []int{port}, nil)
			held2, err := tbl.Held(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if tt.refused != "" {
				if hasLeaseTable(t, empty) {
					t.Errorf("Up created %s in a database whose layer failed its checks", lease.TableName)
				}
				if !proxyThere || len(held2) != 1 {
					t.Errorf("Up reclaimed in a layer that failed its checks: proxy there %v, leases held %d (want true, 1)", proxyThere, len(held2))
				}
				if len(fake.changes) > 0 {
					t.Errorf("Up sent %v to a service that is not Toxiproxy", fake.changes)
				}
				return
			}
			if !hasLeaseTable(t, empty) || proxyThere || len(held2) != 0 {
				t.Errorf("control: table created %v, proxy deleted %v, lease freed %v; want all true (else this test cannot see a reclaim)",
					hasLeaseTable(t, empty), !proxyThere, len(held2) == 0)
			}
		})
	}
}

// TestExternalProxiesListenOnLoopbackByDefault: without
// CONTESTED_PROXY_LISTEN_HOST an external layer's proxies listen on
// 127.0.0.1, so that a Toxiproxy on this host's network exposes nothing.
func TestExternalProxiesListenOnLoopbackByDefault(t *testing.T) {
	l, err := upExternal(context.Background(), Config{Kind: External, ToxiproxyURL: "http://127.0.0.1:8474",
		PostgresDSN: "postgres://postgres:x@127.0.0.1:5432/contested"})
	if err != nil {
		t.Fatal(err)
	}
	if l.ProxyListenHost != "127.0.0.1" || !strings.HasPrefix(l.Ports[0].Listen, "127.0.0.1:") {
		t.Errorf("listen host %q, first port %+v; want 127.0.0.1", l.ProxyListenHost, l.Ports[0])
	}
	for _, bad := range []string{"everywhere", "10.0.0.300", "127.0.0.1:80"} {
		if _, err := Up(context.Background(), Config{Kind: External, ToxiproxyURL: "http://127.0.0.1:8474",
			PostgresDSN: "postgres://postgres:x@127.0.0.1:5432/contested", ProxyListenHost: bad}); !errors.Is(err, ErrConfig) {
			t.Errorf("listen host %q: err = %v, want ErrConfig", bad, err)
		}
	}
}

// TestProxyListenHostIsCheckedWhereToxiproxyRuns: a loopback listen is
// safe anywhere but unreachable inside a container; 0.0.0.0 is safe only
// inside a container that publishes its proxy ports on 127.0.0.1 alone.
// Toxiproxy runs on this host's network (in-process) and in two containers:
// one publishing on loopback only, one publishing its proxy port on a
// non-loopback address (the gateway of a private network, as reachable as
// 0.0.0.0 for the check, but not from off this machine).
func TestProxyListenHostIsCheckedWhereToxiproxyRuns(t *testing.T) {
	cli := dockerenv.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run := runid.New(time.Now())
	t.Cleanup(func() { reap.Sweep(context.Background(), cli, reap.Mine(run), testlog.Writer(t)) })
	nw, err := cli.NetworkCreate(ctx, "contested-"+run+"-listen", client.NetworkCreateOptions{Driver: "bridge", Labels: reap.Labels(run, "test-network")})
	if err != nil {
		t.Fatal(err)
	}
	ni, err := cli.NetworkInspect(ctx, nw.ID, client.NetworkInspectOptions{})
	if err != nil || len(ni.Network.IPAM.Config) == 0 {
		t.Fatalf("inspect network: %v", err)
	}
	gateway := ni.Network.IPAM.Config[0].Gateway
	img, err := images.Toxiproxy().Ensure(ctx, cli, "", testlog.Writer(t))
	if err != nil {
		t.Fatal(err)
	}
	loop := netip.MustParseAddr("127.0.0.1")
	start := func(proxyIP netip.Addr) string {
		tp, err := testcontainers.Run(ctx, img,
			testcontainers.WithCmd("-host=0.0.0.0", "-port=8474"),
			testcontainers.WithLabels(reap.Labels(run, "test-toxiproxy")),
			testcontainers.WithExposedPorts("8474/tcp", "20000/tcp"),
			testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
				hc.PortBindings = network.PortMap{
					network.MustParsePort("8474/tcp"):  {{HostIP: loop, HostPort: "0"}},
					network.MustParsePort("20000/tcp"): {{HostIP: proxyIP, HostPort: "0"}},
				}
			}),
			testcontainers.WithWaitStrategy(wait.ForLog("Starting Toxiproxy HTTP server")),
		)
		if err != nil {
			t.Fatalf("start a Toxiproxy container: %v", err)
		}
		insp, err := tp.Inspect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range insp.NetworkSettings.Ports[network.MustParsePort("8474/tcp")] {
			return "http://127.0.0.1:" + b.HostPort
		}
		t.Fatal("no control API binding")
		return ""
	}
	local, stop, err := startLocalToxiproxy()
	if err != nil {
		t.Fatal(err)
	}
	defer stop(context.Background())
	loopOnly, exposed := start(loop), start(gateway)

	tests := []struct {
		name, url, host string
		ok, hard        bool
		says            string
	}{
		{"host network, loopback", local, "127.0.0.1", true, false, "this host only"},
		{"host network, 0.0.0.0", local, "0.0.0.0", false, true, "this host's network"},
		{"container on loopback, 0.0.0.0", loopOnly, "0.0.0.0", true, false, "127.0.0.1 only"},
		{"container on loopback, loopback", loopOnly, "127.0.0.1", false, false, "cannot reach them"},
		{"container publishing the proxy port off loopback, 0.0.0.0", exposed, "0.0.0.0", false, true, gateway.String()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &Layer{Kind: External, ToxiproxyURL: tt.url, ProxyListenHost: tt.host, Ports: []ProxyPort{{Port: 20000}}}
			c := checkProxyListen(ctx, l, cli)
			if c.OK != tt.ok || c.Hard != tt.hard || !strings.Contains(c.Detail, tt.says) {
				t.Errorf("check = ok %v, hard %v, %q; want ok %v, hard %v, saying %q", c.OK, c.Hard, c.Detail, tt.ok, tt.hard, tt.says)
			}
		})
	}
}

// TestASharedRunIDIsMadeUniquePerLayer: CONTESTED_RUN_ID handed to every
// package of `go test ./...` gives each layer a process starts an id of
// its own, while a layer it attaches to (a battery child's) keeps it; a
// bad id is refused before anything starts.
func TestASharedRunIDIsMadeUniquePerLayer(t *testing.T) {
	tier.Full(t, "a fault layer")
	t.Setenv(envvar.RunID, "x")
	t.Setenv(envvar.Layer, "")
	cfg, err := ConfigFromEnv()
	if err != nil || !cfg.SharedRunID || cfg.RunID != "x" {
		t.Fatalf("ConfigFromEnv: %+v, %v; want run id x, shared", cfg, err)
	}
	a, b := runid.Unique(cfg.RunID), runid.Unique(cfg.RunID)
	if a == b || !strings.HasPrefix(a, "x-") || runid.Check(a) != nil {
		t.Errorf("two layers of run x got %q and %q; want distinct valid x-… ids", a, b)
	}
	for _, bad := range []string{"bad/id", "-lead", "a b", strings.Repeat("r", runid.MaxLen+1), "é"} {
		t.Setenv(envvar.RunID, bad)
		if _, err := ConfigFromEnv(); !errors.Is(err, ErrConfig) || !errors.Is(err, runid.ErrBad) {
			t.Errorf("%s=%q: err = %v, want ErrConfig and runid.ErrBad", envvar.RunID, bad, err)
		}
	}
	t.Setenv(envvar.RunID, "")
	if _, err := ConfigFromEnv(); !errors.Is(err, ErrConfig) {
		t.Errorf("%s set but empty: err = %v, want ErrConfig", envvar.RunID, err)
	}

	// Two embedded layers from the same shared id, at once.
	if _, err := postgresBinaries(""); err != nil {
		dockerenv.SkipOrFail(t, err.Error())
	}
	var wg sync.WaitGroup
	ids := make([]string, 2)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := Up(context.Background(), Config{Kind: Embedded, RunID: "x", SharedRunID: true, Log: testlog.Writer(t)})
			if err != nil {
				t.Error(err)
				return
			}
			defer l.Close(context.Background())
			ids[i] = l.RunID
			// Attaching to it keeps its id: a battery child shares the run.
			child, err := Up(context.Background(), Config{Kind: External, ToxiproxyURL: l.ToxiproxyURL, PostgresDSN: l.PostgresDSN,
				ProxyPorts: FormatProxyPorts(l.Ports), ProxyListenHost: l.ProxyListenHost, PostgresUpstream: l.PostgresUpstream,
				RunID: l.RunID, SharedRunID: true})
			if err != nil {
				t.Error(err)
				return
			}
			defer child.Close(context.Background())
			if child.RunID != l.RunID {
				t.Errorf("attached layer run id %q, want its parent's %q", child.RunID, l.RunID)
			}
		}()
	}
	wg.Wait()
	if ids[0] == ids[1] || !strings.HasPrefix(ids[0], "x-") || !strings.HasPrefix(ids[1], "x-") {
		t.Errorf("two layers started with the shared run id x carry %q and %q; want distinct x-… ids", ids[0], ids[1])
	}
}

// TestTeardownRemovesOnlyWhatThisProcessCreated: a resource labelled with
// the layer's run id but owned by another process survives the layer's
// teardown; the layer's own containers and network do not.
func TestTeardownRemovesOnlyWhatThisProcessCreated(t *testing.T) {
	cfg := requireContainers(t)
	cli := dockerenv.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cfg.Log = testlog.Writer(t)
	l, err := Up(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(context.Background())
	labels := reap.Labels(l.RunID, "test-network")
	me := reap.Self()
	labels[reap.LabelOwner] = reap.Owner{Host: me.Host, Boot: me.Boot, PIDNS: me.PIDNS + 1, PID: 1, Start: 1}.String()
	other := "contested-" + l.RunID + "-another-process"
	if _, err := cli.NetworkCreate(ctx, other, client.NetworkCreateOptions{Driver: "bridge", Labels: labels}); err != nil {
		t.Fatal(err)
	}
	defer cli.NetworkRemove(context.Background(), other, client.NetworkRemoveOptions{})
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	left, err := reap.Leftovers(ctx, cli, reap.Run(l.RunID))
	if err != nil {
		t.Fatal(err)
	}
	if len(left.Containers) != 0 || len(left.Networks) != 1 || left.Networks[0] != other {
		t.Errorf("after teardown, run %s left %+v; want only %s, which another process owns", l.RunID, left, other)
	}
}
