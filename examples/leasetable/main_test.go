package leasetable_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/contested/contested/contested"
	"github.com/contested/contested/faultlayer/faulttest"
	"github.com/contested/contested/internal/reexec"
)

func TestMain(m *testing.M) {
	reexec.Main(reexec.Roles{"lease-holder": holderProcess})
	contested.Main(m)
}

// victimDB gives a test a database of its own on the fault layer's Postgres, for legs that
// bring none (crash-and-resume): created through PgFaultArmer, so it is a harness database
// the sweep knows, and dropped when the test ends. It returns the direct DSN.
func victimDB(tb testing.TB) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	layer := faulttest.Layer(tb)
	armer, err := contested.NewPgFaultArmer(ctx, layer.DB(), nil)
	if err != nil {
		tb.Fatalf("victim database: %v", err)
	}
	v, err := armer.CreateVictim(ctx, tb.Name())
	if err != nil {
		tb.Fatalf("victim database: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := armer.DropVictim(ctx, v); err != nil {
			tb.Errorf("drop victim database: %v", err)
		}
	})
	cfg, err := pgx.ParseConfig(layer.PostgresDSN)
	if err != nil {
		tb.Fatal(err)
	}
	return v.DSN(net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port)))
}
