package faultlayer

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestParseDirect(t *testing.T) {
	tests := []struct {
		name, addr string
		ok         bool
	}{
		{"a docker network address", "172.18.0.3:5432", true},
		{"another private range", "10.1.2.3:5432", true},
		{"loopback", "127.0.0.1:5432", true},
		{"a public address", "8.8.8.8:5432", false},
		{"a host name", "postgres:5432", false},
		{"no port", "172.18.0.3", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := parseDirect(tt.addr); (err == nil) != tt.ok {
				t.Errorf("parseDirect(%q) = %v, want ok %v", tt.addr, err, tt.ok)
			}
		})
	}
	t.Setenv("CONTESTED_PG_DIRECT", "8.8.8.8:5432")
	if _, err := ConfigFromEnv(); !errors.Is(err, ErrConfig) {
		t.Errorf("ConfigFromEnv with CONTESTED_PG_DIRECT on a public address: %v, want ErrConfig: the test plane's password would go there", err)
	}
}

// TestDirectRouteOnlyWhereItAnswers: the pool is pointed at the direct
// address only when a dial there succeeds, with its own host and port kept
// as the fallback; otherwise it is left as it was.
func TestDirectRouteOnlyWhereItAnswers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	answers := ln.Addr().String()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	silent := closed.Addr().String()
	closed.Close()

	cfg := &pgconn.Config{Host: "127.0.0.1", Port: 5433}
	if directRoute(cfg, silent) || cfg.Host != "127.0.0.1" || cfg.Port != 5433 || len(cfg.Fallbacks) != 0 {
		t.Errorf("directRoute to %s, where nothing listens: %+v, want the config untouched", silent, cfg)
	}
	if !directRoute(cfg, answers) {
		t.Fatalf("directRoute to %s, which answers: false", answers)
	}
	if got := net.JoinHostPort(cfg.Host, itoa(int(cfg.Port))); got != answers {
		t.Errorf("directRoute: config points at %s, want %s", got, answers)
	}
	if len(cfg.Fallbacks) != 1 || cfg.Fallbacks[0].Host != "127.0.0.1" || cfg.Fallbacks[0].Port != 5433 {
		t.Errorf("directRoute: fallbacks %+v, want the published 127.0.0.1:5433", cfg.Fallbacks)
	}
}

// TestTheLayersPoolGoesDirect: on a layer that knows Postgres' address on
// its private network (a containers layer, or a child of one), the pool's
// connections go there, and preflight says so.
func TestTheLayersPoolGoesDirect(t *testing.T) {
	l := shared.get(t)
	if l.PostgresDirect == "" {
		if l.Kind == Containers {
			t.Fatalf("a containers layer recorded no address of Postgres on its network %q", l.Network)
		}
		t.Skipf("the %s layer has no direct address", l.Kind)
	}
	c, err := l.DB().Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if got := c.Conn().PgConn().Conn().RemoteAddr().String(); got != l.PostgresDirect {
		t.Errorf("the pool's connection goes to %s, want %s (Postgres on the layer's network)", got, l.PostgresDirect)
	}
	if ch := checkPostgres(context.Background(), l); !ch.OK || !strings.Contains(ch.Detail, l.PostgresDirect) {
		t.Errorf("preflight's Postgres check: %+v, want it to name %s", ch, l.PostgresDirect)
	}
}

// TestProxiesGoDirectOnlyWhereToxiproxyAnswers: the proxy ports are dialled
// on Toxiproxy's network address only when the pool went direct and its
// control port answers there; the published ports are kept either way, and
// a port mapped elsewhere stays as mapped.
func TestProxiesGoDirectOnlyWhereToxiproxyAnswers(t *testing.T) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.2", itoa(controlPort)))
	if err != nil {
		t.Skipf("no listener for a fake Toxiproxy on 127.0.0.2:%d: %v", controlPort, err)
	}
	defer ln.Close()
	ports := func() []ProxyPort {
		return []ProxyPort{{Port: 20000, Dial: "127.0.0.1:41000"}, {Port: 20001, Dial: "127.0.0.1:41001"}, {Port: 20002, Dial: "toxiproxy:20002"}}
	}
	tests := []struct {
		name   string
		direct bool
		ip     string
		want   []string // the ports' dial addresses after routing
	}{
		{"direct and answering", true, "127.0.0.2", []string{"127.0.0.2:20000", "127.0.0.2:20001", "toxiproxy:20002"}},
		{"the pool did not go direct", false, "127.0.0.2", []string{"127.0.0.1:41000", "127.0.0.1:41001", "toxiproxy:20002"}},
		{"nothing answers there", true, "127.0.0.3", []string{"127.0.0.1:41000", "127.0.0.1:41001", "toxiproxy:20002"}},
		{"no address known", true, "", []string{"127.0.0.1:41000", "127.0.0.1:41001", "toxiproxy:20002"}},
		{"a public address", true, "8.8.8.8", []string{"127.0.0.1:41000", "127.0.0.1:41001", "toxiproxy:20002"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &Layer{direct: tt.direct, ToxiproxyDirect: tt.ip, Ports: ports()}
			l.routeProxies()
			var got []string
			for _, p := range l.Ports {
				got = append(got, p.Dial)
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("dial addresses %v, want %v", got, tt.want)
			}
			if pub := l.PublishedPorts(); pub[0].Dial != "127.0.0.1:41000" || pub[1].Dial != "127.0.0.1:41001" {
				t.Errorf("published ports %+v, want the 127.0.0.1 ones kept", pub)
			}
			if l.ProxiesDirect() != (got[0] != "127.0.0.1:41000") {
				t.Errorf("ProxiesDirect() = %v with dial addresses %v", l.ProxiesDirect(), got)
			}
		})
	}
}

// TestLegsDialToxiproxyOnTheLayersNetwork: on a containers layer whose pool
// went direct, the proxy ports are dialled on Toxiproxy's address on the
// layer's network (and a query goes through one), the published ones are
// what the warm record would keep, victims' direct DSNs reach Postgres on
// the network too, and preflight says so.
func TestLegsDialToxiproxyOnTheLayersNetwork(t *testing.T) {
	l := shared.get(t)
	if !l.direct || l.ToxiproxyDirect == "" {
		if l.Kind == Containers {
			t.Fatalf("a containers layer went direct %v, recorded Toxiproxy at %q on its network %q", l.direct, l.ToxiproxyDirect, l.Network)
		}
		t.Skipf("the %s layer has no direct route", l.Kind)
	}
	if !l.ProxiesDirect() {
		t.Fatalf("the proxy ports are dialled at %v, want Toxiproxy at %s", l.Ports, l.ToxiproxyDirect)
	}
	for i, p := range l.Ports {
		if host, _, _ := net.SplitHostPort(p.Dial); host != l.ToxiproxyDirect {
			t.Errorf("port %d is dialled at %s, want %s", p.Port, p.Dial, l.ToxiproxyDirect)
		}
		if host, _, _ := net.SplitHostPort(l.PublishedPorts()[i].Dial); host != "127.0.0.1" {
			t.Errorf("port %d is published at %s, want 127.0.0.1", p.Port, l.PublishedPorts()[i].Dial)
		}
	}
	proxiedQuery(t, context.Background(), l)
	if addr, err := l.PostgresAddr(); err != nil || addr != l.PostgresDirect {
		t.Errorf("PostgresAddr() = %q, %v; want %s", addr, err, l.PostgresDirect)
	}
	for _, ch := range RunPreflight(context.Background(), l).Checks {
		if ch.Name == "proxy listen host" && (!ch.OK || !strings.Contains(ch.Detail, "legs dial them on the layer's network at "+l.ToxiproxyDirect)) {
			t.Errorf("preflight's proxy listen check: %+v, want it to name %s", ch, l.ToxiproxyDirect)
		}
	}
}
