package contested

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/faultlayer/levers"
	"github.com/contested/contested/internal/tier"
)

// stepped is what a workload driven by Step saw of its schedule.
type stepped struct {
	mu      sync.Mutex
	steps   int
	armedAt []int // the step count when each window armed
	healed  int
}

// runStepped runs a sequential workload of queries through a reset leg's
// proxy, marking each with Step, until the schedule is done.
func runStepped(tb testing.TB, seed string, span int) (*Leg, *stepped) {
	tb.Helper()
	ctx := context.Background()
	leg := Start(tb, "test.store", Reset, Span(span))
	s := &stepped{}
	leg.OnArm(func(context.Context, Window) { s.armedAt = append(s.armedAt, s.steps) })
	leg.OnHeal(func(context.Context, Window) { s.healed++ })
	pool := leg.Pool(ctx)
	mustExec(tb, ctx, pool, "SELECT 1")
	deadline := time.After(time.Minute)
	for {
		select {
		case <-leg.Done():
			return leg, s
		case <-deadline:
			tb.Fatalf("the schedule was not done after a minute, at step %d", s.steps)
		default:
		}
		s.mu.Lock()
		s.steps++
		s.mu.Unlock()
		leg.Step(ctx)
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := pool.Exec(qctx, "SELECT 1")
		cancel()
		leg.Observe(err)
	}
}

// TestStepRunsTheSchedule: a workload that marks its steps gets its faults
// from the schedule: each window armed on the step it names, healed after
// it, both recorded with the schedule's digest and their place in it; the
// same seed runs the same schedule again, another seed another one.
func TestStepRunsTheSchedule(t *testing.T) {
	tier.Full(t, "a fault layer")
	digests := map[string]string{}
	for _, run := range []struct{ name, seed string }{{"seed 42", "42"}, {"seed 42 again", "42"}, {"seed 43", "43"}} {
		t.Run(run.name, func(t *testing.T) {
			t.Setenv(envvar.Seed, run.seed)
			var sched Schedule
			var s *stepped
			p := runProbe(t, func(tb *probe) {
				var leg *Leg
				leg, s = runStepped(tb, run.seed, 80)
				sched = leg.Schedule()
			})
			if errs := p.errors(); errs != "" {
				t.Fatalf("the leg reported:\n%s", errs)
			}
			if len(s.armedAt) != len(sched.Windows) || s.healed != len(sched.Windows) {
				t.Fatalf("armed at steps %v and healed %d windows of %s", s.armedAt, s.healed, sched)
			}
			for i, w := range sched.Windows {
				if s.armedAt[i] != max(w.After, 1) {
					t.Errorf("window %d (%s) armed on step %d, want step %d", i+1, w, s.armedAt[i], max(w.After, 1))
				}
			}
			recs := records(t, p.name)
			if len(recs) != len(sched.Windows) {
				t.Fatalf("%d records for %d windows", len(recs), len(sched.Windows))
			}
			for _, r := range recs {
				if r.Schedule == nil || r.Schedule.Timing != "schedule" || r.Schedule.Window < 1 || !r.Fired {
					t.Fatalf("record %+v: want a fired fault the schedule timed", r)
				}
				w := sched.Windows[r.Schedule.Window-1]
				if !strings.Contains(r.Schedule.Summary, w.String()) {
					t.Errorf("record schedule %q lacks its window %s", r.Schedule.Summary, w)
				}
				if r.Schedule.Digest != recs[0].Schedule.Digest {
					t.Errorf("one leg's records carry digests %s and %s", r.Schedule.Digest, recs[0].Schedule.Digest)
				}
			}
			digests[run.name] = recs[0].Schedule.Digest
		})
	}
	if digests["seed 42"] != digests["seed 42 again"] {
		t.Errorf("seed 42 ran two schedules: %v", digests)
	}
	if digests["seed 42"] == digests["seed 43"] {
		t.Errorf("seeds 42 and 43 ran one schedule: %v", digests)
	}
}

// TestATestThatTimesItsFaultsRecordsWhatTheSeedChose: a test that arms
// and heals by itself still gets each fault's parameters from the
// schedule, and the record says the test timed it. A lever with no
// parameters armed that way runs the same schedule for every seed, which
// the digest shows (and the contract verdict refuses as hardening); a
// reset differs by seed in its directions.
// armedByTest runs a leg of lever with seed whose test arms and heals two
// faults by itself, and returns the schedule its records carry and the
// direction its schedule drew for the first fault (a reset's).
func armedByTest(t *testing.T, lever Lever, seed string) (*faultrecord.Schedule, string) {
	t.Setenv(envvar.Seed, seed)
	var first string
	p := runProbe(t, func(tb *probe) {
		leg := Start(tb, "test.store", lever)
		if p, ok := leg.sched.Window(0).Params.(levers.ResetParams); ok {
			first = strings.Join(p.Streams, "+")
		}
		for range 2 {
			leg.Arm(context.Background())
			leg.Observe(fmt.Errorf("read: %w", syscall.ECONNRESET))
			leg.Heal(context.Background())
		}
	})
	if errs := p.errors(); errs != "" {
		t.Fatalf("the leg reported:\n%s", errs)
	}
	recs := records(t, p.name)
	if len(recs) != 2 || recs[0].Schedule == nil || recs[0].Schedule.Timing != "test" {
		t.Fatalf("records %+v: want two the test timed", recs)
	}
	return recs[0].Schedule, first
}

func TestATestThatTimesItsFaultsRecordsWhatTheSeedChose(t *testing.T) {
	tier.Full(t, "a fault layer")
	digest := func(lever Lever, seed string) (sched *faultrecord.Schedule, first string) {
		t.Run(fmt.Sprintf("%s seed %s", lever, seed), func(t *testing.T) {
			sched, first = armedByTest(t, lever, seed)
		})
		return sched, first
	}
	a, _ := digest(Disconnect, "1")
	b, _ := digest(Disconnect, "2")
	if a.Digest != b.Digest || !strings.Contains(a.Summary, "#1 armed by the test; #2 armed by the test;") {
		t.Errorf("disconnect armed by the test: seeds 1 and 2 recorded %+v and %+v, want one schedule", a, b)
	}
	var seen []string
	resets := map[string]bool{}
	for seed := 1; seed <= 6; seed++ {
		s, first := digest(Reset, fmt.Sprint(seed))
		if !strings.Contains(s.Summary, "#1 armed by the test: "+first+" delay") {
			t.Errorf("seed %d: the record %q does not carry the direction %s its schedule drew", seed, s.Summary, first)
		}
		resets[s.Digest] = true
		seen = append(seen, first)
	}
	if len(resets) < 5 {
		t.Errorf("6 seeds of a test-timed reset recorded %d schedules (directions %v)", len(resets), seen)
	}
}

// TestAWorkloadThatStopsBeforeItsScheduleFails: steps that end before the
// schedule's last window are reported, with where the workload stopped.
func TestAWorkloadThatStopsBeforeItsScheduleFails(t *testing.T) {
	p := runProbe(t, func(tb *probe) {
		leg := Start(tb, "test.store", Disconnect)
		for range 3 {
			leg.Step(context.Background())
		}
	})
	if errs := p.errors(); !strings.Contains(errs, "the workload stopped at step 3, before its schedule armed window 1 of 2") {
		t.Fatalf("the leg said:\n%s", errs)
	}
}

// TestHoldAndHeal: a fault the test arms itself is held as its window
// says, at least its time and until the victim saw it, then healed; the
// record says the schedule held it.
func TestHoldAndHeal(t *testing.T) {
	var held, want time.Duration
	p := runProbe(t, func(tb *probe) {
		ctx := context.Background()
		leg := Start(tb, "test.store", Disconnect)
		want = leg.sched.Window(0).For
		start := time.Now()
		leg.Arm(ctx)
		go func() {
			time.Sleep(want / 2)
			leg.Observe(fmt.Errorf("dial: %w", syscall.ECONNREFUSED))
		}()
		leg.HoldAndHeal(ctx)
		held = time.Since(start)
	})
	if errs := p.errors(); errs != "" {
		t.Fatalf("the leg reported:\n%s", errs)
	}
	if held < want || held > want+time.Second {
		t.Errorf("held %v for a window of %v", held, want)
	}
	recs := records(t, p.name)
	if len(recs) != 1 || !recs[0].Fired || recs[0].Schedule.Timing != "held by schedule" {
		t.Fatalf("records %+v", recs)
	}
}
