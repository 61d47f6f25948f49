package contested

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/faultlayer/levers"
)

// runClients runs n clients of leg until its schedule is done, each
// stepping the schedule and querying through its own pool; busy clients
// (those for which active says so) wrap each query in Begin. It returns
// how many queries each client got answered.
func runClients(tb testing.TB, ctx context.Context, leg *Leg, n int, active func(i int) bool, begin bool) []int {
	answered := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		c := leg.Client(i)
		pool := c.Pool(ctx)
		wg.Go(func() {
			for {
				select {
				case <-leg.Done():
					return
				case <-time.After(5 * time.Millisecond):
				}
				leg.Step(ctx)
				if !active(i) {
					continue
				}
				end := func() {}
				if begin {
					end = c.Begin(ctx, "acquire")
				}
				qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				_, err := pool.Exec(qctx, "SELECT 1")
				cancel()
				end()
				if !c.Observe(err) && err == nil {
					answered[i]++
				}
			}
		})
	}
	wg.Wait()
	return answered
}

// TestIsolateLeg: the isolate lever cuts off the client its schedule picks
// while the others go on; each client has a proxy of its own, and the
// records carry both sides: the struck client's proxy read back disabled,
// its own errors, and the spared clients' work.
func TestIsolateLeg(t *testing.T) {
	ctx := context.Background()
	t.Run("it needs clients", func(t *testing.T) {
		p := runProbe(t, func(tb *probe) { Start(tb, "test.lock", Isolate) })
		if !strings.Contains(p.errors(), "start it with contested.Clients(n)") {
			t.Fatalf("Start(isolate) without clients: %q", p.errors())
		}
	})
	t.Run("too many clients", func(t *testing.T) {
		p := runProbe(t, func(tb *probe) { Start(tb, "test.lock", Isolate, Clients(MaxClients+1)) })
		if !strings.Contains(p.errors(), "at most 8 clients") {
			t.Fatalf("Start(isolate, Clients(9)): %q", p.errors())
		}
	})
	t.Run("one client cut off, the others work", func(t *testing.T) {
		var victims [][]int
		p := runProbe(t, func(tb *probe) {
			leg := Start(tb, "test.lock", Isolate, Clients(3), Span(120))
			dsns := []string{leg.ClientDSN(0), leg.ClientDSN(1), leg.ClientDSN(2)}
			if dsns[0] == dsns[1] || dsns[1] == dsns[2] || dsns[0] == dsns[2] {
				tb.Errorf("clients share a path: %v", dsns)
			}
			for _, w := range leg.sched.Windows {
				victims = append(victims, w.Params.(levers.IsolateParams).Victims(3))
			}
			runClients(tb, ctx, leg, 3, func(int) bool { return true }, false)
		})
		if errs := p.errors(); errs != "" {
			t.Fatalf("the leg reported:\n%s", errs)
		}
		recs := records(t, p.name)
		if len(recs) != len(victims) {
			t.Fatalf("%d records, want %d", len(recs), len(victims))
		}
		slices.SortFunc(recs, func(a, b faultrecord.Record) int { return a.ArmedAt.Compare(b.ArmedAt) })
		for k, r := range recs {
			v := victims[k][0]
			if !r.Fired || r.Leg != "isolate" || r.Class != "lock" {
				t.Errorf("record %d: %+v", k, r)
			}
			if !strings.Contains(r.Evidence.Injector, fmt.Sprintf("client %d's proxy", v)) || !strings.Contains(r.Evidence.Injector, "disabled (read back enabled=false)") {
				t.Errorf("record %d: injector %q does not show client %d cut off", k, r.Evidence.Injector, v)
			}
			if !strings.HasPrefix(r.Evidence.Victim, fmt.Sprintf("client %d: ", v)) || !strings.Contains(r.Evidence.Victim, "meanwhile the clients it spared kept working") {
				t.Errorf("record %d: victim %q does not show client %d's errors and the others' work", k, r.Evidence.Victim, v)
			}
			for o := range 3 {
				if o != v && strings.Contains(r.Evidence.Victim, fmt.Sprintf("client %d: ", o)) {
					t.Errorf("record %d: a spared client's error counted as the fault's: %q", k, r.Evidence.Victim)
				}
			}
		}
	})
	t.Run("the spared clients idle: not fired", func(t *testing.T) {
		p := runProbe(t, func(tb *probe) {
			leg := Start(tb, "test.lock", Isolate, Clients(3), Span(120))
			first := leg.sched.Windows[0].Params.(levers.IsolateParams).Victims(3)
			runClients(tb, ctx, leg, 3, func(i int) bool { return slices.Contains(first, i) }, false)
		})
		if !strings.Contains(p.errors(), "ARMED BUT DID NOT FIRE: the clients it spared did no work while it was armed") {
			t.Fatalf("a cut with idle bystanders was not refused:\n%s", p.errors())
		}
	})
	t.Run("level 3 cuts while a spared client is busy", func(t *testing.T) {
		t.Setenv("CONTESTED_LEVEL", "3")
		p := runProbe(t, func(tb *probe) {
			leg := Start(tb, "test.lock", Isolate, Clients(3), Span(200))
			runClients(tb, ctx, leg, 3, func(int) bool { return true }, true)
		})
		if errs := p.errors(); errs != "" {
			t.Fatalf("the leg reported:\n%s", errs)
		}
		busy := 0
		for _, r := range records(t, p.name) {
			if strings.Contains(r.Evidence.Injector, "in the middle of acquire") {
				busy++
			}
		}
		if busy != 4 {
			t.Fatalf("%d records armed while a spared client was mid-acquire, want level 3's 4", busy)
		}
	})
	t.Run("other levers share one path", func(t *testing.T) {
		runProbe(t, func(tb *probe) {
			leg := Start(tb, "test.lock", Reset, Clients(3))
			if a, b := leg.ClientDSN(0), leg.ClientDSN(2); a != b || a != leg.DSN() {
				t.Errorf("clients of a reset leg: %s and %s, the leg %s; want one shared path", a, b, leg.DSN())
			}
			leg.Arm(ctx)
			leg.Heal(ctx)
			leg.Note("shared")
		})
	})
}

func TestDefinite(t *testing.T) {
	ctx := context.Background()
	_, connect := pgx.Connect(ctx, "postgres://u@127.0.0.1:1/db?connect_timeout=1")
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"the server refused the statement", &pgconn.PgError{Code: "23505"}, true},
		{"no connection could be made", connect, true},
		{"a reset under the request", fmt.Errorf("read: %w", syscall.ECONNRESET), false},
		{"a timeout", context.DeadlineExceeded, false},
	}
	for _, tt := range tests {
		if got := Definite(tt.err); got != tt.want {
			t.Errorf("%s: Definite(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}
