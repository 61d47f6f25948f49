package faultlayer

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/contested/contested/internal/envvar"
)

// upExternal reaches a layer someone else runs (the compose devstack, a CI
// service). Nothing is started and Close leaves it running; Up's identity
// checks decide whether it is used. Proxy ports default to
// DefaultProxyPorts, dialled on the control API's host and listened on
// DefaultExternalListenHost (loopback) unless CONTESTED_PROXY_LISTEN_HOST
// says otherwise: a Toxiproxy in a container (the compose devstack) needs
// 0.0.0.0 inside it, which preflight accepts only when the container
// publishes those ports on 127.0.0.1 alone.
func upExternal(_ context.Context, cfg Config) (*Layer, error) {
	base, err := toxiproxyBase(cfg.ToxiproxyURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrConfig, envvar.ToxiproxyURL, err)
	}
	listenHost := cfg.ProxyListenHost
	if listenHost == "" {
		listenHost = DefaultExternalListenHost
	}
	spec := cfg.ProxyPorts
	if spec == "" {
		spec = DefaultProxyPorts
	}
	ports, err := ParseProxyPorts(spec, listenHost, base.Hostname())
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrConfig, envvar.ProxyPorts, err)
	}
	upstream := cfg.PostgresUpstream
	if upstream == "" {
		pc, err := pgx.ParseConfig(cfg.PostgresDSN)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrConfig, envvar.PostgresDSN, err)
		}
		upstream = net.JoinHostPort(pc.Host, fmt.Sprint(pc.Port))
	}
	l := &Layer{
		ToxiproxyURL:     base.String(),
		PostgresDSN:      cfg.PostgresDSN,
		PostgresUpstream: upstream,
		PostgresDirect:   cfg.PostgresDirect,
		ProxyListenHost:  listenHost,
		Ports:            ports,
	}
	return l, nil
}

// DefaultExternalListenHost is where an external layer's proxies listen
// unless CONTESTED_PROXY_LISTEN_HOST says otherwise: loopback, so that a
// Toxiproxy on this host's network never exposes the test plane.
const DefaultExternalListenHost = "127.0.0.1"

// fetchVersion GETs /version with the given User-Agent and returns the
// status code; a transport error is returned as is.
func fetchVersion(ctx context.Context, base, userAgent string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/version", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("User-Agent", userAgent)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, fmt.Errorf("GET /version: %s", resp.Status)
	}
	return resp.StatusCode, nil
}

// execSQL runs one statement on a fresh connection.
func execSQL(ctx context.Context, dsn, sql string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, sql)
	return err
}
