package levers

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
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

// TestResetDirection: the schedule's direction decides what a reset does
// to a write in flight. Upstream, the request is dropped before the server
// sees it: the row is not there. Downstream, the server executed it and
// its answer is dropped: the client saw a reset for a row that is there,
// the ambiguous outcome a retry must settle. Both at once reads back both
// toxics.
func TestResetDirection(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		streams []string
		landed  bool // the write took effect although the client saw the reset
	}{
		{"upstream drops the request", []string{"upstream"}, false},
		{"downstream drops the answer", []string{"downstream"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t, true)
			direct, err := pgxpool.New(ctx, fx.direct(t))
			if err != nil {
				t.Fatal(err)
			}
			defer direct.Close()
			mustExec(t, ctx, direct, "CREATE TABLE writes (id int PRIMARY KEY)")
			pool := fx.pool(t)
			mustExec(t, ctx, pool, "SELECT 1")
			tg := fx.target(t)
			tg.Window = Window{Params: ResetParams{Streams: tt.streams, Delay: 5 * time.Millisecond}}
			f := arm(t, Reset, tg)
			in, what := f.Injector()
			if !in || !strings.Contains(what, tt.streams[0]+" reset_peer toxic (timeout=5)") {
				t.Fatalf("injector: %v %q", in, what)
			}
			err = query(ctx, pool, 5*time.Second, "INSERT INTO writes VALUES (1)")
			if err == nil || seen(Reset, err) == 0 {
				t.Fatalf("the write through a %v reset answered %v", tt.streams, err)
			}
			if err := f.Heal(ctx); err != nil {
				t.Fatal(err)
			}
			var n int
			if err := direct.QueryRow(ctx, "SELECT count(*) FROM writes").Scan(&n); err != nil {
				t.Fatal(err)
			}
			if landed := n == 1; landed != tt.landed {
				t.Fatalf("after a %v reset the write is there: %v, want %v", tt.streams, landed, tt.landed)
			}
		})
	}
	t.Run("both at once", func(t *testing.T) {
		fx := newFixture(t, true)
		tg := fx.target(t)
		tg.Window = Window{Params: ResetParams{Streams: []string{"upstream", "downstream"}}}
		f := arm(t, Reset, tg)
		defer f.Heal(ctx)
		if in, what := f.Injector(); !in || !strings.Contains(what, "upstream reset_peer toxic + downstream reset_peer toxic") {
			t.Fatalf("injector: %v %q", in, what)
		}
		if toxics, err := fx.proxy.Toxics(); err != nil || len(toxics) != 2 {
			t.Fatalf("toxics %+v (%v)", toxics, err)
		}
		if err := f.Heal(ctx); err != nil {
			t.Fatal(err)
		}
		if toxics, err := fx.proxy.Toxics(); err != nil || len(toxics) != 0 {
			t.Fatalf("after Heal: toxics %+v (%v)", toxics, err)
		}
	})
}

// checkTable: the levels table's reset row, one direction at levels 1 and
// 3, both at once at level 2, after a 0-20ms delay.
func (p ResetParams) checkTable(t *testing.T, seed int64, w Window) {
	t.Helper()
	if want := map[Kind]int{Base: 1, More: 2, Recovery: 1}[w.Kind]; len(p.Streams) != want {
		t.Errorf("seed %d: %s reset window resets %v, want %d direction(s)", seed, w.Kind, p.Streams, want)
	}
	if p.Delay < 0 || p.Delay > 20*time.Millisecond {
		t.Errorf("seed %d: reset delay %v outside 0-20ms", seed, p.Delay)
	}
}
