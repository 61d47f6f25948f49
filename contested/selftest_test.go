package contested

import (
	"context"
	"strings"
	"testing"

	"github.com/contested/contested/internal/faultlayer/faulttest"
)

// TestGuardSelfTest runs the adopters' guard self-test under this
// package's registry ([guard] canonical_databases = ["ledger"]).
func TestGuardSelfTest(t *testing.T) { GuardSelfTest(t) }

// TestGuardSelfTestCatchesAGuardThatLetsOneThrough: the self-test fails,
// naming the database, when the guard lets a canonical database, a
// built-in one, the test plane's or one the harness did not create
// through, and when it refuses the harness's own victim.
func TestGuardSelfTestCatchesAGuardThatLetsOneThrough(t *testing.T) {
	ctx := context.Background()
	l := faulttest.Layer(t)
	reg, err := loadRegistry()
	if err != nil {
		t.Fatal(err)
	}
	a, err := armerFor(ctx, l, reg)
	if err != nil {
		t.Fatal(err)
	}
	victim, err := a.CreateVictim(ctx, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.DropVictim(context.Background(), victim) })
	c := guardCase{canonical: []string{"ledger"}, testPlane: l.DB().Config().ConnConfig.Database, victim: victim.Database()}
	tests := []struct {
		name, lets, says string
	}{
		{"a canonical database", "ledger", `"ledger"`},
		{"a built-in database", "template1", `"template1"`},
		{"the test plane's database", c.testPlane, `"` + c.testPlane + `"`},
		{"a database the harness did not create", "not_the_harness_", "not_the_harness_"},
		{"the victim refused", "", "refuses the harness's own victim"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			broken := func(ctx context.Context, db string) error {
				switch {
				case tt.lets == "" && db == c.victim:
					return ErrCanonicalDB
				case tt.lets != "" && strings.HasPrefix(db, tt.lets):
					return nil
				}
				return a.Guard(ctx, db)
			}
			p := runProbe(t, func(tb *probe) { proveGuard(ctx, tb, broken, c) })
			if !p.Failed() || !strings.Contains(p.errors(), tt.says) {
				t.Errorf("the self-test over a guard that lets %q through: failed %v, errors %q; want a failure naming %s", tt.lets, p.Failed(), p.errors(), tt.says)
			}
		})
	}
	if p := runProbe(t, func(tb *probe) { proveGuard(ctx, tb, a.Guard, c) }); p.Failed() {
		t.Errorf("the self-test fails over the real guard: %s", p.errors())
	}
}
