package flakes

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/internal/dbguard"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/secret"
)

// ErrGuard means the history database is one the registry's [guard]
// canonical_databases names: a service's real database never holds the
// history (nor is written by this tool at all).
var ErrGuard = errors.New("refused by the database guard")

// ErrBadDSN means CONTESTED_HISTORY_DSN does not parse.
var ErrBadDSN = errors.New("bad " + envvar.HistoryDSN)

// Postgres is a team's store: a table in the database
// CONTESTED_HISTORY_DSN names, created by the tool, written in one
// transaction per append, so any number of runs write it at once.
type Postgres struct {
	pool *pgxpool.Pool
}

var _ Store = (*Postgres)(nil)

// table is the history's table; migrate creates it.
const table = "contested_outcomes"

// migration creates the table and its index; it runs under an advisory
// lock, so concurrent first runs do not race each other's CREATE.
const migration = `
CREATE TABLE IF NOT EXISTS ` + table + ` (
	id          bigserial PRIMARY KEY,
	time        timestamptz NOT NULL,
	run_id      text NOT NULL,
	shard       text NOT NULL DEFAULT '',
	commit      text NOT NULL DEFAULT '',
	command     text NOT NULL,
	package     text NOT NULL,
	test        text NOT NULL,
	surface     text NOT NULL DEFAULT '',
	leg         text NOT NULL DEFAULT '',
	seed        bigint NOT NULL DEFAULT 0,
	verdict     text NOT NULL,
	duration_ns bigint NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS contested_outcomes_test ON ` + table + ` (package, test, id);`

// migrationLock is the advisory lock key of the migration.
const migrationLock = 0x636f6e7465737465 // "conteste"

// appendLock is the advisory lock key that makes appends one at a time.
const appendLock = 0x636f6e7465737466

// OpenPostgres connects to the history database dsn and migrates its
// schema. A database named in canonical (the registry's [guard]
// canonical_databases) is refused with [ErrGuard] before any connection;
// a DSN that does not parse is [ErrBadDSN]. Errors never carry the
// password.
func OpenPostgres(ctx context.Context, dsn string, canonical []string) (*Postgres, error) {
	secret.AddDSN(dsn)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("%w: it does not parse (%s); give a postgres:// URL or key=value DSN", ErrBadDSN, secret.ParseError(err))
	}
	if err := dbguard.CheckConfig(&cfg.ConnConfig.Config, canonical, envvar.HistoryDSN); err != nil {
		return nil, fmt.Errorf("%w: %w: give the history a database of its own (CREATE DATABASE contested_history) and name it in "+envvar.HistoryDSN, ErrGuard, err)
	}
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open the history database: %s", secret.ScrubString(err.Error()))
	}
	// The database the server reached, before anything is created in it.
	if _, err := dbguard.CheckServer(ctx, pool, canonical, "the history database ("+envvar.HistoryDSN+")"); err != nil {
		pool.Close()
		if errors.Is(err, dbguard.ErrCanonical) {
			return nil, fmt.Errorf("%w: %w: give the history a database of its own (CREATE DATABASE contested_history) and name it in "+envvar.HistoryDSN, ErrGuard, err)
		}
		return nil, fmt.Errorf("open the history database: %s", secret.ScrubString(err.Error()))
	}
	p := &Postgres{pool: pool}
	if err := p.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return p, nil
}

// Close closes the connections.
func (p *Postgres) Close() { p.pool.Close() }

func (p *Postgres) migrate(ctx context.Context) error {
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrationLock)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, migration)
		return err
	})
	if err != nil {
		return fmt.Errorf("migrate the history database: %s", secret.ScrubString(err.Error()))
	}
	return nil
}

// Append inserts outs in one transaction: all or none, contiguous in the
// order Read returns, whatever other appends run at the same time.
func (p *Postgres) Append(ctx context.Context, outs []Outcome) error {
	if len(outs) == 0 {
		return nil
	}
	rows := make([][]any, len(outs))
	for i, o := range outs {
		rows[i] = []any{o.Time, o.RunID, o.Shard, o.Commit, o.Command, o.Package, o.Test, o.Surface, o.Leg, o.Seed, o.Verdict, int64(o.Duration)}
	}
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		// One append at a time: ids are drawn as rows are copied, so two
		// concurrent appends would interleave, and Read, which orders by
		// id, would return neither batch in one piece.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(appendLock)); err != nil {
			return err
		}
		_, err := tx.CopyFrom(ctx, pgx.Identifier{table},
			[]string{"time", "run_id", "shard", "commit", "command", "package", "test", "surface", "leg", "seed", "verdict", "duration_ns"},
			pgx.CopyFromRows(rows))
		return err
	})
	if err != nil {
		return fmt.Errorf("append to the history database: %s", secret.ScrubString(err.Error()))
	}
	return nil
}

// Read returns every outcome, in the order appended.
func (p *Postgres) Read(ctx context.Context) ([]Outcome, error) {
	rows, err := p.pool.Query(ctx, `SELECT time, run_id, shard, commit, command, package, test, surface, leg, seed, verdict, duration_ns FROM `+table+` ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("read the history database: %s", secret.ScrubString(err.Error()))
	}
	defer rows.Close()
	var out []Outcome
	for rows.Next() {
		o := Outcome{Schema: Schema}
		var d int64
		if err := rows.Scan(&o.Time, &o.RunID, &o.Shard, &o.Commit, &o.Command, &o.Package, &o.Test, &o.Surface, &o.Leg, &o.Seed, &o.Verdict, &d); err != nil {
			return nil, fmt.Errorf("read the history database: %w", err)
		}
		o.Duration = time.Duration(d)
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the history database: %s", secret.ScrubString(err.Error()))
	}
	return out, nil
}

// Pool is the connection pool to the history database, for the other
// stores that live beside the history (reuse certificates), opened through
// the same guard.
func (p *Postgres) Pool() *pgxpool.Pool { return p.pool }
