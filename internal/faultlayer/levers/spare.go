package levers

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A spare is a victim database made ahead of the leg that needs it. Most
// of a leg's set-up is CREATE DATABASE (a copy of template1: 0.1-0.3 s of
// the server's time), so a command that knows legs are coming (validate,
// while go test builds the test binaries) makes spares, and CreateVictim
// takes one instead when there is one: a rename and a change of owner,
// milliseconds. A spare is what CREATE DATABASE would have made, owned by
// the admin until taken; it is in no harness table, so the guards count it
// canonical: no lever arms against it and DropVictim refuses it.
// Spares outlive the run on a warm layer (the next run takes them) and go
// with the layer's containers otherwise.

// sparePrefix begins every spare's name, which ends in ten hex digits.
const sparePrefix = "cvspare_"

// spareNames is how an armer names its spares: a prefix and ten hex
// digits, which shape matches.
type spareNames struct {
	prefix string
	shape  *regexp.Regexp
}

func newSpareNames(prefix string) spareNames {
	return spareNames{prefix: prefix, shape: regexp.MustCompile(`^` + regexp.QuoteMeta(prefix) + `[0-9a-f]{10}$`)}
}

// spareCap bounds how many spares MakeSpares keeps, whatever it is asked.
const spareCap = 16

// MakeSpares creates spare victim databases until n exist (at most
// spareCap) and returns how many it made. It stops at ctx's end: a CREATE
// DATABASE cut off is rolled back by the server and leaves nothing.
func (a *PgFaultArmer) MakeSpares(ctx context.Context, n int) (int, error) {
	shape := a.spares.shape
	var have int
	if err := a.admin.QueryRow(ctx, `SELECT count(*) FROM pg_database WHERE datname ~ $1`, shape.String()).Scan(&have); err != nil {
		return 0, fmt.Errorf("count spare victim databases: %w", err)
	}
	made := 0
	for ; have+made < min(n, spareCap); made++ {
		name := a.spares.prefix + randomHex(5)
		if !shape.MatchString(name) || a.isCanonical(name) {
			return made, fmt.Errorf("%w: generated spare name %q", ErrCanonicalDB, name)
		}
		if _, err := a.admin.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize()); err != nil {
			return made, fmt.Errorf("make a spare victim database: %w", err)
		}
	}
	return made, nil
}

// takeSpare renames a spare to the fresh victim name id and gives it to
// the role id. It reports false, with nothing changed, when no spare could
// be taken: none left, or each one it tried taken by another leg first.
func (a *PgFaultArmer) takeSpare(ctx context.Context, id string) (bool, error) {
	shape := a.spares.shape
	rows, err := a.admin.Query(ctx, `SELECT datname FROM pg_database WHERE datname ~ $1 ORDER BY random() LIMIT 4`, shape.String())
	if err != nil {
		return false, fmt.Errorf("list spare victim databases: %w", err)
	}
	spares, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return false, fmt.Errorf("list spare victim databases: %w", err)
	}
	name := pgx.Identifier{id}.Sanitize()
	for _, s := range spares {
		if !shape.MatchString(s) || a.isCanonical(s) {
			continue
		}
		_, err := a.admin.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{s}.Sanitize()+` RENAME TO `+name)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "3D000" {
			continue // another leg renamed it first
		}
		if err != nil {
			return false, fmt.Errorf("take spare victim database %s: %w", s, err)
		}
		if _, err := a.admin.Exec(ctx, `ALTER DATABASE `+name+` OWNER TO `+name); err != nil {
			a.admin.Exec(context.WithoutCancel(ctx), `DROP DATABASE IF EXISTS `+name)
			return false, fmt.Errorf("give spare victim database %s to %s: %w", s, id, err)
		}
		return true, nil
	}
	return false, nil
}
