package dbguard

import (
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestCheckConfigRefusesMaintenanceAndUnnamedDatabases: whichever way a
// DSN or the environment names the database (URL path, keyword dbname=,
// a ?dbname= query that overrides the path, PGDATABASE, or nothing at
// all), pgx's parser says which one the connection will reach, and the
// guard refuses the server's own databases and an unnamed one, naming the
// variable, before anything connects.
func TestCheckConfigRefusesMaintenanceAndUnnamedDatabases(t *testing.T) {
	for _, tt := range []struct {
		name       string
		dsn        string
		pgdatabase string
		canonical  []string
		refused    string // "" when the guard allows it
	}{
		{name: "URL path template1", dsn: "postgres://u:pw@127.0.0.1:5432/template1", refused: `"template1"`},
		{name: "URL path postgres", dsn: "postgres://u:pw@127.0.0.1:5432/postgres?sslmode=disable", refused: `"postgres"`},
		{name: "URL path template0 in another case", dsn: "postgres://u:pw@127.0.0.1:5432/TEMPLATE0", refused: `"TEMPLATE0"`},
		{name: "keyword dbname=postgres", dsn: "host=127.0.0.1 user=u dbname=postgres", refused: `"postgres"`},
		{name: "keyword dbname quoted", dsn: "host=127.0.0.1 user=u dbname='template1'", refused: `"template1"`},
		{name: "query dbname overrides the path", dsn: "postgres://u@127.0.0.1/plane?dbname=template1", refused: `"template1"`},
		{name: "query dbname with no path", dsn: "postgres://u@127.0.0.1?dbname=postgres", refused: `"postgres"`},
		{name: "URL with no database", dsn: "postgres://u:pw@127.0.0.1:5432", refused: "names no database"},
		{name: "URL with an empty path", dsn: "postgres://u:pw@127.0.0.1:5432/", refused: "names no database"},
		{name: "keyword with no database", dsn: "host=127.0.0.1 user=plane", refused: "names no database"},
		{name: "no database and user postgres", dsn: "postgres://postgres@127.0.0.1", refused: "names no database"},
		{name: "PGDATABASE template1 with no database in the DSN", dsn: "postgres://u@127.0.0.1/", pgdatabase: "template1", refused: `PGDATABASE, which a DSN naming no database takes) names database "template1"`},
		{name: "PGDATABASE postgres with a keyword DSN", dsn: "host=127.0.0.1 user=u", pgdatabase: "postgres", refused: `"postgres"`},
		{name: "a canonical database", dsn: "postgres://u@127.0.0.1/ledger", canonical: []string{"ledger"}, refused: "canonical_databases"},
		{name: "a database of its own", dsn: "postgres://u@127.0.0.1/contested_plane"},
		{name: "a DSN database wins over PGDATABASE", dsn: "postgres://u@127.0.0.1/contested_plane", pgdatabase: "template1"},
		{name: "a name that only starts like a template", dsn: "host=127.0.0.1 dbname=template10"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PGSERVICE", "")
			t.Setenv("PGSERVICEFILE", "")
			t.Setenv("PGDATABASE", tt.pgdatabase)
			cfg, err := pgconn.ParseConfig(tt.dsn)
			if err != nil {
				t.Fatal(err)
			}
			err = CheckConfig(cfg, tt.canonical, "CONTESTED_PG_DSN")
			if tt.refused == "" {
				if err != nil {
					t.Fatalf("CheckConfig = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrCanonical) {
				t.Fatalf("CheckConfig = %v, want ErrCanonical", err)
			}
			for _, want := range []string{tt.refused, "CONTESTED_PG_DSN"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("CheckConfig = %q, want it to say %q", err, want)
				}
			}
		})
	}
}
