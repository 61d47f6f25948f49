package levers

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestPoolExhaustion: armed, the victim database is at its connection
// limit, a connection the victim had goes on working, a new one is refused
// with 53300, and it fired; healed, the limit is lifted and connecting
// works. That holds with no connection held by the armer (the default) and
// with some it was asked to hold. Armed with nobody connecting, it did not
// fire; against a database the harness did not create, it is not in place.
func TestPoolExhaustion(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		hold int
	}{
		{name: "fires with nothing held", hold: 0},
		{name: "fires with two connections held", hold: 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t, false)
			had, err := pgx.Connect(ctx, fx.direct(t))
			if err != nil {
				t.Fatal(err)
			}
			defer had.Close(ctx)
			tg := fx.target(t)
			tg.Hold = tt.hold
			f := arm(t, PoolExhaustion, tg)
			in, what := f.Injector()
			if !in {
				t.Fatalf("injector: not at the limit: %s", what)
			}
			if held := f.(*exhaustFault).e.Held; held != tt.hold {
				t.Errorf("the armer holds %d connections, want %d: %s", held, tt.hold, what)
			}
			if _, err := had.Exec(ctx, "SELECT 1"); err != nil {
				t.Errorf("a connection the victim had stopped working while armed: %v", err)
			}
			pool, err := pgxpool.New(ctx, fx.direct(t))
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			err = query(ctx, pool, 3*time.Second, "SELECT 1")
			if err == nil {
				t.Fatalf("a new connection succeeded with the database at its limit (%s)", what)
			}
			if fired := PoolExhaustion.Fired(Proof{Injected: in, Victim: seen(PoolExhaustion, err)}); fired != nil {
				t.Fatalf("did not fire: %v (the victim saw %v, signal %q)", fired, err, Classify(err))
			}
			if err := f.Heal(ctx); err != nil {
				t.Fatal(err)
			}
			var limit int
			if err := fx.layer.DB().QueryRow(ctx, `SELECT datconnlimit FROM pg_database WHERE datname = $1`, fx.victim.Database()).Scan(&limit); err != nil || limit != -1 {
				t.Fatalf("after Heal the limit is %d (%v), want -1", limit, err)
			}
			mustExec(t, ctx, pool, "SELECT 1")
		})
	}
	t.Run("armed with nobody connecting did not fire", func(t *testing.T) {
		fx := newFixture(t, false)
		f := arm(t, PoolExhaustion, fx.target(t))
		in, _ := f.Injector()
		f.Heal(ctx)
		if err := PoolExhaustion.Fired(Proof{Injected: in}); !errors.Is(err, ErrUnseen) {
			t.Fatalf("Fired = %v, want ErrUnseen", err)
		}
	})
	t.Run("a database the harness did not create is not in place", func(t *testing.T) {
		fx := newFixture(t, false)
		tg := fx.target(t)
		tg.DSN = fx.layer.PostgresDSN
		f, err := PoolExhaustion.Arm(ctx, tg)
		if !errors.Is(err, ErrCanonicalDB) {
			t.Fatalf("Arm on the test plane's database: %v, want ErrCanonicalDB", err)
		}
		in, _ := f.Injector()
		if err := PoolExhaustion.Fired(Proof{Injected: in, Victim: 1}); !errors.Is(err, ErrNotInPlace) {
			t.Fatalf("Fired = %v, want ErrNotInPlace", err)
		}
	})
}
