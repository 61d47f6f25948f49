package levers

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/internal/faultlayer/faulttest"
)

// spares lists the databases named with prefix.
func spares(t *testing.T, admin *pgxpool.Pool, sn spareNames) []string {
	t.Helper()
	rows, err := admin.Query(context.Background(), `SELECT datname FROM pg_database WHERE datname ~ $1 ORDER BY datname`, sn.shape.String())
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestSparesAreTakenAsVictims: MakeSpares tops the spares up to the count
// asked, CreateVictim takes one (renamed to the victim's name and owned by
// its role, which can use it as its own) and makes a database only when
// none is left, and the guard counts a spare canonical. The armer's spares
// have a prefix of the test's own, so no other leg takes them meanwhile.
func TestSparesAreTakenAsVictims(t *testing.T) {
	l := faulttest.Layer(t)
	ctx := context.Background()
	admin := l.DB()
	a, err := NewPgFaultArmer(ctx, admin, nil)
	if err != nil {
		t.Fatal(err)
	}
	a.spares = newSpareNames(fmt.Sprintf("cvsparet%04x_", rand.Uint32()&0xffff))
	t.Cleanup(func() {
		for _, s := range spares(t, admin, a.spares) {
			admin.Exec(context.Background(), `DROP DATABASE IF EXISTS `+pgx.Identifier{s}.Sanitize())
		}
	})

	if made, err := a.MakeSpares(ctx, 2); err != nil || made != 2 {
		t.Fatalf("MakeSpares(2) with none: made %d, %v; want 2", made, err)
	}
	if made, err := a.MakeSpares(ctx, 2); err != nil || made != 0 {
		t.Fatalf("MakeSpares(2) with 2: made %d, %v; want 0 (it tops up, it does not add)", made, err)
	}
	before := spares(t, admin, a.spares)
	if len(before) != 2 {
		t.Fatalf("spares %v, want 2", before)
	}
	if err := a.Guard(ctx, before[0]); !errors.Is(err, ErrCanonicalDB) {
		t.Errorf("Guard(spare %s) = %v, want ErrCanonicalDB: no lever arms against a spare", before[0], err)
	}

	for i, want := range []int{1, 0, 0} {
		v, err := a.CreateVictim(ctx, fmt.Sprintf("spare-test-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.DropVictim(context.Background(), v) })
		if got := spares(t, admin, a.spares); len(got) != want {
			t.Errorf("victim %d: %d spares left (%v), want %d", i, len(got), got, want)
		}
		var owner string
		if err := admin.QueryRow(ctx, `SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = $1`, v.Database()).Scan(&owner); err != nil {
			t.Fatalf("victim %d: database %s: %v", i, v.Database(), err)
		}
		if owner != v.Role() {
			t.Errorf("victim %d: database %s is owned by %s, want its role %s", i, v.Database(), owner, v.Role())
		}
		conn, err := pgx.Connect(ctx, v.DSN(mustHostPort(t, l.PostgresDSN)))
		if err != nil {
			t.Fatalf("victim %d: its role cannot connect: %v", i, err)
		}
		_, err = conn.Exec(ctx, `CREATE TABLE t (id int)`)
		conn.Close(ctx)
		if err != nil {
			t.Errorf("victim %d: its role cannot create a table in its own database: %v", i, err)
		}
		if err := a.DropVictim(ctx, v); err != nil {
			t.Errorf("victim %d: DropVictim: %v", i, err)
		}
	}
}
