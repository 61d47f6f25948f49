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
