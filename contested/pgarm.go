package contested

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrCanonicalDB reports that PgFaultArmer refused to arm against a
// database the harness did not create, or one the registry names canonical.
var ErrCanonicalDB = errors.New("refusing to arm against a canonical database")

// harnessTable lists the databases the harness created; only those may be
// armed against.
const harnessTable = "contested_harness_databases"

// builtinCanonical are never armed against, whatever the registry says.
var builtinCanonical = []string{"postgres", "template0", "template1"}

// PgFaultArmer injects database faults (pool exhaustion) into victim
// databases it created itself, and refuses every other database: anything
// not in its harness table counts as canonical, as does every name in the
// registry's [guard] canonical_databases and the test plane's own database.
type PgFaultArmer struct {
	admin     *pgxpool.Pool
	canonical map[string]bool
}

// NewPgFaultArmer returns an armer over the test-plane admin pool and makes
// sure its harness table exists.
func NewPgFaultArmer(ctx context.Context, admin *pgxpool.Pool, canonical []string) (*PgFaultArmer, error) {
	a := &PgFaultArmer{admin: admin, canonical: map[string]bool{}}
	for _, n := range append(append([]string(nil), builtinCanonical...), canonical...) {
		a.canonical[n] = true
	}
	a.canonical[admin.Config().ConnConfig.Database] = true
	if _, err := admin.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+harnessTable+` (
		name text PRIMARY KEY, role text NOT NULL, created_at timestamptz NOT NULL DEFAULT now(), holder text)`); err != nil {
		var exists bool
		// Two processes creating it at once: the loser sees a duplicate type.
		if qerr := admin.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, harnessTable).Scan(&exists); qerr != nil || !exists {
			return nil, fmt.Errorf("create %s: %w", harnessTable, err)
		}
	}
	return a, nil
}

// Victim is a database and a login role created by the harness for one
// leg. The role is not a superuser, so connection limits apply to it.
type Victim struct {
	Database string
	Role     string
	Password string
	admin    *pgxpool.Pool
}

// DSN returns the victim's DSN at host:port (the proxy, or Postgres
// directly).
func (v *Victim) DSN(hostport string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(v.Role, v.Password), Host: hostport, Path: "/" + v.Database, RawQuery: "sslmode=disable"}
	return u.String()
}

// CreateVictim creates a fresh database owned by a fresh role and enters it
// in the harness table.
func (a *PgFaultArmer) CreateVictim(ctx context.Context, holder string) (*Victim, error) {
	var b [5]byte
	_, _ = rand.Read(b[:])
	id := "cv_" + hex.EncodeToString(b[:])
	v := &Victim{Database: id, Role: id, Password: hex.EncodeToString(b[:]) + "-pw", admin: a.admin}
	if _, err := a.admin.Exec(ctx, fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD '%s'`, id, v.Password)); err != nil {
		return nil, fmt.Errorf("create victim role: %w", err)
	}
	if _, err := a.admin.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %s OWNER %s`, id, id)); err != nil {
		a.admin.Exec(context.WithoutCancel(ctx), `DROP ROLE IF EXISTS `+id)
		return nil, fmt.Errorf("create victim database: %w", err)
	}
	if _, err := a.admin.Exec(ctx, `INSERT INTO `+harnessTable+` (name, role, holder) VALUES ($1, $2, $3)`, id, id, holder); err != nil {
		return nil, fmt.Errorf("register victim database: %w", err)
	}
	return v, nil
}

// DropVictim removes a victim database and its role, terminating whatever
// is still connected.
func (a *PgFaultArmer) DropVictim(ctx context.Context, v *Victim) error {
	var errs []error
	if _, err := a.admin.Exec(ctx, `DROP DATABASE IF EXISTS `+v.Database+` WITH (FORCE)`); err != nil {
		errs = append(errs, fmt.Errorf("drop victim database %s: %w", v.Database, err))
	}
	if _, err := a.admin.Exec(ctx, `DROP ROLE IF EXISTS `+v.Role); err != nil {
		errs = append(errs, fmt.Errorf("drop victim role %s: %w", v.Role, err))
	}
	if len(errs) == 0 {
		a.admin.Exec(ctx, `DELETE FROM `+harnessTable+` WHERE name = $1`, v.Database)
	}
	return errors.Join(errs...)
}

// Guard returns nil only for a database the harness created and nobody
// declared canonical; otherwise an error wrapping ErrCanonicalDB that says
// why.
func (a *PgFaultArmer) Guard(ctx context.Context, database string) error {
	if a.canonical[database] {
		return fmt.Errorf("%w: %q is canonical (built in, the test plane's own database, or listed in [guard] canonical_databases)", ErrCanonicalDB, database)
	}
	var n int
	if err := a.admin.QueryRow(ctx, `SELECT count(*) FROM `+harnessTable+` WHERE name = $1`, database).Scan(&n); err != nil {
		return fmt.Errorf("check harness databases: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("%w: %q was not created by the harness; arm only against a leg's victim database", ErrCanonicalDB, database)
	}
	return nil
}

// Exhaustion is an armed pool-exhaustion fault: connections held up to the
// database's connection limit.
type Exhaustion struct {
	Database string
	Limit    int // the connection limit set on the database
	Held     int // connections the armer holds
	Observed int // backends of the database seen in pg_stat_activity when armed
	conns    []*pgx.Conn
	admin    *pgxpool.Pool
}

// Exhaust sets the connection limit of the database in dsn to its current
// client backends plus hold, then opens connections with dsn's credentials
// until the database is at its limit, so that no new connection to it
// succeeds (SQLSTATE 53300). A backend that exits between the count and
// the holds (a closing pool, a failed connect) is made up for by holding
// one more: the armer fills the limit it set. It refuses canonical
// databases before touching anything.
func (a *PgFaultArmer) Exhaust(ctx context.Context, dsn string, hold int) (*Exhaustion, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("exhaust: parse DSN: %w", err)
	}
	db := cfg.Database
	if err := a.Guard(ctx, db); err != nil {
		return nil, err
	}
	if hold < 1 {
		hold = 1
	}
	current, err := a.clientBackends(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("exhaust: count backends: %w", err)
	}
	e := &Exhaustion{Database: db, Limit: current + hold, admin: a.admin}
	if _, err := a.admin.Exec(ctx, fmt.Sprintf(`ALTER DATABASE %s CONNECTION LIMIT %d`, pgx.Identifier{db}.Sanitize(), e.Limit)); err != nil {
		return nil, fmt.Errorf("exhaust: set connection limit: %w", err)
	}
	for attempt := 0; attempt < e.Limit+hold; attempt++ {
		if e.Observed, err = a.clientBackends(ctx, db); err != nil {
			e.Release(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("exhaust: count backends: %w", err)
		}
		if e.Observed >= e.Limit {
			break
		}
		c, err := pgx.ConnectConfig(ctx, cfg.Copy())
		if err != nil {
			if Classify(err) == SigTooMany {
				continue // someone else took the last slot: full all the same
			}
			e.Release(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("exhaust: hold a connection: %w", err)
		}
		e.conns = append(e.conns, c)
	}
	e.Held = len(e.conns)
	return e, nil
}

// clientBackends counts the connections of clients to a database: the ones
// its connection limit counts.
func (a *PgFaultArmer) clientBackends(ctx context.Context, db string) (int, error) {
	var n int
	err := a.admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend'`, db).Scan(&n)
	return n, err
}

// Full reports whether the database is at its limit as observed when
// armed: the injector-side proof that the pool has nowhere to grow.
func (e *Exhaustion) Full() bool { return e.Observed >= e.Limit }

// Release closes the held connections and lifts the limit.
func (e *Exhaustion) Release(ctx context.Context) error {
	for _, c := range e.conns {
		c.Close(ctx)
	}
	e.conns = nil
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := e.admin.Exec(ctx, fmt.Sprintf(`ALTER DATABASE %s CONNECTION LIMIT -1`, pgx.Identifier{e.Database}.Sanitize()))
	return err
}

func (e *Exhaustion) String() string {
	return fmt.Sprintf("database %s at its connection limit: %d backends of %d allowed, %d held by the armer", e.Database, e.Observed, e.Limit, e.Held)
}
