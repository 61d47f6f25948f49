package levers

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestDisconnect: armed on a proxy carrying a warm pool, the proxy reads
// back disabled, the victim's next query fails with a disconnect's
// signal, and it fired; healed, the proxy is enabled and the pool works.
// Armed with no traffic, or on a proxy that is gone, it did not fire.
func TestDisconnect(t *testing.T) {
	ctx := context.Background()
	t.Run("fires", func(t *testing.T) {
		fx := newFixture(t, true)
		pool := fx.pool(t)
		mustExec(t, ctx, pool, "SELECT 1")
		f := arm(t, Disconnect, fx.target(t))
		in, what := f.Injector()
		if !in || !strings.Contains(what, "disabled (read back enabled=false)") {
			t.Fatalf("injector: %v %q", in, what)
		}
		err := query(ctx, pool, 5*time.Second, "SELECT 1")
		if err == nil {
			t.Fatal("a query through a disabled proxy succeeded")
		}
		if fired := Disconnect.Fired(Proof{Injected: in, Victim: seen(Disconnect, err)}); fired != nil {
			t.Fatalf("did not fire: %v (the victim saw %v, signal %q)", fired, err, Classify(err))
		}
		if err := f.Heal(ctx); err != nil {
			t.Fatal(err)
		}
		if back, err := fx.layer.Toxiproxy().Proxy(fx.proxy.Name); err != nil || !back.Enabled {
			t.Fatalf("after Heal the proxy reads back %+v, %v; want enabled", back, err)
		}
		mustExec(t, ctx, pool, "SELECT 1")
	})
	t.Run("armed with no traffic did not fire", func(t *testing.T) {
		fx := newFixture(t, true)
		f := arm(t, Disconnect, fx.target(t))
		in, _ := f.Injector()
		f.Heal(ctx)
		if err := Disconnect.Fired(Proof{Injected: in}); !errors.Is(err, ErrUnseen) {
			t.Fatalf("Fired = %v, want ErrUnseen", err)
		}
	})
	t.Run("a proxy that is gone is not in place", func(t *testing.T) {
		fx := newFixture(t, true)
		fx.proxy.Delete()
		f, err := Disconnect.Arm(ctx, fx.target(t))
		if err == nil {
			t.Fatal("armed a deleted proxy")
		}
		in, _ := f.Injector()
		if err := Disconnect.Fired(Proof{Injected: in, Victim: 1}); !errors.Is(err, ErrNotInPlace) {
			t.Fatalf("Fired = %v, want ErrNotInPlace", err)
		}
	})
}
