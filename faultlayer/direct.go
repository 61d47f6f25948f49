package faultlayer

import (
	"errors"
	"net"
	"net/netip"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
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
