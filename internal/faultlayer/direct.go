package faultlayer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/moby/moby/client"

	"github.com/contested/contested/internal/secret"
)

// The layer's own connections to the test-plane Postgres (leases, the
// armer's victims and spares, preflight) carry most of a run's statements.
// Through the published port each one crosses the engine's userland proxy
// (docker-proxy), which on two cores costs as much CPU as the client and
// more than Postgres itself: lease pairs with 16 clients went from about
// 1900/s to 2650-2900/s, and bare round trips doubled, on the layer's
// network instead. So a containers layer records where Postgres answers on
// its private network (PostgresDirect, handed to child processes as
// CONTESTED_PG_DIRECT), and the pool goes there when this host reaches it
// (Linux; not Docker Desktop, where container addresses do not route), the
// published port kept as the fallback. PostgresDSN, the coordinate other
// tools read, stays the published port.

// The legs' connections through the proxies crossed docker-proxy too, on
// their way to Toxiproxy's published ports, and each of those 32 published
// ports cost the engine a docker-proxy process and firewall rules at start
// and at teardown (1.7 of the 2 seconds a Toxiproxy container took to
// remove). So when this host is on the layer's network (hostOnNetwork,
// asked of the network before anything starts on it), the proxy ports are
// not published: they are dialled at Toxiproxy's address there
// (ToxiproxyDirect), checked by one dial to its control port once it runs,
// and published after all, Toxiproxy started again, if that dial fails.

// directProbe bounds the one dial that decides whether the host reaches
// the direct address; an address that does not route fails at once or
// within it.
const directProbe = 250 * time.Millisecond

// errNotPrivate: a direct address must be an IP on a private network (a
// Docker network's) or loopback: the test plane's password goes there.
var errNotPrivate = errors.New("not an ip:port on a private network or loopback")

// parseDirect parses and checks a direct address.
func parseDirect(addr string) (netip.AddrPort, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return ap, err
	}
	if a := ap.Addr(); !a.IsPrivate() && !a.IsLoopback() {
		return ap, errNotPrivate
	}
	return ap, nil
}

// directRoute points cfg at the direct address when it is valid and
// answers a TCP dial within directProbe, keeping cfg's own host and port
// as a fallback, and reports whether it did.
func directRoute(cfg *pgconn.Config, addr string) bool {
	ap, err := parseDirect(addr)
	if err != nil {
		return false
	}
	c, err := net.DialTimeout("tcp", addr, directProbe)
	if err != nil {
		return false
	}
	c.Close()
	fallback := &pgconn.FallbackConfig{Host: cfg.Host, Port: cfg.Port, TLSConfig: cfg.TLSConfig}
	cfg.Fallbacks = append([]*pgconn.FallbackConfig{fallback}, cfg.Fallbacks...)
	cfg.Host, cfg.Port = ap.Addr().String(), ap.Port()
	return true
}

// hostOnNetwork reports whether this host has an address on the Docker
// network id (its bridge's gateway): then the addresses of the network's
// containers route here, as on Linux with the engine in this host's network
// namespace, and not under Docker Desktop or a rootless or remote engine.
func hostOnNetwork(ctx context.Context, d interface {
	NetworkInspect(context.Context, string, client.NetworkInspectOptions) (client.NetworkInspectResult, error)
}, id string) bool {
	res, err := d.NetworkInspect(ctx, id, client.NetworkInspectOptions{})
	if err != nil {
		return false
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, c := range res.Network.IPAM.Config {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && c.Gateway.IsValid() && n.IP.Equal(net.IP(c.Gateway.AsSlice())) {
				return true
			}
		}
	}
	return false
}

// toxiproxyAnswers is answers, as the containers provider asks it of
// Toxiproxy on the network; a test takes it away to walk the fallback.
var toxiproxyAnswers = answers

// answers reports whether ip:port, a private or loopback address, takes a
// TCP connection within directProbe.
func answers(ip string, port int) bool {
	ap, err := parseDirect(net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		return false
	}
	c, err := net.DialTimeout("tcp", ap.String(), directProbe)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// PostgresAddr is where this process reaches the test-plane Postgres
// without a proxy, host:port: on the layer's network when the pool goes
// there, else the DSN's published address. A victim's direct DSN (the
// truth its oracles read) is built on it.
func (l *Layer) PostgresAddr() (string, error) {
	if l.direct {
		return l.PostgresDirect, nil
	}
	cfg, err := pgconn.ParseConfig(l.PostgresDSN)
	if err != nil {
		return "", fmt.Errorf("%w: parse the test-plane DSN: %s", ErrConfig, secret.ScrubString(err.Error()))
	}
	return net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), nil
}
