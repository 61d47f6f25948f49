// Package dbguard refuses the databases no contested connection may create
// or write anything in: a service's real databases, which the registry
// lists in [guard] canonical_databases, the server's own maintenance and
// template databases (postgres, template0, template1), and a database the
// configuration does not name.
//
// Every connection the tool opens to create or write anything (the test
// plane's lease and harness tables and victim databases, the flake
// history) passes two checks before its first write: the database its
// configuration names, as pgx's own parser reads it (URL path, keyword
// dbname=, ?dbname= query, PGDATABASE and the other PG* variables), and
// the database the server says it connected to (current_database(), which
// an alias in a connection pooler can change). A table created in
// template1 is copied into every database created after it, and one in
// postgres lands where every tool connects by default, so those are never
// written to whatever the registry says. A configuration that names no
// database is refused too: Postgres would pick the user's name, which
// nobody chose. Names are compared without regard to case: when unsure,
// refuse.
package dbguard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrCanonical reports a database the guard refuses: one the registry's
// [guard] canonical_databases lists, a maintenance database, or none.
var ErrCanonical = errors.New("refused by the database guard")

// Maintenance are the server's own databases: postgres, where every tool
// connects by default, and the templates every new database is copied
// from. Nothing is ever created in them.
var Maintenance = []string{"postgres", "template0", "template1"}

// Listed reports whether name is one of canonical, case folded.
func Listed(name string, canonical []string) bool {
	name = strings.TrimSpace(name)
	for _, c := range canonical {
		if strings.EqualFold(strings.TrimSpace(c), name) {
			return true
		}
	}
	return false
}

// Named is the database a connection configuration names: its database,
// or, when it names none, its user (Postgres's default).
func Named(cfg *pgconn.Config) string {
	if cfg.Database != "" {
		return cfg.Database
	}
	return cfg.User
}

// CheckConfig refuses a configuration whose database is canonical, a
// maintenance database, or unnamed; what names the connection in the
// message (an environment variable, a record). cfg is what pgx's parser
// made of the DSN, so the environment (PGDATABASE) is already applied.
func CheckConfig(cfg *pgconn.Config, canonical []string, what string) error {
	db := Named(cfg)
	if env := os.Getenv("PGDATABASE"); env != "" && env == cfg.Database {
		what += " (or PGDATABASE, which a DSN naming no database takes)"
	}
	switch {
	case Listed(db, canonical):
		return fmt.Errorf("%w: %s names database %q, which [guard] canonical_databases lists", ErrCanonical, what, db)
	case cfg.Database == "":
		return fmt.Errorf("%w: %s names no database (nor does PGDATABASE), so Postgres would use the user's name %q", ErrCanonical, what, db)
	case Listed(db, Maintenance):
		return fmt.Errorf("%w: %s names database %q, one of the server's own (postgres, template0, template1), where nothing is ever created", ErrCanonical, what, db)
	}
	return nil
}

// Querier is what CheckServer asks the server through: a pool, a
// connection or a transaction.
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// CheckServer asks the server which database the connection reached
// (current_database()) and refuses a canonical or maintenance one; it
// returns the name.
func CheckServer(ctx context.Context, q Querier, canonical []string, what string) (string, error) {
	var db string
	if err := q.QueryRow(ctx, `SELECT current_database()`).Scan(&db); err != nil {
		return "", fmt.Errorf("ask %s which database it is: %w", what, err)
	}
	if Listed(db, canonical) {
		return db, fmt.Errorf("%w: %s is database %q, which [guard] canonical_databases lists", ErrCanonical, what, db)
	}
	if Listed(db, Maintenance) {
		return db, fmt.Errorf("%w: %s is database %q, one of the server's own (postgres, template0, template1) that nothing is ever created in", ErrCanonical, what, db)
	}
	return db, nil
}
