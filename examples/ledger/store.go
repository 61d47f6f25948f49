package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Transfer asks to move Amount from one account to another. ID is the business idempotency
// key: the producer picks it, and every delivery and retry of the same transfer carries it.
type Transfer struct {
	ID     string `json:"id"`
	From   string `json:"from"`
	To     string `json:"to"`
	Amount int64  `json:"amount"`
}

// Validate rejects a transfer that can never be applied, before it is sent anywhere.
func (t Transfer) Validate() error {
	switch {
	case t.ID == "":
		return errors.New("transfer has no id")
	case t.From == "" || t.To == "":
		return fmt.Errorf("transfer %s: from and to are required", t.ID)
	case t.From == t.To:
		return fmt.Errorf("transfer %s: from and to are the same account %s", t.ID, t.From)
	case t.Amount <= 0:
		return fmt.Errorf("transfer %s: amount %d is not positive", t.ID, t.Amount)
	}
	return nil
}

// Outcome is what applying a transfer did.
type Outcome string

// Outcomes of Store.Transfer.
const (
	// Applied: the money moved, and the posting is in the journal.
	Applied Outcome = "applied"
	// Rejected: the source lacked the funds (or an account does not exist); nothing moved,
	// and the transfer id is spent: a later retry is a Duplicate, never a second chance.
	Rejected Outcome = "rejected"
	// Duplicate: this transfer id was decided before (applied or rejected); nothing moved now.
	Duplicate Outcome = "duplicate"
)

// Store applies transfers and reads balances.
type Store struct {
	db DB
}

// NewStore returns a store over db.
func NewStore(db DB) *Store { return &Store{db: db} }

// transferSQL is the whole of applying a transfer, in one statement and so one transaction:
//
//   - locked takes both account rows FOR UPDATE in id order, so that two transfers between
//     the same accounts in opposite directions queue instead of deadlocking;
//   - turn draws the decision's place in the ledger's serial order once both rows are locked
//     (it aggregates over locked, so it cannot run before the locks are held): two decisions
//     that touch one account get their turns in the order they held its lock, which is what
//     lets an auditor replay every decision in turn order and check each one;
//   - decided records the transfer id with its outcome and turn; ON CONFLICT DO NOTHING makes
//     a second attempt insert nothing, which is how a duplicate is recognized;
//   - moved and posted change the balances and write the journal only when decided inserted
//     an "applied" row.
//
// The final SELECT answers the outcome, or "duplicate" when decided inserted nothing.
const transferSQL = `
WITH locked AS (
	SELECT id, balance FROM accounts WHERE id IN ($2::text, $3::text) ORDER BY id FOR UPDATE
), turn AS (
	SELECT nextval('decision_turns') AS n FROM (SELECT count(*) FROM locked) AS held
), decided AS (
	INSERT INTO applied_transfers (transfer_id, from_account, to_account, amount, outcome, turn)
	SELECT $1::text, $2::text, $3::text, $4::bigint,
		CASE WHEN (SELECT count(*) FROM locked) = 2
			AND (SELECT balance FROM locked WHERE id = $2::text) >= $4::bigint
		THEN 'applied' ELSE 'rejected' END, turn.n
	FROM turn
	ON CONFLICT (transfer_id) DO %s
	RETURNING outcome
), moved AS (
	UPDATE accounts SET balance = balance + CASE WHEN id = $2::text THEN -$4::bigint ELSE $4::bigint END
	WHERE id IN ($2::text, %s) AND EXISTS (SELECT 1 FROM decided WHERE outcome = 'applied')
), posted AS (
	INSERT INTO postings (transfer_id, from_account, to_account, amount)
	SELECT $1::text, $2::text, $3::text, $4::bigint FROM decided WHERE outcome = 'applied'
)
SELECT coalesce((SELECT outcome FROM decided), 'duplicate')`

// creditSQL completes a transfer whose statement only debited (the planted non-atomic
// defect; never used otherwise).
const creditSQL = `UPDATE accounts SET balance = balance + $2::bigint WHERE id = $1::text`

// statement returns the transfer statement, shaped by the planted defects (all off in a
// normal build).
func statement() string {
	conflict, credited := "NOTHING", "$3::text"
	if skipIdempotency {
		conflict = "UPDATE SET outcome = EXCLUDED.outcome" // a duplicate applies again
	}
	if splitTransfer {
		credited = "NULL" // debit only; the credit follows in its own statement
	}
	return fmt.Sprintf(transferSQL, conflict, credited)
}

// Transfer applies t exactly once: the first call for t.ID moves the money (Applied) or
// refuses it (Rejected); every later call answers Duplicate and moves nothing. On an error
// for which Definite is false the transfer may have been applied: retry with the same t.
func (s *Store) Transfer(ctx context.Context, t Transfer) (Outcome, error) {
	if err := t.Validate(); err != nil {
		return "", err
	}
	o, err := apply(ctx, s.db, t)
	if retryInside {
		o, err = retryAfterUnknown(ctx, s.db, t, o, err)
	}
	if err == nil && (rejectedAsApplied || flaky) && o == Rejected {
		o = Applied // planted defect: the client hears applied, nothing moved
	}
	return o, err
}

// retryAfterUnknown is the planted retry inside Transfer (contested_defect_retryinside; never
// used otherwise): while the outcome is unknown it applies t again, every 20ms until ctx
// ends, and answers a Duplicate from its own retry as Rejected.
func retryAfterUnknown(ctx context.Context, db DB, t Transfer, o Outcome, err error) (Outcome, error) {
	for err != nil && !Definite(err) && ctx.Err() == nil {
		select {
		case <-ctx.Done():
			return o, err
		case <-time.After(20 * time.Millisecond):
		}
		o, err = apply(ctx, db, t)
		if err == nil && o == Duplicate {
			o = Rejected
		}
	}
	return o, err
}

// apply runs the transfer statement on db: a pool, a connection (autocommit) or a worker's
// batch transaction.
func apply(ctx context.Context, db DB, t Transfer) (Outcome, error) {
	if lockLost {
		return applyUnlocked(ctx, db, t)
	}
	var o Outcome
	if err := db.QueryRow(ctx, statement(), t.ID, t.From, t.To, t.Amount).Scan(&o); err != nil {
		return "", fmt.Errorf("apply transfer %s: %w", t.ID, err)
	}
	if splitTransfer && o == Applied {
		if _, err := db.Exec(ctx, creditSQL, t.To, t.Amount); err != nil {
			return "", fmt.Errorf("credit transfer %s: %w", t.ID, err)
		}
	}
	return o, nil
}

// applyUnlocked is the planted check-then-act race (contested_defect_lostlock; never used
// otherwise): it reads both balances without FOR UPDATE, decides in Go, and writes the
// balances it computed from what it read. A transfer that commits between the read and the
// write is overwritten.
func applyUnlocked(ctx context.Context, db DB, t Transfer) (Outcome, error) {
	beginner, ok := db.(interface {
		Begin(context.Context) (pgx.Tx, error)
	})
	if !ok {
		return "", fmt.Errorf("apply transfer %s: %T cannot begin a transaction", t.ID, db)
	}
	tx, err := beginner.Begin(ctx)
	if err != nil {
		return "", fmt.Errorf("apply transfer %s: %w", t.ID, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	rows, err := tx.Query(ctx, `SELECT id, balance FROM accounts WHERE id IN ($1::text, $2::text)`, t.From, t.To)
	if err != nil {
		return "", fmt.Errorf("apply transfer %s: %w", t.ID, err)
	}
	balance := map[string]int64{}
	var id string
	var b int64
	if _, err := pgx.ForEachRow(rows, []any{&id, &b}, func() error { balance[id] = b; return nil }); err != nil {
		return "", fmt.Errorf("apply transfer %s: %w", t.ID, err)
	}
	o := Rejected
	if len(balance) == 2 && balance[t.From] >= t.Amount {
		o = Applied
	}
	tag, err := tx.Exec(ctx, `INSERT INTO applied_transfers (transfer_id, from_account, to_account, amount, outcome, turn)
		VALUES ($1::text, $2::text, $3::text, $4::bigint, $5::text, nextval('decision_turns')) ON CONFLICT (transfer_id) DO NOTHING`,
		t.ID, t.From, t.To, t.Amount, string(o))
	if err != nil {
		return "", fmt.Errorf("apply transfer %s: %w", t.ID, err)
	}
	if tag.RowsAffected() == 0 {
		o = Duplicate
	}
	if o == Applied {
		for _, w := range []struct {
			id string
			b  int64
		}{{t.From, balance[t.From] - t.Amount}, {t.To, balance[t.To] + t.Amount}} {
			if _, err := tx.Exec(ctx, `UPDATE accounts SET balance = $2::bigint WHERE id = $1::text`, w.id, w.b); err != nil {
				return "", fmt.Errorf("apply transfer %s: %w", t.ID, err)
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO postings (transfer_id, from_account, to_account, amount) VALUES ($1::text, $2::text, $3::text, $4::bigint)`,
			t.ID, t.From, t.To, t.Amount); err != nil {
			return "", fmt.Errorf("apply transfer %s: %w", t.ID, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return "", fmt.Errorf("apply transfer %s: %w", t.ID, err)
	}
	return o, nil
}

// Balance returns one account's balance.
func (s *Store) Balance(ctx context.Context, account string) (int64, error) {
	var b int64
	if err := s.db.QueryRow(ctx, `SELECT balance FROM accounts WHERE id = $1::text`, account).Scan(&b); err != nil {
		return 0, fmt.Errorf("read balance of %s: %w", account, err)
	}
	return b, nil
}

// Balances returns every account's balance, read in one statement (one snapshot).
func (s *Store) Balances(ctx context.Context) (map[string]int64, error) {
	rows, err := s.db.Query(ctx, `SELECT id, balance FROM accounts`)
	if err != nil {
		return nil, fmt.Errorf("read balances: %w", err)
	}
	out := map[string]int64{}
	var id string
	var b int64
	if _, err := pgx.ForEachRow(rows, []any{&id, &b}, func() error { out[id] = b; return nil }); err != nil {
		return nil, fmt.Errorf("read balances: %w", err)
	}
	return out, nil
}

// Total returns the sum of all balances, read in one statement: the quantity conservation is
// about.
func (s *Store) Total(ctx context.Context) (int64, error) {
	var n int64
	if err := s.db.QueryRow(ctx, `SELECT coalesce(sum(balance), 0)::bigint FROM accounts`).Scan(&n); err != nil {
		return 0, fmt.Errorf("sum balances: %w", err)
	}
	return n, nil
}

// Definite reports whether err guarantees that the statement it came from did not take
// effect: the connection could not be made, the request was never sent, or the server
// answered with an error (a single statement that fails is rolled back). Any other error (a
// reset, a timeout, a closed connection while the answer was due) leaves the outcome unknown.
// Definite(nil) is false: nil is not a failure.
func Definite(err error) bool {
	if err == nil {
		return false
	}
	var connect *pgconn.ConnectError
	var server *pgconn.PgError
	return errors.As(err, &connect) || errors.As(err, &server) || pgconn.SafeToRetry(err)
}

// ConfigurePool sets what the ledger expects of a pool: statements are sent with their
// parameters in one round trip (no prepare step), so a request that left reached the server
// whole, and a connection that is reset loses no prepared-statement state. It leaves the
// pool's size and dialer alone.
func ConfigurePool(cfg *pgxpool.Config) {
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
}

// Connect opens a pool to dsn configured with ConfigurePool, with at most maxConns
// connections (0: pgxpool's default).
func Connect(ctx context.Context, dsn string, maxConns int32) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse DSN: %w", err)
	}
	ConfigurePool(cfg)
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open pool: %w", err)
	}
	return pool, nil
}
