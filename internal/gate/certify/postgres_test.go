package certify_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/internal/faultlayer/faulttest"
	"github.com/contested/contested/internal/gate/certify"
	"github.com/contested/contested/internal/gate/flakes"
)

func TestMain(m *testing.M) { faulttest.Main(m) }

// schemaPool is a pool on a schema of its own in the test plane's
// Postgres, dropped when the test ends.
func schemaPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	l := faulttest.Layer(t)
	ctx := context.Background()
	h, err := flakes.OpenPostgres(ctx, l.PostgresDSN, nil) // through the history's guard
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	schema := fmt.Sprintf("certs_%d", time.Now().UnixNano())
	admin, err := pgxpool.New(ctx, l.PostgresDSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE") })
	cfg, err := pgxpool.ParseConfig(l.PostgresDSN)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// TestTheTeamStoreServesOnlyWhatATrustedKeySigned: CI and two developers
// share one table. CI's signed certificates count for both developers; a
// row a developer wrote themselves (sealed with their own secret, signed
// by their own key, or CI's with an edit) counts for nobody and says why;
// and a branch's certificates never evict main's newest.
func TestTheTeamStoreServesOnlyWhatATrustedKeySigned(t *testing.T) {
	pool := schemaPool(t)
	ctx := context.Background()
	priv, pub := teamKey(t)
	ci, _ := certify.NewTrust(nil, "", []string{pub}, priv)
	store, err := certify.NewPostgres(ctx, pool, ci, true)
	if err != nil {
		t.Fatal(err)
	}
	mainCert := raw(certify.KindSurface, "m.store", "GREEN")
	mainCert.Branch = "main"
	pkg := cert(t, ci, certify.KindPackage, "example.com/m/a", "PASS")
	if err := store.Write(ctx, []certify.Certificate{vouch(t, ci, mainCert), pkg}); err != nil {
		t.Fatal(err)
	}
	for i := range certify.Keep + 2 {
		c := raw(certify.KindSurface, "m.store", "GREEN")
		c.Branch, c.RunID, c.Digest, c.At = "feature", fmt.Sprintf("run-b%d", i), digestOf(fmt.Sprint("b", i)), mainCert.At.Add(time.Duration(i+1)*time.Minute)
		if err := store.Write(ctx, []certify.Certificate{vouch(t, ci, c)}); err != nil {
			t.Fatal(err)
		}
	}
	// What a developer with write access to the table can put there.
	alice := ownTrust(t)
	alicePriv, alicePub := teamKey(t)
	aliceSigns, _ := certify.NewTrust(nil, "", []string{alicePub}, alicePriv)
	edited := vouch(t, ci, raw(certify.KindPackage, "example.com/m/b", "PASS"))
	edited.Fired = 0
	for _, c := range []certify.Certificate{
		cert(t, alice, certify.KindPackage, "example.com/m/c", "PASS"),
		cert(t, aliceSigns, certify.KindPackage, "example.com/m/d", "PASS"),
		edited,
	} {
		b, _ := json.Marshal(c)
		if _, err := pool.Exec(ctx, `INSERT INTO `+certify.Table+` (module, kind, key, digest, inputs, branch, signer, body) VALUES ($1, $2, $3, $4, $5, '', $6, $7)`,
			c.Module, c.Kind, c.Key, c.Digest, c.Inputs, c.Signer, string(b)); err != nil {
			t.Fatal(err)
		}
	}
	for _, dev := range []string{"bob", "carol"} {
		t.Run(dev, func(t *testing.T) {
			trust, _ := certify.NewTrust([]byte(strings.Repeat(dev[:1], 32)), "", []string{pub}, nil)
			reader, err := certify.NewPostgres(ctx, pool, trust, false)
			if err != nil {
				t.Fatal(err)
			}
			set, err := reader.Read(ctx, module, []string{mainCert.Digest, pkg.Digest})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := has(set, certify.KindSurface, "m.store", mainCert.Digest); !ok {
				t.Error("main's certificate was evicted by a branch's, or not served")
			}
			if _, ok := has(set, certify.KindPackage, "example.com/m/a", pkg.Digest); !ok {
				t.Error("CI's package certificate was not served")
			}
			for _, k := range []string{"example.com/m/b", "example.com/m/c", "example.com/m/d"} {
				if _, ok := set.Latest(certify.KindPackage, k); ok {
					t.Errorf("%s, which no trusted key vouches for, was served", k)
				}
			}
			if got := strings.Join(set.Ignored, "\n"); strings.Count(got, "ignored") != 3 || !strings.Contains(got, "seal") || !strings.Contains(got, "does not list") || !strings.Contains(got, "signature does not match") {
				t.Errorf("ignored:\n%s\nwant the three rows ignored, each saying why", got)
			}
			if n := len(set.Candidates(certify.KindSurface, "m.store", digestOf("b0"))) + len(set.Candidates(certify.KindSurface, "m.store", digestOf("b1"))); n != 0 {
				t.Errorf("the branch's oldest two are still held past Keep (%d)", n)
			}
		})
	}
	if err := store.Write(ctx, []certify.Certificate{cert(t, alice, certify.KindPackage, "example.com/m/e", "PASS")}); err == nil {
		t.Error("the team store took a certificate no key signed")
	}
}

// TestAnOversizedRowIsNeverFetched: a row past the size bound is counted,
// said, and never brought into this process's memory.
func TestAnOversizedRowIsNeverFetched(t *testing.T) {
	pool := schemaPool(t)
	ctx := context.Background()
	priv, pub := teamKey(t)
	ci, _ := certify.NewTrust(nil, "", []string{pub}, priv)
	store, err := certify.NewPostgres(ctx, pool, ci, true)
	if err != nil {
		t.Fatal(err)
	}
	good := cert(t, ci, certify.KindPackage, "example.com/m/a", "PASS")
	if err := store.Write(ctx, []certify.Certificate{good}); err != nil {
		t.Fatal(err)
	}
	const size = 64 << 20
	if _, err := pool.Exec(ctx, `INSERT INTO `+certify.Table+` (module, kind, key, digest, inputs, branch, signer, body) VALUES ($1, 'package', 'example.com/m/a', $2, 'x', '', '', repeat('x', $3))`,
		module, good.Digest, size); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	set, err := store.Read(ctx, module, []string{good.Digest})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > size/8 {
		t.Errorf("reading allocated %d MiB beside a %d MiB row; want the row never fetched", grew>>20, size>>20)
	}
	if _, ok := has(set, certify.KindPackage, "example.com/m/a", good.Digest); !ok || len(set.Ignored) != 1 || !strings.Contains(set.Ignored[0], "over 1024 KiB") {
		t.Errorf("ignored %q; want the good one read and one line on the oversized row", set.Ignored)
	}
}

// TestATableThisVersionDidNotMakeIsNeverDropped: a table of the store's
// name with other columns, and an earlier contested's table, are left as
// they are, rows and all; the store says what to do.
func TestATableThisVersionDidNotMakeIsNeverDropped(t *testing.T) {
	pool := schemaPool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE contested_certificates (module text, kind text, key text, body text);
INSERT INTO contested_certificates VALUES ('example.com/m', 'surface', 'm.store', '{}');
CREATE TABLE `+certify.Table+` (module text, note text);
INSERT INTO `+certify.Table+` VALUES ('example.com/m', 'someone else''s');`); err != nil {
		t.Fatal(err)
	}
	priv, pub := teamKey(t)
	ci, _ := certify.NewTrust(nil, "", []string{pub}, priv)
	if _, err := certify.NewPostgres(ctx, pool, ci, true); !errors.Is(err, certify.ErrTable) || !strings.Contains(err.Error(), "never changes or drops") {
		t.Errorf("a table of another shape: %v; want ErrTable, saying it is left alone", err)
	}
	for _, table := range []string{"contested_certificates", certify.Table} {
		var n int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil || n != 1 {
			t.Errorf("%s: %d rows, %v; want it untouched", table, n, err)
		}
	}
}

// TestReadingNeedsNoTable: a reader makes no table, and a missing one is an
// empty store, so reading takes SELECT alone.
func TestReadingNeedsNoTable(t *testing.T) {
	pool := schemaPool(t)
	ctx := context.Background()
	store, err := certify.NewPostgres(ctx, pool, ownTrust(t), false)
	if err != nil {
		t.Fatal(err)
	}
	set, err := store.Read(ctx, module, nil)
	if err != nil || set.Len() != 0 {
		t.Fatalf("read %d, %v; want an empty store", set.Len(), err)
	}
	var exists bool
	if err := pool.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", certify.Table).Scan(&exists); err != nil || exists {
		t.Errorf("a reader made the table (%v)", err)
	}
}
