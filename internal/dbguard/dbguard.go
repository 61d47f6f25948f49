// Package dbguard refuses the databases no contested connection may create
// or write anything in: a service's real databases, which the registry
// lists in [guard] canonical_databases.
//
// Every connection the tool opens to create or write anything (the test
// plane's lease and harness tables and victim databases, the flake
// history) passes two checks before its first write: the database its
// configuration names (the user name when it names none, as Postgres
// reads it) and the database the server says it connected to
// (current_database(), which an alias in a connection pooler can change).
// Names are compared without regard to case: when unsure, refuse.
package dbguard

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrCanonical reports a database the registry's [guard]
// canonical_databases lists.
var ErrCanonical = errors.New("refused by the database guard")

// Listed reports whether name is one of canonical, case folded.
func Listed(name string, canonical []string) bool {
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

// CheckConfig refuses a configuration whose database is canonical; what
// names the connection in the message (an environment variable, a record).
func CheckConfig(cfg *pgconn.Config, canonical []string, what string) error {
	if db := Named(cfg); Listed(db, canonical) {
		return fmt.Errorf("%w: %s names database %q, which [guard] canonical_databases lists", ErrCanonical, what, db)
	}
	return nil
}

// Querier is what CheckServer asks the server through: a pool, a
// connection or a transaction.
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// CheckServer asks the server which database the connection reached
// (current_database()) and refuses a canonical one; it returns the name.
func CheckServer(ctx context.Context, q Querier, canonical []string, what string) (string, error) {
	var db string
	if err := q.QueryRow(ctx, `SELECT current_database()`).Scan(&db); err != nil {
		return "", fmt.Errorf("ask %s which database it is: %w", what, err)
	}
	if Listed(db, canonical) {
		return db, fmt.Errorf("%w: %s is database %q, which [guard] canonical_databases lists", ErrCanonical, what, db)
	}
	return db, nil
}
