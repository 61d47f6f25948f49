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

	"github.com/contested/contested/internal/dbguard"
)

// TestATestPlaneThatIsAMaintenanceDatabaseIsBadInput: CONTESTED_PG_DSN
// naming postgres, template0 or template1 (by path, keyword, query or
// PGDATABASE) or no database at all is a configuration error naming the
// variable and what to do, found before any connection.
func TestATestPlaneThatIsAMaintenanceDatabaseIsBadInput(t *testing.T) {
	for _, tt := range []struct{ name, dsn, pgdatabase string }{
		{"URL path template1", "postgres://u:pw@127.0.0.1:1/template1", ""},
		{"URL path postgres", "postgres://u:pw@127.0.0.1:1/postgres", ""},
		{"keyword dbname=postgres", "host=127.0.0.1 port=1 user=u dbname=postgres", ""},
		{"query dbname=template1", "postgres://u@127.0.0.1:1/plane?dbname=template1", ""},
		{"no database", "postgres://u@127.0.0.1:1", ""},
		{"PGDATABASE=template1", "postgres://u@127.0.0.1:1/", "template1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PGDATABASE", tt.pgdatabase)
			cfg := Config{Kind: External, ToxiproxyURL: "http://127.0.0.1:1", PostgresDSN: tt.dsn, RunID: "guard-test"}
			err := cfg.validate()
			if !errors.Is(err, ErrConfig) || !errors.Is(err, dbguard.ErrCanonical) {
				t.Fatalf("validate = %v, want a configuration error from the guard", err)
			}
			for _, want := range []string{"CONTESTED_PG_DSN", "CREATE DATABASE"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("validate = %q, want it to say %q", err, want)
				}
			}
		})
	}
}

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

// TestNothingIsCreatedInTheServersOwnDatabases: an external layer whose
// CONTESTED_PG_DSN reaches postgres or template1 (by path, keyword, query,
// PGDATABASE, or by naming none as the user postgres) is refused before
// the lease table is created there, where every database created
// afterwards would inherit it; and a connection the server put in one of
// them fails the server-side check.
func TestNothingIsCreatedInTheServersOwnDatabases(t *testing.T) {
	l := shared.get(t)
	ctx := context.Background()
	base, err := url.Parse(l.PostgresDSN)
	if err != nil {
		t.Fatal(err)
	}
	at := func(path, query string) string {
		u := *base
		u.Path = path
		q := u.Query()
		for k, v := range mustQuery(t, query) {
			q[k] = v
		}
		u.RawQuery = q.Encode()
		return u.String()
	}
	keyword := func(db string) string {
		pw, _ := base.User.Password()
		return fmt.Sprintf("host=%s port=%s user=%s password=%s sslmode=disable dbname=%s", base.Hostname(), base.Port(), base.User.Username(), pw, db)
	}
	leaseTable := func(db string) bool {
		conn, err := pgx.Connect(ctx, at("/"+db, ""))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var exists bool
		if err := conn.QueryRow(ctx, `SELECT to_regclass('fault_port_leases') IS NOT NULL`).Scan(&exists); err != nil {
			t.Fatal(err)
		}
		if exists {
			// Leave the server as it was for the tests after this one.
			conn.Exec(ctx, `DROP TABLE fault_port_leases`)
		}
		return exists
	}
	for _, tt := range []struct{ name, dsn, pgdatabase, db string }{
		{"URL path template1", at("/template1", ""), "", "template1"},
		{"URL path postgres", at("/postgres", ""), "", "postgres"},
		{"keyword dbname=template1", keyword("template1"), "", "template1"},
		{"query dbname=template1 over another path", at("/contested", "dbname=template1"), "", "template1"},
		{"PGDATABASE=template1", at("", ""), "template1", "template1"},
		{"no database and the user postgres", at("", ""), "", "postgres"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PGDATABASE", tt.pgdatabase)
			cfg := Config{Kind: External, ToxiproxyURL: l.ToxiproxyURL, PostgresDSN: tt.dsn, ProxyPorts: FormatProxyPorts(l.Ports),
				ProxyListenHost: l.ProxyListenHost, PostgresUpstream: l.PostgresUpstream, PostgresDirect: l.PostgresDirect, RunID: "guard-test"}
			up, err := Up(ctx, cfg)
			if err == nil {
				up.Close(ctx)
			}
			if created := leaseTable(tt.db); created {
				t.Errorf("Up created %s in %s", "fault_port_leases", tt.db)
			}
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "CONTESTED_PG_DSN") {
				t.Errorf("Up = %v, want a configuration error naming CONTESTED_PG_DSN", err)
			}
		})
	}
	for _, db := range []string{"postgres", "template1"} {
		t.Run("the server says it is "+db, func(t *testing.T) {
			conn, err := pgx.Connect(ctx, at("/"+db, ""))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			if _, err := dbguard.CheckServer(ctx, conn, nil, "the test-plane Postgres"); !errors.Is(err, dbguard.ErrCanonical) {
				t.Errorf("CheckServer on %s = %v, want ErrCanonical", db, err)
			}
		})
	}
}

func mustQuery(t *testing.T, q string) url.Values {
	t.Helper()
	v, err := url.ParseQuery(q)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
