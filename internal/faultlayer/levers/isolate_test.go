package levers

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2/client"
)

// TestIsolate: armed on three clients' own proxies, the picked client's
// proxy reads back disabled and the others' enabled; the struck client's
// query fails with a disconnect's signal while another client's succeeds,
// and it fired; healed, the struck client works again. With the spared
// clients idle, or with one path shared by every client, it did not fire.
func TestIsolate(t *testing.T) {
	ctx := context.Background()
	t.Run("fires on the picked client alone", func(t *testing.T) {
		fx := newFixture(t, false)
		var proxies []*toxiproxy.Proxy
		var dials []string
		for range 3 {
			p, dial := proxyTo(t, fx.layer, fx.layer.PostgresUpstream)
			proxies, dials = append(proxies, p), append(dials, dial)
		}
		tg := fx.target(t)
		tg.Clients = proxies
		tg.Window = Window{Params: IsolateParams{Picks: []float64{0.5}}} // the middle of three
		p0, p1 := fx.poolVia(t, dials[0]), fx.poolVia(t, dials[1])
		mustExec(t, ctx, p1, "SELECT 1")
		mustExec(t, ctx, p0, "SELECT 1")
		f := arm(t, Isolate, tg)
		in, what := f.Injector()
		if !in || !strings.Contains(what, "client 1's proxy") || !strings.Contains(what, "disabled (read back enabled=false)") || !strings.Contains(what, "0 (enabled=true), 2 (enabled=true)") {
			t.Fatalf("injector: %v %q", in, what)
		}
		if got := f.(Scoped).Struck(); !slices.Equal(got, []int{1}) {
			t.Fatalf("struck %v, want [1]", got)
		}
		err := query(ctx, p1, 5*time.Second, "SELECT 1")
		if err == nil {
			t.Fatal("the isolated client's query succeeded")
		}
		if err := query(ctx, p0, 5*time.Second, "SELECT 1"); err != nil {
			t.Fatalf("a spared client's query failed: %v", err)
		}
		if fired := Isolate.Fired(Proof{Injected: in, Victim: seen(Isolate, err), Bystanders: 1}); fired != nil {
			t.Fatalf("did not fire: %v (the victim saw %v, signal %q)", fired, err, Classify(err))
		}
		if err := f.Heal(ctx); err != nil {
			t.Fatal(err)
		}
		mustExec(t, ctx, p1, "SELECT 1")
	})
	t.Run("the spared clients idle: not fired", func(t *testing.T) {
		if err := Isolate.Fired(Proof{Injected: true, Victim: 2}); !errors.Is(err, ErrBystandersIdle) {
			t.Fatalf("Fired = %v, want ErrBystandersIdle", err)
		}
	})
	t.Run("one shared path is not a target", func(t *testing.T) {
		fx := newFixture(t, true)
		tg := fx.target(t)
		tg.Clients = []*toxiproxy.Proxy{fx.proxy}
		f, err := Isolate.Arm(ctx, tg)
		if !errors.Is(err, ErrNoTarget) || f != nil {
			t.Fatalf("Arm with one client = %v, %v; want ErrNoTarget and no fault", f, err)
		}
	})
}

func TestIsolateVictims(t *testing.T) {
	tests := []struct {
		picks []float64
		n     int
		want  []int
	}{
		{[]float64{0}, 3, []int{0}},
		{[]float64{0.99}, 3, []int{2}},
		{[]float64{0.5, 0.5}, 3, []int{1, 2}}, // index 1 of [0 1 2], then index 1 of [0 2]
		{[]float64{0.1, 0.9}, 2, []int{0}},    // never every client
		{[]float64{0.7}, 1, nil},
	}
	for _, tt := range tests {
		if got := (IsolateParams{Picks: tt.picks}).Victims(tt.n); !slices.Equal(got, tt.want) {
			t.Errorf("Victims(%v of %d) = %v, want %v", tt.picks, tt.n, got, tt.want)
		}
	}
}

// checkTable: the levels table's isolate row, one client cut off for
// 1.5-4 s, two at level 2, and at level 3 one for 0.3-1 s that waits for a
// busy client.
func (p IsolateParams) checkTable(t *testing.T, seed int64, w Window) {
	t.Helper()
	want := map[Kind]int{Base: 1, More: 2, Recovery: 1}[w.Kind]
	lo, hi := 1500*time.Millisecond, 4*time.Second
	if w.Kind == Recovery {
		lo, hi = 300*time.Millisecond, time.Second
	}
	if len(p.Picks) != want || p.WhileBusy != (w.Kind == Recovery) || w.Hold != 0 || w.For < lo || w.For > hi {
		t.Errorf("seed %d: %s isolate window %s does not cut %d client(s) off for %v-%v (waiting for a busy client only at level 3)", seed, w.Kind, w, want, lo, hi)
	}
}
