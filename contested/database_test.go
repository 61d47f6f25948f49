package contested

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/contested/contested/internal/faultlayer/faulttest"
)

// TestDatabaseIsTheTestsOwnAndGoneAfterIt: each call gives a fresh, empty
// database that a test can create tables in and write to, owned by a role
// that is no superuser, none of the canonical databases; two calls give
// two databases; when the test ends both are gone with their roles, even
// one a connection still holds open.
func TestDatabaseIsTheTestsOwnAndGoneAfterIt(t *testing.T) {
	ctx := context.Background()
	admin := faulttest.Layer(t).DB()
	reg, err := loadRegistry()
	if err != nil {
		t.Fatal(err)
	}
	never := append(append([]string{admin.Config().ConnConfig.Database}, builtinDatabases...), reg.Guard.CanonicalDatabases...)
	var names [2]string
	t.Run("a test", func(t *testing.T) {
		for i := range names {
			conn, err := pgx.Connect(ctx, Database(t))
			if err != nil {
				t.Fatalf("connect to the test's database: %v", err)
			}
			var super bool
			if err := conn.QueryRow(ctx, `SELECT current_database(), rolsuper FROM pg_roles WHERE rolname = current_user`).Scan(&names[i], &super); err != nil {
				t.Fatal(err)
			}
			for _, c := range never {
				if strings.EqualFold(names[i], c) {
					t.Errorf("the test's database is %q, a canonical one", names[i])
				}
			}
			if super {
				t.Errorf("the test's role is a superuser")
			}
			var tables int
			if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&tables); err != nil || tables != 0 {
				t.Errorf("the test's database is not empty: %d tables (%v)", tables, err)
			}
			if _, err := conn.Exec(ctx, `CREATE TABLE stock (sku text PRIMARY KEY, n int NOT NULL); INSERT INTO stock VALUES ('widget', 3)`); err != nil {
				t.Errorf("the test cannot write its database: %v", err)
			}
			if i == 1 {
				conn.Close(ctx) // the first stays open: the drop must not wait for it
			}
		}
		if names[0] == names[1] {
			t.Errorf("two calls gave the same database %q", names[0])
		}
	})
	for _, name := range names {
		var dbs, roles int
		if err := admin.QueryRow(ctx, `SELECT (SELECT count(*) FROM pg_database WHERE datname = $1), (SELECT count(*) FROM pg_roles WHERE rolname = $1)`, name).Scan(&dbs, &roles); err != nil {
			t.Fatal(err)
		}
		if dbs != 0 || roles != 0 {
			t.Errorf("after the test, database %q is still there (%d) or its role (%d)", name, dbs, roles)
		}
	}
}

// TestDatabaseHandsOutNoCanonicalDatabase: the check every DSN passes
// before Database returns it refuses the server's own databases, the test
// plane's and each the registry lists (case folded), and passes the
// test's own.
func TestDatabaseHandsOutNoCanonicalDatabase(t *testing.T) {
	ctx := context.Background()
	admin := faulttest.Layer(t).DB()
	plane := admin.Config().ConnConfig.Database
	dsn := Database(t)
	canonical := []string{"ledger", plane}
	if err := guardDSN(ctx, dsn, canonical); err != nil {
		t.Fatalf("the test's own database is refused: %v", err)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	own := strings.TrimPrefix(u.Path, "/")
	for _, db := range []string{"postgres", "template1", plane, "ledger", "LEDGER"} {
		t.Run(db, func(t *testing.T) {
			other := *u
			other.Path = "/" + db
			if err := guardDSN(ctx, other.String(), canonical); !errors.Is(err, ErrCanonicalDB) {
				t.Errorf("a DSN naming %q is not refused: %v", db, err)
			}
		})
	}
	t.Run("listed by the registry", func(t *testing.T) {
		if err := guardDSN(ctx, dsn, append(canonical, strings.ToUpper(own))); !errors.Is(err, ErrCanonicalDB) {
			t.Errorf("the test's database, once listed canonical, is not refused: %v", err)
		}
	})
}
