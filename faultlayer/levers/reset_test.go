package levers

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestReset: armed, the reset_peer toxic reads back in place, the victim's
// next query is torn down with a reset's signal, and it fired; healed, the
// toxic is gone and the pool works. Armed on a warm pool that sends
// nothing, it did not fire.
func TestReset(t *testing.T) {
	ctx := context.Background()
	t.Run("fires", func(t *testing.T) {
		fx := newFixture(t, true)
		pool := fx.pool(t)
		mustExec(t, ctx, pool, "SELECT 1")
		f := arm(t, Reset, fx.target(t))
		in, what := f.Injector()
		if !in || !strings.Contains(what, "upstream reset_peer toxic (toxicity 1, read back: true)") {
			t.Fatalf("injector: %v %q", in, what)
		}
		err := query(ctx, pool, 5*time.Second, "SELECT 1")
		if err == nil {
			t.Fatal("a query through a reset proxy succeeded")
		}
		if fired := Reset.Fired(Proof{Injected: in, Victim: seen(Reset, err)}); fired != nil {
			t.Fatalf("did not fire: %v (the victim saw %v, signal %q)", fired, err, Classify(err))
		}
		if err := f.Heal(ctx); err != nil {
			t.Fatal(err)
		}
		if toxics, err := fx.proxy.Toxics(); err != nil || len(toxics) != 0 {
			t.Fatalf("after Heal the proxy has toxics %+v (%v)", toxics, err)
		}
		mustExec(t, ctx, pool, "SELECT 1")
	})
	t.Run("armed on a silent pool did not fire", func(t *testing.T) {
		fx := newFixture(t, true)
		mustExec(t, ctx, fx.pool(t), "SELECT 1")
		f := arm(t, Reset, fx.target(t)) // reset_peer waits for traffic that never comes
		time.Sleep(200 * time.Millisecond)
		in, _ := f.Injector()
		f.Heal(ctx)
		if err := Reset.Fired(Proof{Injected: in}); !errors.Is(err, ErrUnseen) {
			t.Fatalf("Fired = %v, want ErrUnseen", err)
		}
	})
}
