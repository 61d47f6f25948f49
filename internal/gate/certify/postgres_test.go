package certify_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/internal/faultlayer/faulttest"
	"github.com/contested/contested/internal/gate/certify"
	"github.com/contested/contested/internal/gate/flakes"
)

func TestMain(m *testing.M) { faulttest.Main(m) }

// TestTheTeamStoreKeepsACertificatePerDigestAndIgnoresAnEditedRow: in a
// real Postgres beside the history, a certificate replaces only the one
// of its key and digest, so a branch's does not take main's; past Keep
// the oldest of a key go; a row whose body was edited is ignored saying
// why.
func TestTheTeamStoreKeepsACertificatePerDigestAndIgnoresAnEditedRow(t *testing.T) {
	l := faulttest.Layer(t)
	ctx := context.Background()
	h, err := flakes.OpenPostgres(ctx, l.PostgresDSN, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	p, err := certify.NewPostgres(ctx, h.Pool())
	if err != nil {
		t.Fatal(err)
	}
	mod := "example.com/pg-" + t.Name()
	main := cert(t, certify.KindSurface, "m.store", "GREEN")
	main.Module = mod
	main, _ = certify.Sealed(main)
	branch := main
	branch.RunID, branch.Digest, branch.At = "run-2", "d-2", main.At.Add(time.Minute)
	branch, _ = certify.Sealed(branch)
	pkg := cert(t, certify.KindPackage, "example.com/m/a", "PASS")
	pkg.Module = mod
	pkg, _ = certify.Sealed(pkg)
	for _, batch := range [][]certify.Certificate{{main, pkg}, {branch}} {
		if err := p.Write(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	set, err := p.Read(ctx, mod)
	if err != nil || set.Len() != 3 {
		t.Fatalf("read %d, %v; want 3", set.Len(), err)
	}
	if c, ok := set.Get(certify.KindSurface, "m.store", main.Digest); !ok || c.RunID != "run-1" {
		t.Errorf("main's certificate is %+v, %v; want run-1's, beside the branch's", c, ok)
	}
	if c, _ := set.Latest(certify.KindSurface, "m.store"); c.RunID != "run-2" {
		t.Errorf("the newest certificate is %s's, want run-2's", c.RunID)
	}

	for i := range certify.Keep {
		c := branch
		c.RunID, c.Digest, c.At = fmt.Sprintf("run-b%d", i), fmt.Sprintf("d-b%d", i), branch.At.Add(time.Duration(i+1)*time.Minute)
		c, _ = certify.Sealed(c)
		if err := p.Write(ctx, []certify.Certificate{c}); err != nil {
			t.Fatal(err)
		}
	}
	set, err = p.Read(ctx, mod)
	if err != nil || set.Len() != certify.Keep+1 {
		t.Fatalf("after %d more: read %d, %v; want %d of the surface and the package's", certify.Keep, set.Len(), err, certify.Keep)
	}
	if _, ok := set.Get(certify.KindSurface, "m.store", main.Digest); ok {
		t.Error("the oldest certificate was kept past Keep")
	}

	if _, err := h.Pool().Exec(ctx, `UPDATE contested_certificates SET body = replace(body, '"fired":2', '"fired":7') WHERE module = $1 AND kind = 'surface' AND digest = 'd-b0'`, mod); err != nil {
		t.Fatal(err)
	}
	set, err = p.Read(ctx, mod)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := set.Get(certify.KindSurface, "m.store", "d-b0"); ok || set.Len() != certify.Keep || len(set.Ignored) != 1 || !strings.Contains(set.Ignored[0], "seal does not match") {
		t.Errorf("after an edit: %d certificates, ignored %q; want the edited one ignored, saying its seal does not match", set.Len(), set.Ignored)
	}
}

// TestATableOfTheFirstShapeIsReplaced: a certificates table written before
// rows were kept per digest is dropped and made again, so validate works
// against a team database an older contested wrote to.
func TestATableOfTheFirstShapeIsReplaced(t *testing.T) {
	l := faulttest.Layer(t)
	ctx := context.Background()
	schema := fmt.Sprintf("certs_first_shape_%d", time.Now().UnixNano())
	admin, err := pgxpool.New(ctx, l.PostgresDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	defer admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
	cfg, err := pgxpool.ParseConfig(l.PostgresDSN)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `CREATE TABLE contested_certificates (module text NOT NULL, kind text NOT NULL, key text NOT NULL,
	body text NOT NULL, written timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (module, kind, key));
INSERT INTO contested_certificates (module, kind, key, body) VALUES ('example.com/m', 'surface', 'm.store', '{}')`); err != nil {
		t.Fatal(err)
	}
	p, err := certify.NewPostgres(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	c := cert(t, certify.KindSurface, "m.store", "GREEN")
	if err := p.Write(ctx, []certify.Certificate{c}); err != nil {
		t.Fatalf("write to the replaced table: %v", err)
	}
	set, err := p.Read(ctx, module)
	if err != nil || set.Len() != 1 || len(set.Ignored) != 0 {
		t.Fatalf("read %d, ignored %q, %v; want the one written, the first shape's row gone", set.Len(), set.Ignored, err)
	}
	if _, err := certify.NewPostgres(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if set, _ := p.Read(ctx, module); set.Len() != 1 {
		t.Errorf("a second migration lost the table of the new shape: %d certificates", set.Len())
	}
}
