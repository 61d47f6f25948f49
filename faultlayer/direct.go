package faultlayer

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

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

// The victims' connections through the proxies cross the same userland
// proxy twice over (to Toxiproxy's published port, then Toxiproxy to
// Postgres on the network), so once the pool went direct, the proxy ports
// are dialled on Toxiproxy's address on the layer's network too
// (ToxiproxyDirect, checked by one dial to its control port): a leg's DSN,
// Addr and the ports handed to child processes name that address, while
// the warm layer's record keeps the published ones for any other process
// to route for itself.

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

// routeProxies points the proxy ports at Toxiproxy on the layer's network
// when the pool went direct there and Toxiproxy's control port answers on
// it; the ports as published are kept for PublishedPorts. Ports a caller
// mapped elsewhere (an external layer's explicit port=address) stay.
func (l *Layer) routeProxies() {
	if !l.direct || l.ToxiproxyDirect == "" || l.published != nil {
		return
	}
	ap, err := parseDirect(net.JoinHostPort(l.ToxiproxyDirect, strconv.Itoa(controlPort)))
	if err != nil {
		return
	}
	c, err := net.DialTimeout("tcp", ap.String(), directProbe)
	if err != nil {
		return
	}
	c.Close()
	l.published = slices.Clone(l.Ports)
	for i, p := range l.Ports {
		if host, _, err := net.SplitHostPort(p.Dial); err == nil && host == "127.0.0.1" {
			l.Ports[i].Dial = net.JoinHostPort(l.ToxiproxyDirect, strconv.Itoa(p.Port))
		}
	}
}

// PublishedPorts are the proxy ports as published on 127.0.0.1, whatever
// route this process dials them by.
func (l *Layer) PublishedPorts() []ProxyPort {
	if l.published != nil {
		return l.published
	}
	return l.Ports
}

// ProxiesDirect reports whether the proxy ports are dialled on the layer's
// network (routeProxies).
func (l *Layer) ProxiesDirect() bool { return l.published != nil }

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
