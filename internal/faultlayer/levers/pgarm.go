package levers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/internal/dbguard"
	"github.com/contested/contested/internal/reap"
	"github.com/contested/contested/internal/secret"
)

// ErrCanonicalDB reports that PgFaultArmer refused to arm against a
// database the harness did not create, or one the registry names canonical.
var ErrCanonicalDB = errors.New("refusing to arm against a canonical database")

// ErrNotVictim reports a Victim that CreateVictim of this armer did not
// return (a zero Victim, a forged one, one of another armer): nothing is
// dropped for it.
var ErrNotVictim = errors.New("not a victim this armer created")

// harnessTable lists the databases the harness created; only those may be
// armed against.
const harnessTable = "contested_harness_databases"

// victimName is the shape of every name CreateVictim generates; DropVictim
// refuses any other, whatever the harness table says.
var victimName = regexp.MustCompile(`^cv_[0-9a-f]{10}$`)

// builtinCanonical are never armed against, whatever the registry says.
var builtinCanonical = dbguard.Maintenance

// PgFaultArmer injects database faults (pool exhaustion) into victim
// databases it created itself, and refuses every other database: anything
// not in its harness table counts as canonical, as does every name in the
// registry's [guard] canonical_databases and the test plane's own database.
//
// Invariant: every statement it sends that names a database or a role
// names one that passed Guard (or, in CreateVictim, a freshly generated
// name that is not canonical), quoted with pgx.Identifier; values go as
// bind parameters, or, where Postgres takes none (a role's password), as
// a literal Postgres itself quoted.
type PgFaultArmer struct {
	admin     *pgxpool.Pool
	canonical map[string]bool
	// spares names the spares this armer makes and takes (see MakeSpares);
	// a test gives its armers names of their own.
	spares spareNames
}

// randomHex is n random bytes in hex, for generated names and passwords
// (crypto/rand.Read does not fail: it ends the program instead).
func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// NewPgFaultArmer returns an armer over the test-plane admin pool and makes
// sure its harness table exists.
func NewPgFaultArmer(ctx context.Context, admin *pgxpool.Pool, canonical []string) (*PgFaultArmer, error) {
	a := &PgFaultArmer{admin: admin, canonical: map[string]bool{}, spares: newSpareNames(sparePrefix)}
	for _, n := range append(append([]string(nil), builtinCanonical...), canonical...) {
		a.canonical[strings.ToLower(n)] = true
	}
	a.canonical[strings.ToLower(admin.Config().ConnConfig.Database)] = true
	// The harness table is created in the admin pool's database: never in
	// one the guard lists, whatever the pool's DSN said.
	if err := dbguard.CheckConfig(&admin.Config().ConnConfig.Config, canonical, "the test plane's DSN"); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCanonicalDB, err)
	}
	if _, err := dbguard.CheckServer(ctx, admin, canonical, "the test plane"); err != nil {
		if errors.Is(err, dbguard.ErrCanonical) {
			return nil, fmt.Errorf("%w: %w", ErrCanonicalDB, err)
		}
		return nil, err
	}
	table := pgx.Identifier{harnessTable}.Sanitize()
	if _, err := admin.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+table+` (
		name text PRIMARY KEY, role text NOT NULL, created_at timestamptz NOT NULL DEFAULT now(), holder text, owner text)`); err != nil {
		var exists bool
		// Two processes creating it at once: the loser sees a duplicate type.
		if qerr := admin.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&exists); qerr != nil || !exists {
			return nil, fmt.Errorf("create %s: %w", harnessTable, err)
		}
	}
	// A table an older contested made has no owner column: victims it
	// lists without an owner are never proven abandoned.
	if _, err := admin.Exec(ctx, `ALTER TABLE `+table+` ADD COLUMN IF NOT EXISTS owner text`); err != nil && !isDuplicateColumn(err) {
		return nil, fmt.Errorf("add the owner column to %s: %w", harnessTable, err)
	}
	return a, nil
}

// isDuplicateColumn reports the error of two processes adding the column
// at once.
func isDuplicateColumn(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && (pg.Code == "42701" || pg.Code == "23505")
}

// Victim is a database and a login role created by the harness for one
// leg. The role is not a superuser, so connection limits apply to it. Only
// CreateVictim makes one: its fields are unexported, so no caller can point
// DropVictim at a database of its choosing.
type Victim struct {
	database string
	role     string
	password string
	armer    *PgFaultArmer
}

// Database is the victim database's name.
func (v *Victim) Database() string { return v.database }

// Role is the victim's login role.
func (v *Victim) Role() string { return v.role }

// DSN returns the victim's DSN at host:port (the proxy, or Postgres
// directly).
func (v *Victim) DSN(hostport string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(v.role, v.password), Host: hostport, Path: "/" + v.database, RawQuery: "sslmode=disable"}
	return u.String()
}

// CreateVictim creates a fresh database owned by a fresh role and enters it
// in the harness table. The database is a spare when one is there (see
// MakeSpares), else made now.
func (a *PgFaultArmer) CreateVictim(ctx context.Context, holder string) (*Victim, error) {
	id := "cv_" + randomHex(5)
	v := &Victim{database: id, role: id, password: randomHex(16), armer: a}
	secret.Add(v.password)
	if !victimName.MatchString(id) || a.isCanonical(id) {
		return nil, fmt.Errorf("%w: generated name %q", ErrCanonicalDB, id)
	}
	name := pgx.Identifier{id}.Sanitize()
	table := pgx.Identifier{harnessTable}.Sanitize()
	// Registered first, with this process as its owner: a process killed
	// anywhere after this leaves a row that says whose victim it was, and
	// the next run or sweep reclaims it once that process is gone
	// (ReclaimVictims).
	if _, err := a.admin.Exec(ctx, `INSERT INTO `+table+` (name, role, holder, owner) VALUES ($1, $2, $3, $4)`, id, id, holder, reap.Self().String()); err != nil {
		return nil, fmt.Errorf("register victim database: %w", err)
	}
	unregister := func() { a.admin.Exec(context.WithoutCancel(ctx), `DELETE FROM `+table+` WHERE name = $1`, id) }
	// CREATE ROLE takes no bind parameters: Postgres quotes the literal.
	var password string
	if err := a.admin.QueryRow(ctx, `SELECT quote_literal($1::text)`, v.password).Scan(&password); err != nil {
		unregister()
		return nil, fmt.Errorf("create victim role: %w", err)
	}
	if _, err := a.admin.Exec(ctx, `CREATE ROLE `+name+` LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD `+password); err != nil {
		unregister()
		return nil, fmt.Errorf("create victim role: %w", err)
	}
	// A spare that cannot be taken is no reason to fail: make one instead.
	var err error
	if took, _ := a.takeSpare(ctx, id); !took {
		_, err = a.admin.Exec(ctx, `CREATE DATABASE `+name+` OWNER `+name)
	}
	if err != nil {
		a.admin.Exec(context.WithoutCancel(ctx), `DROP ROLE IF EXISTS `+name)
		unregister()
		return nil, fmt.Errorf("create victim database: %w", err)
	}
	return v, nil
}

// DropVictim removes a victim database and its role, terminating whatever
// is still connected. It drops only what this armer's CreateVictim made:
// the victim must come from this armer, its database must pass Guard, and
// its role must be the one the harness table registered for it and no
// superuser. Anything else is refused (ErrNotVictim, ErrCanonicalDB) and
// nothing is dropped.
func (a *PgFaultArmer) DropVictim(ctx context.Context, v *Victim) error {
	if v == nil || v.armer != a || !victimName.MatchString(v.database) || !victimName.MatchString(v.role) {
		name := "<nil>"
		if v != nil {
			name = fmt.Sprintf("%q", v.database)
		}
		return fmt.Errorf("drop victim %s: %w", name, ErrNotVictim)
	}
	if err := a.Guard(ctx, v.database); err != nil {
		return fmt.Errorf("drop victim: %w", err)
	}
	if err := a.guardRole(ctx, v.database, v.role); err != nil {
		return fmt.Errorf("drop victim: %w", err)
	}
	var errs []error
	if _, err := a.admin.Exec(ctx, `DROP DATABASE IF EXISTS `+pgx.Identifier{v.database}.Sanitize()+` WITH (FORCE)`); err != nil {
		errs = append(errs, fmt.Errorf("drop victim database %s: %w", v.database, err))
	}
	if _, err := a.admin.Exec(ctx, `DROP ROLE IF EXISTS `+pgx.Identifier{v.role}.Sanitize()); err != nil {
		errs = append(errs, fmt.Errorf("drop victim role %s: %w", v.role, err))
	}
	if len(errs) == 0 {
		a.admin.Exec(ctx, `DELETE FROM `+pgx.Identifier{harnessTable}.Sanitize()+` WHERE name = $1`, v.database)
	}
	return errors.Join(errs...)
}

// DropVictimsHeldBy drops the victims the harness table registered for a
// holder that left reports true for: those of an earlier run that was
// killed before it dropped its own (a degraded stage's, say), which
// nothing else reaps while a warm layer lives. Each goes through the same
// guards as DropVictim; a name the table lists that is not of a victim's
// shape is left alone. It returns the databases it dropped.
func (a *PgFaultArmer) DropVictimsHeldBy(ctx context.Context, left func(holder string) bool) ([]string, error) {
	return a.dropVictims(ctx, func(_, holder string) bool { return left(holder) })
}

// dropVictims drops, through DropVictim's guards, the victims the harness
// table lists that pick selects by name and holder; a name not of a
// victim's shape is left alone.
func (a *PgFaultArmer) dropVictims(ctx context.Context, pick func(name, holder string) bool) ([]string, error) {
	rows, err := a.admin.Query(ctx, `SELECT name, role, coalesce(holder, '') FROM `+pgx.Identifier{harnessTable}.Sanitize()+` ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list victims: %w", err)
	}
	var stale []*Victim
	for rows.Next() {
		var name, role, holder string
		if err := rows.Scan(&name, &role, &holder); err != nil {
			rows.Close()
			return nil, fmt.Errorf("list victims: %w", err)
		}
		if pick(name, holder) && victimName.MatchString(name) {
			stale = append(stale, &Victim{database: name, role: role, armer: a})
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list victims: %w", err)
	}
	var dropped []string
	var errs []error
	for _, v := range stale {
		if err := a.DropVictim(ctx, v); err != nil {
			errs = append(errs, err)
			continue
		}
		dropped = append(dropped, v.database)
	}
	return dropped, errors.Join(errs...)
}

// reclaimLock is the advisory lock key that makes one reclaim of abandoned
// victims run at a time on a test plane ("contestv").
const reclaimLock = 0x636f6e7465737476

// ReclaimVictims drops the victim databases and roles of the test plane
// admin reaches whose owner process is provably gone (reap.Owner: same
// machine, same PID namespace, its PID free or reused, or the machine
// rebooted since): what a run killed mid-battery left, which nothing else
// removes while a warm or external layer lives. A victim whose owner is
// alive, cannot be proven gone, or was not recorded (an older contested)
// is left alone. Each goes through DropVictim's guards. It creates
// nothing: a test plane without a harness table has no victims; and when
// another process is reclaiming on the same test plane it returns at once.
// It returns the databases it dropped.
func ReclaimVictims(ctx context.Context, admin *pgxpool.Pool, canonical []string) ([]string, error) {
	if _, err := dbguard.CheckServer(ctx, admin, canonical, "the test plane"); err != nil {
		return nil, err
	}
	var exists bool
	if err := admin.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, harnessTable).Scan(&exists); err != nil || !exists {
		return nil, err
	}
	var hasOwner bool
	if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_name = $1 AND column_name = 'owner' AND table_schema = current_schema())`, harnessTable).Scan(&hasOwner); err != nil || !hasOwner {
		return nil, err
	}
	conn, err := admin.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	var locked bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, int64(reclaimLock)).Scan(&locked); err != nil || !locked {
		return nil, err
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(reclaimLock))
	a := &PgFaultArmer{admin: admin, canonical: map[string]bool{}}
	for _, n := range append(append([]string(nil), builtinCanonical...), canonical...) {
		a.canonical[strings.ToLower(n)] = true
	}
	a.canonical[strings.ToLower(admin.Config().ConnConfig.Database)] = true
	owners := map[string]string{}
	rows, err := admin.Query(ctx, `SELECT name, coalesce(owner, '') FROM `+pgx.Identifier{harnessTable}.Sanitize())
	if err != nil {
		return nil, fmt.Errorf("list victims: %w", err)
	}
	for rows.Next() {
		var name, owner string
		if err := rows.Scan(&name, &owner); err != nil {
			rows.Close()
			return nil, fmt.Errorf("list victims: %w", err)
		}
		owners[name] = owner
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list victims: %w", err)
	}
	gone := map[string]bool{}
	for name, owner := range owners {
		if o, err := reap.ParseOwner(owner); err == nil && o.Gone() {
			gone[name] = true
		}
	}
	if len(gone) == 0 {
		return nil, nil
	}
	return a.dropVictims(ctx, func(name, _ string) bool { return gone[name] })
}

// guardRole returns nil only when role is the one the harness table
// registered for database, is not the admin's own role and is no
// superuser.
func (a *PgFaultArmer) guardRole(ctx context.Context, database, role string) error {
	if role == a.admin.Config().ConnConfig.User {
		return fmt.Errorf("%w: role %q is the test plane's own", ErrCanonicalDB, role)
	}
	var registered string
	if err := a.admin.QueryRow(ctx, `SELECT role FROM `+pgx.Identifier{harnessTable}.Sanitize()+` WHERE name = $1`, database).Scan(&registered); err != nil {
		return fmt.Errorf("check the role of harness database %q: %w", database, err)
	}
	if registered != role {
		return fmt.Errorf("%w: role %q is not the one the harness created for %q", ErrCanonicalDB, role, database)
	}
	var super bool
	err := a.admin.QueryRow(ctx, `SELECT rolsuper FROM pg_roles WHERE rolname = $1`, role).Scan(&super)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("check role %q: %w", role, err)
	}
	if super {
		return fmt.Errorf("%w: role %q is a superuser", ErrCanonicalDB, role)
	}
	return nil
}

// Guard returns nil only for a database the harness created and nobody
// declared canonical; otherwise an error wrapping ErrCanonicalDB that says
// why.
func (a *PgFaultArmer) Guard(ctx context.Context, database string) error {
	if a.isCanonical(database) {
		return fmt.Errorf("%w: %q is canonical (built in, the test plane's own database, or listed in [guard] canonical_databases)", ErrCanonicalDB, database)
	}
	var n int
	if err := a.admin.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{harnessTable}.Sanitize()+` WHERE name = $1`, database).Scan(&n); err != nil {
		return fmt.Errorf("check harness databases: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("%w: %q was not created by the harness; arm only against a leg's victim database", ErrCanonicalDB, database)
	}
	return nil
}

// Exhaustion is an armed pool-exhaustion fault: the database at its
// connection limit, which is the client backends it has plus any the armer
// holds.
type Exhaustion struct {
	Database string
	Limit    int // the connection limit set on the database
	Held     int // connections the armer holds (0 unless asked to hold some)
	Observed int // backends of the database seen in pg_stat_activity when armed
	conns    []*pgx.Conn
	db       string // the guarded name Release acts on, whatever Database says by then
	armer    *PgFaultArmer
}

// exhaustRounds bounds how often Exhaust lowers the limit to the backends
// it counts: each round follows a backend that exited meanwhile.
const exhaustRounds = 5

// Exhaust puts the database in dsn at its connection limit, so that no new
// connection to it succeeds (SQLSTATE 53300) while the ones it has go on
// working. The limit is the database's client backends, counted when
// armed, plus hold connections the armer opens with dsn's credentials (all
// at once) and holds; with hold 0 it opens none: the limit alone fills the
// database, and arming costs a few statements instead of a connection
// storm. A backend that exits between the count and the limit (a closing
// pool, a failed connect) leaves a free slot: the armer counts again and
// lowers the limit to what it sees, until the database is full or
// exhaustRounds have passed (then Full reports false). It refuses
// canonical databases before touching anything.
func (a *PgFaultArmer) Exhaust(ctx context.Context, dsn string, hold int) (*Exhaustion, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("exhaust: parse DSN: %w", err)
	}
	db := cfg.Database
	if err := a.Guard(ctx, db); err != nil {
		return nil, err
	}
	hold = max(hold, 0)
	current, err := a.clientBackends(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("exhaust: count backends: %w", err)
	}
	e := &Exhaustion{Database: db, Limit: current + hold, db: db, armer: a}
	if err := e.setLimit(ctx, e.Limit); err != nil {
		return nil, fmt.Errorf("exhaust: set connection limit: %w", err)
	}
	if err := e.hold(ctx, cfg, hold); err != nil {
		e.Release(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("exhaust: hold a connection: %w", err)
	}
	for round := 0; ; round++ {
		if e.Observed, err = a.clientBackends(ctx, db); err != nil {
			e.Release(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("exhaust: count backends: %w", err)
		}
		if e.Observed >= e.Limit || round == exhaustRounds {
			break
		}
		if err := e.setLimit(ctx, e.Observed); err != nil {
			e.Release(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("exhaust: lower connection limit: %w", err)
		}
		e.Limit = e.Observed
	}
	return e, nil
}

// setLimit sets the database's connection limit. ALTER DATABASE takes no
// bind parameters; the limit is an int and the name passed Guard.
func (e *Exhaustion) setLimit(ctx context.Context, limit int) error {
	_, err := e.armer.admin.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{e.db}.Sanitize()+` CONNECTION LIMIT `+strconv.Itoa(limit))
	return err
}

// hold opens n connections at once and keeps those that got in. One
// refused with 53300 lost its slot to another client: the database is full
// all the same, and the count that follows sees it.
func (e *Exhaustion) hold(ctx context.Context, cfg *pgx.ConnConfig, n int) error {
	type result struct {
		c   *pgx.Conn
		err error
	}
	results := make(chan result, n)
	for range n {
		go func() {
			c, err := pgx.ConnectConfig(ctx, cfg.Copy())
			results <- result{c, err}
		}()
	}
	var errs []error
	for range n {
		r := <-results
		switch {
		case r.err == nil:
			e.conns = append(e.conns, r.c)
		case Classify(r.err) != SigTooMany:
			errs = append(errs, r.err)
		}
	}
	e.Held = len(e.conns)
	return errors.Join(errs...)
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

// Release closes the held connections and lifts the limit. Only an
// Exhaustion that Exhaust returned touches a database, and only the one
// that passed the guard there (checked again).
func (e *Exhaustion) Release(ctx context.Context) error {
	for _, c := range e.conns {
		c.Close(ctx)
	}
	e.conns = nil
	if e.armer == nil {
		return fmt.Errorf("release %q: %w", e.Database, ErrNotVictim)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := e.armer.Guard(ctx, e.db); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	_, err := e.armer.admin.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{e.db}.Sanitize()+` CONNECTION LIMIT -1`)
	return err
}

func (e *Exhaustion) String() string {
	return fmt.Sprintf("database %s at its connection limit: %d backends of %d allowed, %d held by the armer", e.Database, e.Observed, e.Limit, e.Held)
}

// isCanonical reports whether name is canonical, case folded: when unsure,
// refuse.
func (a *PgFaultArmer) isCanonical(name string) bool { return a.canonical[strings.ToLower(name)] }
