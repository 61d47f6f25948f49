package faultlayer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestATestPlaneThatIsACanonicalDatabaseIsRefused: an external layer whose
// CONTESTED_PG_DSN names a database [guard] canonical_databases lists (in
// any case, or by naming no database and a user of that name, which
// Postgres reads as the database) is refused as bad input before anything
// is created in it; a server that reached a canonical database under
// another name fails the identity checks, which come before any table.
func TestATestPlaneThatIsACanonicalDatabaseIsRefused(t *testing.T) {
	l := shared.get(t)
	ctx := context.Background()
	stock := fmt.Sprintf("stock_%d", rand.Uint32())
	ident := pgx.Identifier{stock}.Sanitize()
	if _, err := l.DB().Exec(ctx, "CREATE DATABASE "+ident); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.DB().Exec(context.Background(), "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)") })
	dsn := func(db string) string {
		u, _ := url.Parse(l.PostgresDSN)
		u.Path = "/" + db
		return u.String()
	}
	external := func(dsn string, canonical ...string) Config {
		return Config{Kind: External, ToxiproxyURL: l.ToxiproxyURL, PostgresDSN: dsn, ProxyPorts: FormatProxyPorts(l.Ports),
			ProxyListenHost: l.ProxyListenHost, PostgresUpstream: l.PostgresUpstream, PostgresDirect: l.PostgresDirect,
			RunID: "guard-test", Canonical: canonical}
	}
	userOnly := func() string {
		u, _ := url.Parse(l.PostgresDSN)
		pw, _ := u.User.Password()
		u.User = url.UserPassword(stock, pw)
		u.Path = ""
		return u.String()
	}()
	for _, tt := range []struct {
		name string
		cfg  Config
	}{
		{"its DSN names it", external(dsn(stock), "ledger", stock)},
		{"its DSN names it in another case", external(dsn(strings.ToUpper(stock)), stock)},
		{"its DSN names no database and a user of that name", external(userOnly, stock)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			up, err := Up(ctx, tt.cfg)
			if err == nil {
				up.Close(ctx)
				t.Fatal("Up accepted a canonical test plane")
			}
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "canonical_databases") || !strings.Contains(err.Error(), "CONTESTED_PG_DSN") {
				t.Errorf("Up = %v, want a configuration error naming CONTESTED_PG_DSN and canonical_databases", err)
			}
		})
	}
	t.Run("the server reached it under another name", func(t *testing.T) {
		up, err := Up(ctx, external(dsn(stock)))
		if err != nil {
			t.Fatal(err)
		}
		defer up.Close(ctx)
		up.canonical = []string{stock}
		p := Identity(ctx, up)
		if p.OK() || !strings.Contains(fmt.Sprint(p.Failed()), "canonical_databases") {
			t.Errorf("identity checks of a test plane that is a canonical database: %+v", p.Checks)
		}
		if _, err := up.DB().Exec(ctx, "DROP TABLE "+pgx.Identifier{"fault_port_leases"}.Sanitize()); err != nil {
			t.Fatal(err)
		}
	})
	conn, err := pgx.Connect(ctx, dsn(stock))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var tables []string
	rows, _ := conn.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = 'public'`)
	tables, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(tables) != 0 {
		t.Errorf("the refused canonical database holds tables %v (%v)", tables, err)
	}
}
