package faultlayer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/moby/moby/client"

	"github.com/contested/contested/internal/dockerenv"
	"github.com/contested/contested/internal/reap"
	"github.com/contested/contested/internal/testlog"
	"github.com/contested/contested/internal/tier"
)

// proxiedQuery leases a port, puts a proxy to Postgres on it, runs a query
// through the proxy and cleans up, as a leg would.
func proxiedQuery(t *testing.T, ctx context.Context, l *Layer) {
	t.Helper()
	ls, err := l.Leases().Acquire(ctx, t.Name())
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	defer l.Leases().Release(context.Background(), ls)
	pp, _ := l.Port(ls.Port)
	proxy, err := l.Toxiproxy().CreateProxy("test-"+strings.ReplaceAll(t.Name(), "/", "-"), pp.Listen, l.PostgresUpstream)
	if err != nil {
		t.Fatalf("create proxy on %s: %v", pp.Listen, err)
	}
	defer proxy.Delete()

	cfg, err := pgx.ParseConfig(l.PostgresDSN)
	if err != nil {
		t.Fatal(err)
	}
	direct := cfg.Port
	host, port, _ := strings.Cut(pp.Dial, ":")
	cfg.Host = host
	var p int
	if _, err := fmtSscan(port, &p); err != nil {
		t.Fatal(err)
	}
	cfg.Port = uint16(p)
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("connect through the proxy at %s: %v", pp.Dial, err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()").Scan(&n); err != nil {
		t.Fatalf("query through the proxy: %v", err)
	}
	if cfg.Port == direct {
		t.Fatalf("the proxy port %d is Postgres' own port: the query did not go through Toxiproxy", cfg.Port)
	}
	// The proxy saw this connection: prove it from the injector side by
	// disabling the proxy, which must break the connection.
	if err := proxy.Disable(); err != nil {
		t.Fatal(err)
	}
	if err := conn.Ping(ctx); err == nil {
		t.Fatal("ping succeeded with the proxy disabled: the connection does not go through Toxiproxy")
	}
}

// TestProvidersBringUpAProxiedPostgres brings up each provider and runs a
// query through a proxy. The external case reaches a layer this test brings
// up with whichever provider can come up here, so it runs on a machine
// where containers cannot; the containers case skips there (fails in CI).
// dataOnTmpfs checks that a containers layer's Postgres keeps its data
// directory on the tmpfs the layer mounts, not on the container's overlay:
// the container is configured so, and the server says it runs there.
func dataOnTmpfs(t *testing.T, ctx context.Context, l *Layer) {
	t.Helper()
	cli := dockerenv.Require(t)
	r, err := cli.ContainerInspect(ctx, "contested-"+l.RunID+"-postgres", client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if opts, ok := r.Container.HostConfig.Tmpfs[pgDataDir]; !ok || opts != pgDataTmpfs {
		t.Errorf("the Postgres container's tmpfs mounts are %v, want %s on %s", r.Container.HostConfig.Tmpfs, pgDataTmpfs, pgDataDir)
	}
	conn, err := pgx.Connect(ctx, l.PostgresDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var dir string
	if err := conn.QueryRow(ctx, "SELECT current_setting('data_directory')").Scan(&dir); err != nil {
		t.Fatal(err)
	}
	if dir != pgDataDir {
		t.Errorf("Postgres runs in %s, want %s (the tmpfs)", dir, pgDataDir)
	}
}

func TestProvidersBringUpAProxiedPostgres(t *testing.T) {
	tier.Full(t, "a fault layer")
	tests := []struct {
		name string
		kind Kind
	}{
		{"containers", Containers},
		{"embedded", Embedded},
		{"external", External},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			var cfg Config
			var backing *Layer
			switch tt.kind {
			case Containers:
				cfg = requireContainers(t)
			case Embedded:
				if _, err := postgresBinaries(""); err != nil {
					dockerenv.SkipOrFail(t, err.Error())
				}
				cfg = ConfigFor(Embedded)
			case External:
				bcfg := ConfigFor(Containers)
				if err := ContainersCanRun(ctx, bcfg); err != nil {
					if _, berr := postgresBinaries(""); berr != nil {
						dockerenv.SkipOrFail(t, fmt.Sprintf("no layer to reach externally: %v, and %v", err, berr))
					}
					t.Logf("the external layer is an embedded one: %v", err)
					bcfg = ConfigFor(Embedded)
				}
				bcfg.Log = testlog.Writer(t)
				var err error
				backing, err = Up(ctx, bcfg)
				if err != nil {
					t.Fatalf("bring up the layer to reach externally: %v", err)
				}
				defer backing.Close(context.Background())
				cfg = Config{Kind: External,
					ToxiproxyURL: backing.ToxiproxyURL, PostgresDSN: backing.PostgresDSN,
					ProxyPorts: FormatProxyPorts(backing.Ports), ProxyListenHost: backing.ProxyListenHost,
					PostgresUpstream: backing.PostgresUpstream}
			}
			cfg.Log = testlog.Writer(t)
			l, err := Up(ctx, cfg)
			if err != nil {
				t.Fatalf("Up(%s): %v", tt.kind, err)
			}
			if l.Kind != tt.kind {
				t.Errorf("Kind = %s, want %s", l.Kind, tt.kind)
			}
			proxiedQuery(t, ctx, l)
			if tt.kind == Containers {
				dataOnTmpfs(t, ctx, l)
			}

			p := RunPreflight(ctx, l)
			if !p.OK() {
				var b strings.Builder
				p.Write(&b)
				t.Errorf("preflight on a fresh %s layer failed:\n%s", tt.kind, b.String())
			}

			if err := l.Close(context.Background()); err != nil {
				t.Errorf("Close: %v", err)
			}
			switch tt.kind {
			case Containers:
				cli := dockerenv.Require(t)
				left, err := reap.Leftovers(ctx, cli, reap.Run(l.RunID))
				if err != nil {
					t.Fatal(err)
				}
				if !left.Empty() {
					t.Errorf("after Close, run %s left %s: %+v", l.RunID, left, left)
				}
			case Embedded:
				dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), embeddedDirPrefix+"*"))
				for _, d := range dirs {
					if b, err := os.ReadFile(filepath.Join(d, "owner")); err == nil && strings.Contains(string(b), l.RunID) {
						t.Errorf("after Close, the embedded data directory %s is still there", d)
					}
				}
			case External:
				if _, err := backing.Toxiproxy().Proxies(); err != nil {
					t.Errorf("closing the external layer stopped the layer it reached: %v", err)
				}
			}
		})
	}
}

func TestBadConfigurationIsRefusedBeforeAnythingStarts(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want error
		says string
	}{
		{"unknown layer", Config{Kind: "bogus"}, ErrConfig, `CONTESTED_LAYER="bogus" is not one of auto, containers, embedded, external`},
		{"url without dsn", Config{ToxiproxyURL: "http://127.0.0.1:8474"}, ErrConfig, "set both or neither"},
		{"external without coordinates", Config{Kind: External}, ErrConfig, "needs CONTESTED_TOXIPROXY_URL and CONTESTED_PG_DSN"},
		{"bad url", Config{ToxiproxyURL: "ftp://x:1", PostgresDSN: "postgres://u@127.0.0.1:1/db"}, ErrConfig, "scheme must be http"},
		{"one port", Config{ProxyPorts: "20000"}, ErrConfig, "too few"},
		{"overlapping ranges", Config{ProxyPorts: "20000-20010,20005-20020"}, ErrConfig, "listed twice (ranges overlap)"},
		{"backwards range", Config{ProxyPorts: "20010-20000"}, ErrConfig, "runs backwards"},
		{"range over the control port", Config{ProxyPorts: "8470-8480"}, ErrConfig, "overlaps the Toxiproxy control API"},
		{"range too wide", Config{ProxyPorts: "20000-21000"}, ErrConfig, "at most 256"},
		{"not a port", Config{ProxyPorts: "twenty"}, ErrConfig, "is not a port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Up(context.Background(), tt.cfg)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Up: err = %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.says) {
				t.Errorf("Up: err = %q, want it to say %q", err, tt.says)
			}
		})
	}
}

func TestUnreachableExternalLayerCannotRun(t *testing.T) {
	port, err := freePort() // nothing listens there
	if err != nil {
		t.Fatal(err)
	}
	_, err = Up(context.Background(), Config{Kind: External,
		ToxiproxyURL: "http://127.0.0.1:" + itoa(port), PostgresDSN: "postgres://postgres:x@127.0.0.1:" + itoa(port) + "/contested"})
	if !errors.Is(err, ErrCannotRun) || !strings.Contains(err.Error(), "does not answer") {
		t.Fatalf("Up with an unreachable Toxiproxy: err = %v, want ErrCannotRun saying it does not answer", err)
	}
}

func TestExternalPostgresThatRefusesUsCannotRun(t *testing.T) {
	l := shared.get(t)
	cfg, err := pgx.ParseConfig(l.PostgresDSN)
	if err != nil {
		t.Fatal(err)
	}
	// The same refusal for every DSN form pgx accepts: the message quotes
	// the DSN, never its password.
	for _, bad := range []string{
		"postgres://postgres:wrong-password@" + cfg.Host + ":" + itoa(int(cfg.Port)) + "/contested?sslmode=disable",
		"postgres://postgres@" + cfg.Host + ":" + itoa(int(cfg.Port)) + "/contested?sslmode=disable&password=wrong-password",
		"host=" + cfg.Host + " port=" + itoa(int(cfg.Port)) + " user=postgres password=wrong-password dbname=contested sslmode=disable",
		"host=" + cfg.Host + " port=" + itoa(int(cfg.Port)) + " user=postgres password='wrong password' dbname=contested sslmode=disable",
	} {
		_, err = Up(context.Background(), Config{Kind: External, ToxiproxyURL: l.ToxiproxyURL, PostgresDSN: bad,
			ProxyPorts: FormatProxyPorts(l.Ports), ProxyListenHost: l.ProxyListenHost, PostgresUpstream: l.PostgresUpstream})
		if !errors.Is(err, ErrCannotRun) || !strings.Contains(err.Error(), "refused us") {
			t.Fatalf("Up with a wrong password: err = %v, want ErrCannotRun saying Postgres refused us", err)
		}
		if strings.Contains(err.Error(), "wrong-password") || strings.Contains(err.Error(), "wrong password") {
			t.Errorf("the error leaks the password: %v", err)
		}
	}
}
