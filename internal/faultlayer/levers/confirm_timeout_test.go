package levers

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestConfirmTimeout: armed, the timeout toxic reads back on the
// downstream; an insert through it times out at the client yet is in the
// table, read bypassing the proxy: it fired. The same proof without the
// server-side confirmation, or without the client's timeout, did not.
func TestConfirmTimeout(t *testing.T) {
	ctx := context.Background()
	fx := newFixture(t, true)
	direct, err := pgx.Connect(ctx, fx.direct(t))
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close(ctx)
	if _, err := direct.Exec(ctx, "CREATE TABLE t (id int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	pool := fx.pool(t)
	mustExec(t, ctx, pool, "SELECT 1")
	f := arm(t, ConfirmTimeout, fx.target(t))
	in, what := f.Injector()
	if !in || !strings.Contains(what, "downstream timeout toxic (toxicity 1, read back: true)") {
		t.Fatalf("injector: %v %q", in, what)
	}
	insert := query(ctx, pool, time.Second, "INSERT INTO t VALUES (1)")
	if insert == nil {
		t.Fatal("the insert's confirmation arrived through a confirm-timeout proxy")
	}
	if err := f.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	if toxics, err := fx.proxy.Toxics(); err != nil || len(toxics) != 0 {
		t.Fatalf("after Heal the proxy has toxics %+v (%v)", toxics, err)
	}
	var committed bool
	if err := direct.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM t WHERE id = 1)").Scan(&committed); err != nil {
		t.Fatal(err)
	}
	victim := seen(ConfirmTimeout, insert)
	tests := []struct {
		name  string
		proof Proof
		want  error
	}{
		{"committed and timed out: fired", Proof{Injected: in, Confirmed: committed, Victim: victim}, nil},
		{"not confirmed committed", Proof{Injected: in, Victim: victim}, ErrUnconfirmed},
		{"no timeout at the client", Proof{Injected: in, Confirmed: committed}, ErrUnseen},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ConfirmTimeout.Fired(tt.proof); !errors.Is(got, tt.want) || (got == nil) != (tt.want == nil) {
				t.Fatalf("Fired(%+v) = %v, want %v (the client saw %v)", tt.proof, got, tt.want, insert)
			}
		})
	}
}
