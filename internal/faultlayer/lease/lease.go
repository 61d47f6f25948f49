// Package lease hands out Toxiproxy listen ports to parallel test processes
// through the fault_port_leases table on the test-plane Postgres.
//
// Toxiproxy only forwards ports that were published when its container
// started, and many test processes share it, so each leg leases one port for
// the life of its proxy. The table is the single source of truth:
//
//   - acquire is one statement (SELECT … FOR UPDATE SKIP LOCKED inside an
//     UPDATE) that takes a free or expired row and bumps its epoch;
//   - renew and release are fenced by (port, epoch, holder): a holder whose
//     lease was reclaimed and handed out again can no longer touch it;
//   - an expired lease, or one whose owner process is provably gone
//     (reap.Owner.Liveness), is reclaimed: the proxy it left behind is
//     deleted before the port is handed out again. This is the second stage
//     of cleanup; the first is the holder deleting its own proxy and
//     releasing at the end of its leg. Expiry is the heartbeat: an owner
//     this process cannot see (another PID namespace, another machine) is
//     never taken for dead, and its lease is reclaimed only once it
//     expires.
package lease

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/contested/contested/internal/reap"
)

// TableName is the lease table's name, a contract other tools read.
const TableName = "fault_port_leases"

// Sentinel errors callers branch on.
var (
	// ErrFenced: the lease's epoch or holder no longer matches the row; it
	// was reclaimed and possibly handed to someone else.
	ErrFenced = errors.New("lease fenced: the port was reclaimed or re-leased")
	// ErrExhausted: every port stayed leased until the caller's context ended.
	ErrExhausted = errors.New("every proxy port is leased")
	// ErrNoTable: the lease table does not exist (the layer was not migrated).
	ErrNoTable = errors.New("lease table " + TableName + " does not exist")
)

// DB is what the lease table needs from Postgres; *pgxpool.Pool and
// *pgx.Conn both provide it.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Cleaner deletes whatever proxy listens on a port. It is called for a
// reclaimed lease before the port changes hands.
type Cleaner interface {
	ClearPort(ctx context.Context, port int) error
}

// CleanerFunc adapts a function to Cleaner.
type CleanerFunc func(ctx context.Context, port int) error

// ClearPort calls f.
func (f CleanerFunc) ClearPort(ctx context.Context, port int) error { return f(ctx, port) }

var _ Cleaner = CleanerFunc(nil)

// Lease is one held port.
type Lease struct {
	Port     int
	Epoch    int64
	Holder   string    // who asked: usually the test name
	Owner    string    // reap.Owner of the holding process
	Run      string    // run id
	LeasedAt time.Time // server clock
	Expires  time.Time // server clock
	// Reclaimed names the holder whose expired lease this acquire took
	// over ("" when the port was free): a takeover a history must show.
	Reclaimed string
}

const schema = `
CREATE TABLE IF NOT EXISTS fault_port_leases (
	port        integer PRIMARY KEY CHECK (port BETWEEN 1 AND 65535),
	holder      text,
	owner       text,
	run_id      text,
	leased_at   timestamptz,
	expires_at  timestamptz,
	released_at timestamptz,
	epoch       bigint NOT NULL DEFAULT 0,
	token       text
);
ALTER TABLE fault_port_leases ADD COLUMN IF NOT EXISTS token text`

// Migrate creates the table if needed and gives every port a row. It is
// idempotent and safe to run from several processes at once (they serialize
// on an advisory lock). Rows for ports outside the set are left alone: they
// may belong to another layer sharing the database.
func Migrate(ctx context.Context, db DB, ports []int) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("migrate %s: %w", TableName, err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('`+TableName+`'))`); err != nil {
		return fmt.Errorf("migrate %s: lock: %w", TableName, err)
	}
	// ALTER TABLE takes the table's ACCESS EXCLUSIVE lock even when its
	// column exists, and while it waits for any open transaction on the
	// table, every renewal queues behind it: one leg starting beside a
	// long transaction would stall every other leg's lease. The schema is
	// applied only when the table lacks it.
	var current bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_attribute
		WHERE attrelid = to_regclass('`+TableName+`') AND attname = 'token' AND NOT attisdropped)`).Scan(&current); err != nil {
		return fmt.Errorf("migrate %s: read the schema: %w", TableName, err)
	}
	if !current {
		if _, err := tx.Exec(ctx, schema); err != nil {
			return fmt.Errorf("migrate %s: %w", TableName, err)
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO fault_port_leases (port) SELECT unnest($1::int[]) ON CONFLICT DO NOTHING`, ports); err != nil {
		return fmt.Errorf("migrate %s: add ports: %w", TableName, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("migrate %s: %w", TableName, err)
	}
	return nil
}

// Table hands out leases on a fixed set of ports.
type Table struct {
	db        DB
	ports     []int
	cleaner   Cleaner
	ttl       time.Duration
	owner     string
	run       string
	noReclaim bool
	log       io.Writer
}

// Option configures a Table.
type Option func(*Table)

// WithTTL sets how long a lease lives without renewal (default 1 minute).
func WithTTL(d time.Duration) Option { return func(t *Table) { t.ttl = d } }

// WithRun records a run id on every lease.
func WithRun(run string) Option { return func(t *Table) { t.run = run } }

// WithOwner overrides the owner identity stored with leases (default: this
// process, as reap.Self renders it).
func WithOwner(owner string) Option { return func(t *Table) { t.owner = owner } }

// WithLog makes Reclaim say which unexpired leases it left alone because
// their owner's liveness cannot be proven from this process.
func WithLog(w io.Writer) Option { return func(t *Table) { t.log = w } }

// WithoutReclaimOnWait stops Acquire from reclaiming the leases of dead
// owners while it waits for a port. A test that records every lease
// operation in a history uses it, so that no operation happens unseen;
// Reclaim still does it when called.
func WithoutReclaimOnWait() Option { return func(t *Table) { t.noReclaim = true } }

// New returns a Table over ports. cleaner may be nil when no proxies exist
// (tests of the table alone).
func New(db DB, ports []int, cleaner Cleaner, opts ...Option) *Table {
	t := &Table{db: db, ports: append([]int(nil), ports...), cleaner: cleaner, ttl: time.Minute, owner: reap.Self().String(), log: io.Discard}
	for _, o := range opts {
		o(t)
	}
	if t.cleaner == nil {
		t.cleaner = CleanerFunc(func(context.Context, int) error { return nil })
	}
	return t
}

// Ports returns the ports this table hands out.
func (t *Table) Ports() []int { return append([]int(nil), t.ports...) }

// TTL returns the lease lifetime without renewal.
func (t *Table) TTL() time.Duration { return t.ttl }

const acquireSQL = `
WITH c AS (
	SELECT port, holder AS prev_holder, owner AS prev_owner, run_id AS prev_run
	FROM fault_port_leases
	WHERE port = ANY($1::int[]) AND (holder IS NULL OR expires_at < clock_timestamp())
	ORDER BY released_at NULLS FIRST, port
	LIMIT 1
	FOR UPDATE SKIP LOCKED
)
UPDATE fault_port_leases l
SET holder = $2, owner = $3, run_id = $4, leased_at = clock_timestamp(),
    expires_at = clock_timestamp() + $5::interval, released_at = NULL, epoch = l.epoch + 1, token = $6
FROM c
WHERE l.port = c.port
RETURNING l.port, l.epoch, l.leased_at, l.expires_at, c.prev_holder, c.prev_owner, c.prev_run`

// giveBackExpiredSQL undoes a takeover whose leftover proxy could not be
// deleted: the row names the abandoned holder again and stays expired, so
// the next taker (or Reclaim) deletes the proxy before using the port. The
// epoch stays bumped, so the failed taker's lease is fenced.
const giveBackExpiredSQL = `UPDATE fault_port_leases
	SET holder = $3, owner = $4, run_id = $5, expires_at = clock_timestamp() - interval '1 millisecond', token = NULL
	WHERE port = $1 AND epoch = $2 AND token = $6`

// Acquire leases a free port, waiting until one is free or ctx ends. A port
// whose previous lease expired is cleared of its leftover proxy before it is
// returned. When ctx ends first, the error wraps ErrExhausted and names the
// holders.
func (t *Table) Acquire(ctx context.Context, holder string) (Lease, error) {
	backoff := 20 * time.Millisecond
	for attempt := 0; ; attempt++ {
		l, ok, err := t.tryAcquire(ctx, holder)
		if err != nil {
			return Lease{}, err
		}
		if ok {
			return l, nil
		}
		if attempt%8 == 7 && !t.noReclaim {
			// Owners that died without their lease expiring yet: free them
			// now rather than after the TTL.
			if _, err := t.reclaim(ctx, true); err != nil && ctx.Err() == nil {
				return Lease{}, err
			}
		}
		sleep := backoff/2 + rand.N(backoff)
		select {
		case <-ctx.Done():
			return Lease{}, t.exhausted(ctx.Err())
		case <-time.After(sleep):
		}
		backoff = min(backoff*2, 250*time.Millisecond)
	}
}

func (t *Table) tryAcquire(ctx context.Context, holder string) (Lease, bool, error) {
	l := Lease{Holder: holder, Owner: t.owner, Run: t.run}
	// The token names this attempt, so that an attempt whose answer was
	// lost can be undone without touching any other lease of the holder.
	token := newToken()
	var prev, prevOwner, prevRun *string
	err := t.db.QueryRow(ctx, acquireSQL, t.ports, holder, t.owner, t.run, t.ttl.String(), token).
		Scan(&l.Port, &l.Epoch, &l.LeasedAt, &l.Expires, &prev, &prevOwner, &prevRun)
	if errors.Is(err, pgx.ErrNoRows) {
		return Lease{}, false, nil
	}
	if err != nil {
		// The statement may have committed after the caller stopped
		// listening: give back whatever this attempt took.
		uerr := t.undo(context.WithoutCancel(ctx), token)
		if ctx.Err() != nil {
			return Lease{}, false, withUndo(t.exhausted(ctx.Err()), uerr)
		}
		return Lease{}, false, withUndo(classify("acquire a proxy port", err), uerr)
	}
	if prev != nil {
		l.Reclaimed = *prev
		if err := t.cleaner.ClearPort(ctx, l.Port); err != nil {
			// Not Release: a released row is a free port, and the next
			// taker would use it with the leftover proxy still on it.
			_, gerr := t.db.Exec(context.WithoutCancel(ctx), giveBackExpiredSQL, l.Port, l.Epoch, *prev, prevOwner, prevRun, token)
			if gerr != nil {
				gerr = fmt.Errorf("give back port %d as still expired: %w; the port is reclaimed when this lease expires", l.Port, gerr)
			}
			return Lease{}, false, errors.Join(fmt.Errorf("clear leftover proxy of expired lease on port %d (held by %s): %w", l.Port, *prev, err), gerr)
		}
	}
	return l, true, nil
}

func (t *Table) exhausted(cause error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	held, err := t.Held(ctx)
	if err != nil {
		return fmt.Errorf("%w (%d ports) and listing the holders failed: %v: %w", ErrExhausted, len(t.ports), err, cause)
	}
	var b strings.Builder
	for i, h := range held {
		if i == 8 {
			fmt.Fprintf(&b, ", and %d more", len(held)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d by %s (owner %s, run %s, expires %s)", h.Port, h.Holder, h.Owner, h.Run, h.Expires.Format(time.RFC3339))
	}
	return fmt.Errorf("%w: %d of %d ports held: %s; wait for them, lease fewer at once, or widen CONTESTED_PROXY_PORTS: %w",
		ErrExhausted, len(held), len(t.ports), b.String(), cause)
}

// Held lists the leases currently held (expired or not), by port.
func (t *Table) Held(ctx context.Context) ([]Lease, error) {
	rows, err := t.db.Query(ctx, `SELECT port, epoch, holder, coalesce(owner, ''), coalesce(run_id, ''), leased_at, expires_at
		FROM fault_port_leases WHERE port = ANY($1::int[]) AND holder IS NOT NULL ORDER BY port`, t.ports)
	if err != nil {
		return nil, classify("list leases", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Lease, error) {
		var l Lease
		err := r.Scan(&l.Port, &l.Epoch, &l.Holder, &l.Owner, &l.Run, &l.LeasedAt, &l.Expires)
		return l, err
	})
	if err != nil {
		return nil, classify("list leases", err)
	}
	return out, nil
}

// Renew extends a held lease by the TTL. It fails with ErrFenced when the
// lease was reclaimed in the meantime.
func (t *Table) Renew(ctx context.Context, l Lease) (Lease, error) {
	err := t.db.QueryRow(ctx, `UPDATE fault_port_leases SET expires_at = clock_timestamp() + $4::interval
		WHERE port = $1 AND epoch = $2 AND holder = $3 RETURNING expires_at`, l.Port, l.Epoch, l.Holder, t.ttl.String()).Scan(&l.Expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return l, fmt.Errorf("renew port %d epoch %d for %s: %w", l.Port, l.Epoch, l.Holder, ErrFenced)
	}
	if err != nil {
		return l, classify("renew lease", err)
	}
	return l, nil
}

// Release gives a lease back and returns the server time of the release. It
// fails with ErrFenced when the lease was reclaimed in the meantime: the
// caller no longer owns the port and must not touch its proxy.
func (t *Table) Release(ctx context.Context, l Lease) (time.Time, error) {
	var at time.Time
	err := t.db.QueryRow(ctx, `UPDATE fault_port_leases
		SET holder = NULL, owner = NULL, run_id = NULL, expires_at = NULL, token = NULL, released_at = clock_timestamp()
		WHERE port = $1 AND epoch = $2 AND holder = $3 RETURNING released_at`, l.Port, l.Epoch, l.Holder).Scan(&at)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, fmt.Errorf("release port %d epoch %d for %s: %w", l.Port, l.Epoch, l.Holder, ErrFenced)
	}
	if err != nil {
		return time.Time{}, classify("release lease", err)
	}
	return at, nil
}

// Keep renews l in the background every third of the TTL until the
// returned stop function is called. stop returns the first renewal error
// (ErrFenced when the lease was lost), so a leg can tell that it ran
// without owning its port.
func (t *Table) Keep(ctx context.Context, l Lease) (stop func() error) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		tick := time.NewTicker(t.ttl / 3)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				done <- nil
				return
			case <-tick.C:
				// An error of a renewal that stop interrupted is not news;
				// a fence is, even when stop came just after it.
				if _, err := t.Renew(ctx, l); err != nil && (ctx.Err() == nil || errors.Is(err, ErrFenced)) {
					done <- err
					return
				}
			}
		}
	}()
	return func() error { cancel(); return <-done }
}

// Reclaim frees every lease that expired or whose owner process is
// provably gone, deleting each one's leftover proxy first, and returns what
// it freed. An unexpired lease whose owner cannot be proven gone is left to
// its expiry (said on the WithLog writer).
func (t *Table) Reclaim(ctx context.Context) ([]Lease, error) { return t.reclaim(ctx, false) }

// reclaim does the work of Reclaim; with goneOnly it leaves expired leases
// to Acquire, which takes them over directly.
func (t *Table) reclaim(ctx context.Context, goneOnly bool) ([]Lease, error) {
	held, err := t.Held(ctx)
	if err != nil {
		return nil, err
	}
	var freed []Lease
	var errs []error
	for _, h := range held {
		ok, err := t.reclaimOne(ctx, h, goneOnly)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			freed = append(freed, h)
		}
	}
	sort.Slice(freed, func(i, j int) bool { return freed[i].Port < freed[j].Port })
	return freed, errors.Join(errs...)
}

// reclaimOne frees one lease under its row lock, so the proxy deletion
// cannot race with the port being leased again.
func (t *Table) reclaimOne(ctx context.Context, h Lease, goneOnly bool) (bool, error) {
	tx, err := t.db.Begin(ctx)
	if err != nil {
		return false, classify("reclaim lease", err)
	}
	defer tx.Rollback(ctx)
	var expired bool
	var owner string
	err = tx.QueryRow(ctx, `SELECT expires_at < clock_timestamp(), coalesce(owner, '') FROM fault_port_leases
		WHERE port = $1 AND epoch = $2 AND holder IS NOT NULL FOR UPDATE SKIP LOCKED`, h.Port, h.Epoch).Scan(&expired, &owner)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil // released, re-leased or locked by another reclaimer meanwhile
	}
	if err != nil {
		return false, classify("reclaim lease", err)
	}
	gone, why := false, ""
	if o, err := reap.ParseOwner(owner); err == nil {
		var l reap.Liveness
		l, why = o.Liveness()
		gone = l == reap.Gone
		if l != reap.Unknown {
			why = ""
		}
	} else if owner != "" {
		why = fmt.Sprintf("its owner %q does not parse", owner)
	}
	if !gone && (goneOnly || !expired) {
		if why != "" && !expired && !goneOnly {
			fmt.Fprintf(t.log, "lease: left port %d (holder %s, owner %s, run %s) to its expiry: %s\n", h.Port, h.Holder, owner, h.Run, why)
		}
		return false, nil
	}
	if err := t.cleaner.ClearPort(ctx, h.Port); err != nil {
		return false, fmt.Errorf("reclaim port %d from %s: delete its leftover proxy: %w", h.Port, h.Holder, err)
	}
	if _, err := tx.Exec(ctx, `UPDATE fault_port_leases
		SET holder = NULL, owner = NULL, run_id = NULL, expires_at = NULL, token = NULL, released_at = clock_timestamp()
		WHERE port = $1 AND epoch = $2`, h.Port, h.Epoch); err != nil {
		return false, classify("reclaim lease", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return false, classify("reclaim lease", err)
	}
	return true, nil
}

// undo gives back the lease an attempt took, if it took one. The network
// that lost the attempt's answer may still be failing, so it tries
// undoAttempts times, each on a fresh statement bounded to a second, backing
// off between them.
func (t *Table) undo(ctx context.Context, token string) error {
	var err error
	backoff := 25 * time.Millisecond
	for attempt := range undoAttempts {
		if attempt > 0 {
			// The fault that lost the acquire's answer is likely still
			// there: ten tries at once would all meet it.
			time.Sleep(backoff)
			backoff = min(backoff*2, 500*time.Millisecond)
		}
		actx, cancel := context.WithTimeout(ctx, time.Second)
		_, err = t.db.Exec(actx, `UPDATE fault_port_leases
			SET holder = NULL, owner = NULL, run_id = NULL, expires_at = NULL, token = NULL, released_at = clock_timestamp()
			WHERE token = $1`, token)
		cancel()
		if err == nil {
			return nil
		}
	}
	return fmt.Errorf("give back an interrupted acquire (token %s): %w; the port is freed when its lease expires", token, err)
}

// undoAttempts bounds the give-back of an interrupted acquire: with its
// backoff, about three seconds of sleeps besides the attempts themselves.
const undoAttempts = 10

// withUndo adds a failed give-back to the acquire's error as text only. The
// give-back's own error (a refused connection, a statement never sent)
// must not decide how a caller classifies the acquire, whose statement may
// have committed: wrapped, errors.As would find it and read the whole
// outcome as definite.
func withUndo(err, uerr error) error {
	if uerr == nil {
		return err
	}
	return fmt.Errorf("%w; %v", err, uerr)
}

func newToken() string {
	var b [8]byte
	_, _ = crand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// classify wraps a database error, mapping a missing table to ErrNoTable.
func classify(what string, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" {
		return fmt.Errorf("%s: %w: run the layer's migration (it runs when the layer comes up)", what, ErrNoTable)
	}
	return fmt.Errorf("%s: %w", what, err)
}
