package ledger

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DB is what the ledger needs from Postgres; *pgxpool.Pool, *pgx.Conn and pgx.Tx all provide
// it.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// schema is idempotent: Migrate may run from several processes at once (they serialize on an
// advisory lock).
const schema = `
CREATE TABLE IF NOT EXISTS accounts (
	id      text PRIMARY KEY,
	balance bigint NOT NULL CHECK (balance >= 0)
);
CREATE TABLE IF NOT EXISTS transfer_queue (
	seq          bigserial PRIMARY KEY,
	transfer_id  text NOT NULL,
	from_account text NOT NULL,
	to_account   text NOT NULL,
	amount       bigint NOT NULL CHECK (amount > 0),
	enqueued_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
	acked_at     timestamptz,
	outcome      text,
	worker       text,
	batch        bigint
);
CREATE INDEX IF NOT EXISTS transfer_queue_pending ON transfer_queue (seq) WHERE acked_at IS NULL;
CREATE SEQUENCE IF NOT EXISTS decision_turns;
CREATE TABLE IF NOT EXISTS applied_transfers (
	transfer_id  text PRIMARY KEY,
	from_account text NOT NULL,
	to_account   text NOT NULL,
	amount       bigint NOT NULL,
	outcome      text NOT NULL CHECK (outcome IN ('applied', 'rejected')),
	turn         bigint NOT NULL UNIQUE,
	decided_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE TABLE IF NOT EXISTS postings (
	id           bigserial PRIMARY KEY,
	transfer_id  text NOT NULL,
	from_account text NOT NULL,
	to_account   text NOT NULL,
	amount       bigint NOT NULL,
	posted_at    timestamptz NOT NULL DEFAULT clock_timestamp()
);`

// Migrate creates the ledger's tables if they do not exist.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("migrate ledger: %w", err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('contested-ledger-schema'))`); err != nil {
		return fmt.Errorf("migrate ledger: lock: %w", err)
	}
	if _, err := tx.Exec(ctx, schema); err != nil {
		return fmt.Errorf("migrate ledger: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("migrate ledger: %w", err)
	}
	return nil
}

// OpenAccounts creates the given accounts with their opening balances. An account that
// already exists keeps its balance, so running it twice changes nothing.
func OpenAccounts(ctx context.Context, db DB, balances map[string]int64) error {
	ids := slices.Sorted(maps.Keys(balances))
	amounts := make([]int64, len(ids))
	for i, id := range ids {
		amounts[i] = balances[id]
	}
	if _, err := db.Exec(ctx, `INSERT INTO accounts (id, balance)
		SELECT * FROM unnest($1::text[], $2::bigint[]) ON CONFLICT (id) DO NOTHING`, ids, amounts); err != nil {
		return fmt.Errorf("open accounts: %w", err)
	}
	return nil
}

// AccountNames returns n account ids, "acct-00" onwards: the names the command and the tests
// use, so that separate processes agree on them.
func AccountNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("acct-%02d", i)
	}
	return out
}
