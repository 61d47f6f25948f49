package contested

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"

	"github.com/contested/contested/faultlayer/faulttest"
)

// TestDSNGuardRefusesCanonicalDB pins PgFaultArmer's guard: it arms only
// against a database the harness created, never against the test plane's
// own database, a built-in one, one the registry declares canonical, or any
// database someone else created.
func TestDSNGuardRefusesCanonicalDB(t *testing.T) {
	l := faulttest.Layer(t)
	ctx := context.Background()
	reg, err := loadRegistry()
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewPgFaultArmer(ctx, l.DB(), reg.Guard.CanonicalDatabases)
	if err != nil {
		t.Fatal(err)
	}
	outsider := fmt.Sprintf("outsider_%d", rand.Uint32())
	if _, err := l.DB().Exec(ctx, "CREATE DATABASE "+outsider); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.DB().Exec(context.Background(), "DROP DATABASE IF EXISTS "+outsider+" WITH (FORCE)") })
	if _, err := l.DB().Exec(ctx, "CREATE DATABASE ledger"); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.DB().Exec(context.Background(), "DROP DATABASE IF EXISTS ledger WITH (FORCE)") })
	// The registry's canonical name, even when entered in the harness table.
	if _, err := l.DB().Exec(ctx, `INSERT INTO `+harnessTable+` (name, role) VALUES ('ledger', 'postgres') ON CONFLICT DO NOTHING`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.DB().Exec(context.Background(), `DELETE FROM `+harnessTable+` WHERE name = 'ledger'`) })
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
