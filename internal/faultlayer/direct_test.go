package faultlayer

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/contested/contested/internal/dockerenv"
	"github.com/contested/contested/internal/testlog"
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

// networkDocker answers NetworkInspect with one gateway.
type networkDocker struct {
	gateway netip.Addr
	err     error
}

func (d networkDocker) NetworkInspect(context.Context, string, client.NetworkInspectOptions) (client.NetworkInspectResult, error) {
	var res client.NetworkInspectResult
	res.Network.IPAM.Config = []network.IPAMConfig{{Gateway: d.gateway}}
	return res, d.err
}

// TestTheHostIsOnANetworkWhoseGatewayIsOneOfItsAddresses: the proxy ports
// go unpublished only when this host has the network's gateway address
// (the engine's bridge is here), and when nothing answers the question.
func TestTheHostIsOnANetworkWhoseGatewayIsOneOfItsAddresses(t *testing.T) {
	tests := []struct {
		name string
		d    networkDocker
		want bool
	}{
		{"the gateway is this host's", networkDocker{gateway: netip.MustParseAddr("127.0.0.1")}, true},
		{"the gateway is elsewhere (Docker Desktop's VM, a remote engine)", networkDocker{gateway: netip.MustParseAddr("192.0.2.1")}, false},
		{"no gateway", networkDocker{}, false},
		{"the engine does not answer", networkDocker{gateway: netip.MustParseAddr("127.0.0.1"), err: errors.New("no engine")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := hostOnNetwork(context.Background(), tt.d, "n1"); got != tt.want {
				t.Errorf("hostOnNetwork = %v, want %v", got, tt.want)
			}
		})
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	p, _ := strconv.Atoi(port)
	if !answers("127.0.0.1", p) {
		t.Errorf("answers(127.0.0.1, %d) = false with a listener there", p)
	}
	ln.Close()
	if answers("127.0.0.1", p) || answers("8.8.8.8", 53) || answers("", p) {
		t.Error("answers is true where nothing listens, for a public address or for no address")
	}
}

// TestLegsDialToxiproxyOnTheLayersNetwork: on a containers layer on a
// network this host is on, the proxy ports are dialled at Toxiproxy's
// address there and not published (the Postgres container, whose network
// namespace Toxiproxy shares, publishes Postgres and the control API
// only), a query goes through one, victims' direct DSNs reach Postgres on
// the network too, and preflight says so.
func TestLegsDialToxiproxyOnTheLayersNetwork(t *testing.T) {
	l := shared.get(t)
	if !l.direct || l.ToxiproxyDirect == "" {
		if l.Kind == Containers {
			t.Fatalf("a containers layer went direct %v, recorded Toxiproxy at %q on its network %q", l.direct, l.ToxiproxyDirect, l.Network)
		}
		t.Skipf("the %s layer has no direct route", l.Kind)
	}
	for _, p := range l.Ports {
		if host, _, _ := net.SplitHostPort(p.Dial); host != l.ToxiproxyDirect {
			t.Errorf("port %d is dialled at %s, want %s", p.Port, p.Dial, l.ToxiproxyDirect)
		}
	}
	pub, err := inspectPublisher(context.Background(), dockerenv.Require(t), l.ToxiproxyContainer)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(pub.ports); n != 2 {
		t.Errorf("%s publishes %d ports (%v), want Postgres' and the control API's alone", pub.name, n, pub.ports)
	}
	proxiedQuery(t, context.Background(), l)
	if addr, err := l.PostgresAddr(); err != nil || addr != l.PostgresDirect {
		t.Errorf("PostgresAddr() = %q, %v; want %s", addr, err, l.PostgresDirect)
	}
	for _, ch := range RunPreflight(context.Background(), l).Checks {
		if ch.Name == "proxy listen host" && (!ch.OK || !strings.Contains(ch.Detail, "publishes none of them: legs dial them on the layer's network at "+l.ToxiproxyDirect)) {
			t.Errorf("preflight's proxy listen check: %+v, want it to name %s", ch, l.ToxiproxyDirect)
		}
	}
}

// TestAToxiproxyThatDoesNotAnswerOnTheNetworkIsPublished: when this host
// looks on the layer's network and Toxiproxy does not answer there, it is
// started again with its proxy ports published, and the legs dial those.
func TestAToxiproxyThatDoesNotAnswerOnTheNetworkIsPublished(t *testing.T) {
	cfg := requireContainers(t)
	toxiproxyAnswers = func(string, int) bool { return false }
	t.Cleanup(func() { toxiproxyAnswers = answers })
	var log strings.Builder
	cfg.Log = io.MultiWriter(&log, testlog.Writer(t))
	l, err := Up(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(context.Background())
	if !strings.Contains(log.String(), "starting the layer again with its proxy ports published") {
		t.Errorf("the bring-up did not say it published the ports after all:\n%s", log.String())
	}
	for _, p := range l.Ports {
		if host, _, _ := net.SplitHostPort(p.Dial); host != "127.0.0.1" {
			t.Errorf("port %d is dialled at %s, want its 127.0.0.1 binding", p.Port, p.Dial)
		}
	}
	proxiedQuery(t, context.Background(), l)
}
