package contested

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/contested/contested/internal/dbguard"
	"github.com/contested/contested/internal/faultlayer/faulttest"
)

// Database gives an ordinary database test a database of its own on the
// fault layer's Postgres and returns its DSN (postgres://...), direct,
// with no proxy and no fault. It is how a team's tests that expected a
// Postgres on localhost:5432 run in validate's battery beside the legs:
// read the DSN from Database instead of a hard-coded one.
//
// The database is fresh and empty, owned by a fresh login role that is no
// superuser, and made by the same harness a leg's victim is
// (PgFaultArmer.CreateVictim): its name is generated, never one the
// registry's [guard] canonical_databases lists, nor the server's own
// (postgres, template0, template1) nor the test plane's. Before the DSN is
// returned the guard checks it twice, as it names the database and as the
// server answers current_database(); a database it refuses fails the test
// and is never handed out. When the test ends (tb.Cleanup) the database
// and its role are dropped, whatever is still connected; a process killed
// before that leaves them registered with its owner, and the next
// validate, contested or sweep reclaims them once that process is gone.
//
// The layer is the one the package's legs share (faulttest.Layer: a warm
// layer when one is up, else one of CONTESTED_LAYER), so the package's
// TestMain must tear it down: contested.Main, or contested.Run around its
// own set-up. Under validate the layer's coordinates come from the run.
func Database(tb testing.TB) string {
	tb.Helper()
	reg, err := loadRegistry()
	if err != nil {
		tb.Fatalf("contested: Database: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l := faulttest.Layer(tb)
	a, err := armerFor(ctx, l, reg)
	if err != nil {
		tb.Fatalf("contested: Database: %v", err)
	}
	addr, err := l.PostgresAddr()
	if err != nil {
		tb.Fatalf("contested: Database: %v", err)
	}
	v, err := a.CreateVictim(ctx, tb.Name())
	if err != nil {
		tb.Fatalf("contested: Database: %v", err)
	}
	tb.Cleanup(func() {
		if err := a.DropVictim(context.WithoutCancel(ctx), v); err != nil {
			tb.Errorf("contested: Database: drop the test's database %s: %v", v.Database(), err)
		}
	})
	dsn := v.DSN(addr)
	if err := a.Guard(ctx, v.Database()); err != nil {
		tb.Fatalf("contested: Database: %v", err)
	}
	if err := guardDSN(ctx, dsn, append(reg.Guard.CanonicalDatabases, l.DB().Config().ConnConfig.Database)); err != nil {
		tb.Fatalf("contested: Database: %v", err)
	}
	return dsn
}

// guardDSN refuses a DSN whose database is canonical (the server's own,
// or one canonical lists: the registry's and the test plane's), by the
// name the DSN gives, before connecting, and by the name the server
// answers once connected.
func guardDSN(ctx context.Context, dsn string, canonical []string) error {
	canonical = append(append([]string(nil), canonical...), builtinDatabases...)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return fmt.Errorf("parse the test's DSN: %w", err)
	}
	if err := dbguard.CheckConfig(&cfg.Config, canonical, "the test's DSN"); err != nil {
		return fmt.Errorf("%w: %w", ErrCanonicalDB, err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connect to the test's database: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := dbguard.CheckServer(ctx, conn, canonical, "the test's database"); err != nil {
		return fmt.Errorf("%w: %w", ErrCanonicalDB, err)
	}
	return nil
}
