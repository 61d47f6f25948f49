package levers

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/internal/faultlayer/faulttest"
)

// TestDSNGuardRefusesCanonicalDB pins PgFaultArmer's guard: it arms only
// against a database the harness created, never against the test plane's
// own database, a built-in one, one the registry declares canonical, or any
// database someone else created.
func TestDSNGuardRefusesCanonicalDB(t *testing.T) {
	l := faulttest.Layer(t)
	ctx := context.Background()
	// "ledger" is canonical as a registry's [guard] canonical_databases
	// declares it (contested's own test registry does).
	a, err := NewPgFaultArmer(ctx, l.DB(), []string{"ledger"})
	if err != nil {
		t.Fatal(err)
	}
	outsider := fmt.Sprintf("outsider_%d", rand.Uint32())
	scratchDatabase(t, l.DB(), outsider)
	scratchDatabase(t, l.DB(), "ledger")
	// The registry's canonical name, even when entered in the harness table.
	harnessRow(t, l.DB(), "ledger", "postgres")
	victim, err := a.CreateVictim(ctx, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.DropVictim(context.Background(), victim) })

	dsnFor := func(db string) string {
		u, err := url.Parse(l.PostgresDSN)
		if err != nil {
			t.Fatal(err)
		}
		u.Path = "/" + db
		return u.String()
	}
	testPlane := l.DB().Config().ConnConfig.Database
	tests := []struct {
		name string
		dsn  string
		says string
	}{
		{"the server's default database", dsnFor("postgres"), `"postgres" is canonical`},
		{"a template", dsnFor("template1"), `"template1" is canonical`},
		{"the test plane's own database", dsnFor(testPlane), fmt.Sprintf("%q is canonical", testPlane)},
		{"a database the registry names canonical", dsnFor("ledger"), `"ledger" is canonical`},
		{"a database the harness did not create", dsnFor(outsider), "was not created by the harness"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := a.Exhaust(ctx, tt.dsn, 1)
			if e != nil {
				e.Release(ctx)
			}
			if !errors.Is(err, ErrCanonicalDB) || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("Exhaust(%s): err = %v, want ErrCanonicalDB saying %q", tt.name, err, tt.says)
			}
		})
	}
	t.Run("the harness's own victim is allowed", func(t *testing.T) {
		e, err := a.Exhaust(ctx, victim.DSN(mustHostPort(t, l.PostgresDSN)), 1)
		if err != nil {
			t.Fatalf("Exhaust on a harness victim: %v", err)
		}
		if !e.Full() {
			t.Errorf("armed, but not at the limit: %s", e)
		}
		if err := e.Release(ctx); err != nil {
			t.Error(err)
		}
	})
}

func mustHostPort(t *testing.T, dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// scratchDatabase creates a database (if missing) that the test drops at
// its end, outside the armer.
func scratchDatabase(t *testing.T, admin *pgxpool.Pool, name string) {
	t.Helper()
	ident := pgx.Identifier{name}.Sanitize()
	if _, err := admin.Exec(context.Background(), "CREATE DATABASE "+ident); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)") })
}

// harnessRow enters a database in the harness table as if the harness had
// created it, until the test ends.
func harnessRow(t *testing.T, admin *pgxpool.Pool, name, role string) {
	t.Helper()
	table := pgx.Identifier{harnessTable}.Sanitize()
	if _, err := admin.Exec(context.Background(), `INSERT INTO `+table+` (name, role) VALUES ($1, $2) ON CONFLICT DO NOTHING`, name, role); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Exec(context.Background(), `DELETE FROM `+table+` WHERE name = $1`, name) })
}

func databaseExists(t *testing.T, admin *pgxpool.Pool, name string) bool {
	t.Helper()
	var n int
	if err := admin.QueryRow(context.Background(), `SELECT count(*) FROM pg_database WHERE datname = $1`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

func roleExists(t *testing.T, admin *pgxpool.Pool, name string) bool {
	t.Helper()
	var n int
	if err := admin.QueryRow(context.Background(), `SELECT count(*) FROM pg_roles WHERE rolname = $1`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// TestDropVictimGoesThroughTheGuard: DropVictim drops only what this
// armer's CreateVictim made. A canonical database (the registry's "ledger",
// the test plane's), one the harness did not create, a victim of another
// armer, a zero Victim and one with a role swapped in are all refused, and
// every one of those databases and roles still exists afterwards.
func TestDropVictimGoesThroughTheGuard(t *testing.T) {
	l := faulttest.Layer(t)
	ctx := context.Background()
	admin := l.DB()
	a, err := NewPgFaultArmer(ctx, admin, []string{"ledger", "cv_00000000ca"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewPgFaultArmer(ctx, admin, nil)
	if err != nil {
		t.Fatal(err)
	}
	scratchDatabase(t, admin, "ledger")
	harnessRow(t, admin, "ledger", "postgres")
	// A name of the victims' shape that the registry declares canonical,
	// entered in the harness table: only the guard stands in the way.
	scratchDatabase(t, admin, "cv_00000000ca")
	harnessRow(t, admin, "cv_00000000ca", "cv_00000000ca")
	outsider := fmt.Sprintf("cv_%010x", rand.Uint64()&0xffffffffff)
	scratchDatabase(t, admin, outsider)
	mine, err := a.CreateVictim(ctx, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.DropVictim(context.Background(), mine) })
	theirs, err := other.CreateVictim(ctx, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.DropVictim(context.Background(), theirs) })
	testPlane := admin.Config().ConnConfig.Database
	adminRole := admin.Config().ConnConfig.User

	tests := []struct {
		name     string
		v        *Victim
		want     error
		survives []string // databases that must still exist
		roles    []string // roles that must still exist
	}{
		{"nil", nil, ErrNotVictim, nil, nil},
		{"a zero Victim", &Victim{}, ErrNotVictim, nil, nil},
		{"the canonical ledger, as the issue dropped it", &Victim{database: "ledger", armer: a}, ErrNotVictim, []string{"ledger"}, nil},
		{"the canonical ledger with its role", &Victim{database: "ledger", role: adminRole, armer: a}, ErrNotVictim, []string{"ledger"}, []string{adminRole}},
		{"the test plane's database", &Victim{database: testPlane, role: testPlane, armer: a}, ErrNotVictim, []string{testPlane}, nil},
		{"a victim-shaped canonical database", &Victim{database: "cv_00000000ca", role: "cv_00000000ca", armer: a}, ErrCanonicalDB, []string{"cv_00000000ca"}, nil},
		{"a database the harness did not create", &Victim{database: outsider, role: outsider, armer: a}, ErrCanonicalDB, []string{outsider}, nil},
		{"another armer's victim", theirs, ErrNotVictim, []string{theirs.Database()}, []string{theirs.Role()}},
		{"my victim's database with another victim's role", &Victim{database: mine.Database(), role: theirs.Role(), armer: a}, ErrCanonicalDB, []string{mine.Database()}, []string{theirs.Role()}},
		{"a forged copy of my victim", &Victim{database: mine.Database(), role: mine.Role(), armer: other}, ErrNotVictim, []string{mine.Database()}, []string{mine.Role()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := a.DropVictim(ctx, tt.v)
			if !errors.Is(err, tt.want) {
				t.Fatalf("DropVictim: err = %v, want %v", err, tt.want)
			}
			for _, db := range tt.survives {
				if !databaseExists(t, admin, db) {
					t.Errorf("database %q was dropped", db)
				}
			}
			for _, r := range tt.roles {
				if !roleExists(t, admin, r) {
					t.Errorf("role %q was dropped", r)
				}
			}
		})
	}
	t.Run("my own victim is dropped, database and role", func(t *testing.T) {
		if err := a.DropVictim(ctx, mine); err != nil {
			t.Fatal(err)
		}
		if databaseExists(t, admin, mine.Database()) || roleExists(t, admin, mine.Role()) {
			t.Errorf("victim %s still exists", mine.Database())
		}
		if err := a.DropVictim(ctx, mine); !errors.Is(err, ErrCanonicalDB) {
			t.Errorf("a second DropVictim of a dropped victim: err = %v, want the guard's refusal (no longer in the harness table)", err)
		}
	})
}

// TestArmerQuotesIdentifiers: a database whose name carries quotes and a
// statement is armed and released as that one database (pgx.Identifier
// quoting), the statement inside it never runs, and the guard refuses the
// same text as a name it does not know.
func TestArmerQuotesIdentifiers(t *testing.T) {
	l := faulttest.Layer(t)
	ctx := context.Background()
	admin := l.DB()
	a, err := NewPgFaultArmer(ctx, admin, []string{"ledger"})
	if err != nil {
		t.Fatal(err)
	}
	scratchDatabase(t, admin, "ledger")
	hostile := `q"uo'te; DROP DATABASE ledger; --`
	if err := a.Guard(ctx, hostile); !errors.Is(err, ErrCanonicalDB) {
		t.Fatalf("Guard(%q) = %v, want ErrCanonicalDB", hostile, err)
	}
	scratchDatabase(t, admin, hostile)
	harnessRow(t, admin, hostile, "nobody")
	cfg := admin.Config().ConnConfig.Copy()
	cfg.Database = hostile
	dsn := fmt.Sprintf("host=%s port=%d user=%s password='%s' dbname='%s' sslmode=disable",
		cfg.Host, cfg.Port, cfg.User, strings.ReplaceAll(cfg.Password, `'`, `\'`), strings.ReplaceAll(hostile, `'`, `\'`))
	e, err := a.Exhaust(ctx, dsn, 1)
	if err != nil {
		t.Fatalf("Exhaust on a harness database named %q: %v", hostile, err)
	}
	var limit int
	if err := admin.QueryRow(ctx, `SELECT datconnlimit FROM pg_database WHERE datname = $1`, hostile).Scan(&limit); err != nil || limit != e.Limit {
		t.Errorf("the limit on %q is %d (%v), want %d", hostile, limit, err, e.Limit)
	}
	if err := e.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := admin.QueryRow(ctx, `SELECT datconnlimit FROM pg_database WHERE datname = $1`, hostile).Scan(&limit); err != nil || limit != -1 {
		t.Errorf("the limit on %q after Release is %d (%v), want -1", hostile, limit, err)
	}
	if !databaseExists(t, admin, "ledger") {
		t.Error("the statement inside the name ran: ledger is gone")
	}
	// An Exhaustion not made by Exhaust touches nothing.
	forged := &Exhaustion{Database: "ledger"}
	if err := forged.Release(ctx); !errors.Is(err, ErrNotVictim) {
		t.Errorf("Release of a forged Exhaustion: %v, want ErrNotVictim", err)
	}
}

// TestDropVictimsHeldByReapsWhatAKilledRunLeft: the victims another
// process's armer created for holders the caller names are dropped,
// database and role, with the same guards as DropVictim; a victim of
// another holder stays, and so does a victim-shaped canonical database a
// matching holder is entered for (the guard refuses it, and says so).
func TestDropVictimsHeldByReapsWhatAKilledRunLeft(t *testing.T) {
	l := faulttest.Layer(t)
	ctx := context.Background()
	admin := l.DB()
	a, err := NewPgFaultArmer(ctx, admin, []string{"cv_00000000cb"})
	if err != nil {
		t.Fatal(err)
	}
	// Another process's armer, as a killed run's was.
	killed, err := NewPgFaultArmer(ctx, admin, nil)
	if err != nil {
		t.Fatal(err)
	}
	prefix := fmt.Sprintf("stale-%d-", rand.Uint32())
	var left []*Victim
	for i := range 2 {
		v, err := killed.CreateVictim(ctx, fmt.Sprintf("%s%d", prefix, i))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { killed.DropVictim(context.Background(), v) })
		left = append(left, v)
	}
	live, err := killed.CreateVictim(ctx, "live-"+prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killed.DropVictim(context.Background(), live) })
	scratchDatabase(t, admin, "cv_00000000cb")
	harnessRow(t, admin, "cv_00000000cb", "cv_00000000cb")
	if _, err := admin.Exec(ctx, `UPDATE `+pgx.Identifier{harnessTable}.Sanitize()+` SET holder = $1 WHERE name = 'cv_00000000cb'`, prefix+"canonical"); err != nil {
		t.Fatal(err)
	}

	dropped, err := a.DropVictimsHeldBy(ctx, func(h string) bool { return strings.HasPrefix(h, prefix) })
	if !errors.Is(err, ErrCanonicalDB) {
		t.Errorf("DropVictimsHeldBy: err = %v, want the guard's refusal of the canonical cv_00000000cb", err)
	}
	want := []string{left[0].Database(), left[1].Database()}
	slices.Sort(want)
	if !slices.Equal(dropped, want) {
		t.Errorf("dropped %v, want %v", dropped, want)
	}
	for _, v := range left {
		if databaseExists(t, admin, v.Database()) || roleExists(t, admin, v.Role()) {
			t.Errorf("victim %s of a killed run still exists", v.Database())
		}
	}
	if !databaseExists(t, admin, live.Database()) || !roleExists(t, admin, live.Role()) {
		t.Errorf("victim %s of another holder was dropped", live.Database())
	}
	if !databaseExists(t, admin, "cv_00000000cb") {
		t.Error("the canonical cv_00000000cb was dropped")
	}
}
