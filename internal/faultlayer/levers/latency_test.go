package levers

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

// took runs sql through p and returns how long it took, failing the test
// on an error: a latency fault slows the victim down, it breaks nothing.
func took(t *testing.T, ctx context.Context, fx *fixture, sql string) time.Duration {
	t.Helper()
	pool := fx.pool(t)
	mustExec(t, ctx, pool, "SELECT 1") // the connection is warm: only the query's round trip is timed
	start := time.Now()
	mustExec(t, ctx, pool, sql)
	return time.Since(start)
}

// TestLatency: armed, the latency toxic reads back from the proxy's toxic
// list with the drawn latency and jitter, the victim's next query takes at
// least the least delay, and it fired; healed, the toxic is gone and the
// query is quick again. Armed with no traffic, or on a proxy that is gone,
// it did not fire.
func TestLatency(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		params LatencyParams
	}{
		{"steady", LatencyParams{Latency: 250 * time.Millisecond}},
		{"with jitter", LatencyParams{Latency: 300 * time.Millisecond, Jitter: 50 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t, true)
			pool := fx.pool(t)
			mustExec(t, ctx, pool, "SELECT 1")
			tg := fx.target(t)
			tg.Window = Window{Params: tt.params}
			f := arm(t, Latency, tg)
			in, what := f.Injector()
			for _, want := range []string{"downstream latency toxic", "latency=" + strconv.FormatInt(tt.params.Latency.Milliseconds(), 10), "read back: true"} {
				if !in || !strings.Contains(what, want) {
					t.Fatalf("injector: %v %q, want %q in it", in, what, want)
				}
			}
			back, err := fx.proxy.Toxics()
			if err != nil || len(back) != 1 || back[0].Type != "latency" || back[0].Attributes["latency"] != float64(tt.params.Latency.Milliseconds()) {
				t.Fatalf("the proxy's toxic list reads %+v (%v)", back, err)
			}
			start := time.Now()
			mustExec(t, ctx, pool, "SELECT 1")
			slow := time.Since(start)
			s, ok := f.(Slowing)
			if !ok {
				t.Fatalf("a latency fault (%T) is not Slowing: a leg could not prove it", f)
			}
			victim := 0
			if landed, _ := s.Slowed(slow); landed {
				victim = 1
			}
			if fired := Latency.Fired(Proof{Injected: in, Victim: victim}); fired != nil {
				t.Fatalf("did not fire: %v (the query took %v, the least delay is %v)", fired, slow, tt.params.Least())
			}
			if err := f.Heal(ctx); err != nil {
				t.Fatal(err)
			}
			if toxics, err := fx.proxy.Toxics(); err != nil || len(toxics) != 0 {
				t.Fatalf("after Heal the proxy has toxics %+v (%v)", toxics, err)
			}
			if quick := took(t, ctx, fx, "SELECT 1"); tt.params.Slowed(quick) {
				t.Fatalf("after Heal a query still took %v", quick)
			}
		})
	}
	t.Run("armed with no traffic did not fire", func(t *testing.T) {
		fx := newFixture(t, true)
		f := arm(t, Latency, fx.target(t))
		in, _ := f.Injector()
		f.Heal(ctx)
		if err := Latency.Fired(Proof{Injected: in}); !errors.Is(err, ErrUnseen) {
			t.Fatalf("Fired = %v, want ErrUnseen", err)
		}
	})
	t.Run("a proxy that is gone is not in place", func(t *testing.T) {
		fx := newFixture(t, true)
		fx.proxy.Delete()
		f, err := Latency.Arm(ctx, fx.target(t))
		if err == nil {
			t.Fatal("armed a deleted proxy")
		}
		in, _ := f.Injector()
		if err := Latency.Fired(Proof{Injected: in, Victim: 1}); !errors.Is(err, ErrNotInPlace) {
			t.Fatalf("Fired = %v, want ErrNotInPlace", err)
		}
	})
}

// TestLatencySlowed: an operation proves the fault only when it took at
// least the least delay the toxic adds; a fault without a delay proves
// nothing.
func TestLatencySlowed(t *testing.T) {
	tests := []struct {
		name   string
		params LatencyParams
		took   time.Duration
		want   bool
	}{
		{"as slow as the latency", LatencyParams{Latency: 200 * time.Millisecond}, 200 * time.Millisecond, true},
		{"quicker than the latency", LatencyParams{Latency: 200 * time.Millisecond}, 199 * time.Millisecond, false},
		{"within the jitter below it", LatencyParams{Latency: 200 * time.Millisecond, Jitter: 40 * time.Millisecond}, 160 * time.Millisecond, true},
		{"below the jitter", LatencyParams{Latency: 200 * time.Millisecond, Jitter: 40 * time.Millisecond}, 159 * time.Millisecond, false},
		{"no delay at all", LatencyParams{Latency: 10 * time.Millisecond, Jitter: 20 * time.Millisecond}, time.Second, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.params.Slowed(tt.took); got != tt.want {
				t.Errorf("%s: Slowed(%v) = %v, want %v", tt.params, tt.took, got, tt.want)
			}
		})
	}
}

// checkTable: the levels table's latency row, 100-300ms, 300-600ms at
// level 2 and 50-150ms at level 3, with a jitter of at most a fifth.
func (p LatencyParams) checkTable(t *testing.T, seed int64, w Window) {
	t.Helper()
	ms := map[Kind][2]time.Duration{Base: {100, 300}, More: {300, 600}, Recovery: {50, 150}}[w.Kind]
	if p.Latency < ms[0]*time.Millisecond || p.Latency > ms[1]*time.Millisecond || p.Jitter < 0 || p.Jitter > p.Latency/5 {
		t.Errorf("seed %d: %s latency window %s outside %d-%dms with a jitter of at most a fifth", seed, w.Kind, p, ms[0], ms[1])
	}
}
