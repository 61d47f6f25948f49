package certify_test

import (
	"context"
	"strings"
	"testing"

	"github.com/contested/contested/internal/faultlayer/faulttest"
	"github.com/contested/contested/internal/gate/certify"
	"github.com/contested/contested/internal/gate/flakes"
)

func TestMain(m *testing.M) { faulttest.Main(m) }

// TestTheTeamStoreKeepsTheLatestCertificateAndIgnoresAnEditedRow: in a
// real Postgres beside the history, a certificate replaces the one of its
// key, and a row whose body was edited is ignored saying why.
func TestTheTeamStoreKeepsTheLatestCertificateAndIgnoresAnEditedRow(t *testing.T) {
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
	first := cert(t, certify.KindSurface, "m.store", "GREEN")
	first.Module = mod
	first, _ = certify.Sealed(first)
	second := first
	second.RunID, second.Digest = "run-2", "d-2"
	second, _ = certify.Sealed(second)
	pkg := cert(t, certify.KindPackage, "example.com/m/a", "PASS")
	pkg.Module = mod
	pkg, _ = certify.Sealed(pkg)
	for _, batch := range [][]certify.Certificate{{first, pkg}, {second}} {
		if err := p.Write(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	set, err := p.Read(ctx, mod)
	if err != nil || set.Len() != 2 {
		t.Fatalf("read %d, %v; want 2", set.Len(), err)
	}
	if c, _ := set.Get(certify.KindSurface, "m.store"); c.RunID != "run-2" {
		t.Errorf("the surface's certificate is %s's, want run-2's", c.RunID)
	}
	if _, err := h.Pool().Exec(ctx, `UPDATE contested_certificates SET body = replace(body, '"fired":2', '"fired":7') WHERE module = $1 AND kind = 'surface'`, mod); err != nil {
		t.Fatal(err)
	}
	set, err = p.Read(ctx, mod)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := set.Get(certify.KindSurface, "m.store"); ok || set.Len() != 1 || len(set.Ignored) != 1 || !strings.Contains(set.Ignored[0], "seal does not match") {
		t.Errorf("after an edit: %d certificates, ignored %q; want the edited one ignored, saying its seal does not match", set.Len(), set.Ignored)
	}
}
