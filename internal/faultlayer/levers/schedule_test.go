package levers

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestScheduleIsTheSeeds: one seed and scope give one schedule, every
// lever's; other seeds give other schedules (no two of 200 alike), so a
// budget of seeds is a budget of schedules.
func TestScheduleIsTheSeeds(t *testing.T) {
	for _, l := range All() {
		t.Run(l.Name(), func(t *testing.T) {
			a, b := NewSchedule(l, 42, Scope{Level: 1}), NewSchedule(l, 42, Scope{Level: 1})
			if a.String() != b.String() || a.Digest() != b.Digest() {
				t.Fatalf("seed 42 drew two schedules:\n%s\n%s", a, b)
			}
			seen := map[string]int64{}
			for seed := int64(1); seed <= 200; seed++ {
				d := NewSchedule(l, seed, Scope{Level: 1}).Digest()
				if other, ok := seen[d]; ok {
					t.Fatalf("seeds %d and %d drew the same schedule %s", other, seed, NewSchedule(l, seed, Scope{Level: 1}))
				}
				seen[d] = seed
			}
		})
	}
}

// TestLevelsIntensifyOneSchedule: a higher level keeps the seed's level-1
// windows and adds to them: two windows at level 1, four at level 2 (the
// added ones "more"), eight at level 3 (a recovery window after each,
// armed within a few steps of its heal).
func TestLevelsIntensifyOneSchedule(t *testing.T) {
	for _, l := range All() {
		for seed := int64(1); seed <= 20; seed++ {
			s1 := NewSchedule(l, seed, Scope{Level: 1})
			for level, want := range map[int]int{1: 2, 2: 4, 3: 8} {
				s := NewSchedule(l, seed, Scope{Level: level})
				if len(s.Windows) != want {
					t.Fatalf("%s seed %d level %d: %d windows, want %d: %s", l.Name(), seed, level, len(s.Windows), want, s)
				}
				for _, w := range s1.Windows {
					if !slices.ContainsFunc(s.Windows, func(x Window) bool { return reflect.DeepEqual(x, w) }) {
						t.Fatalf("%s seed %d level %d lost level 1's window %s: %s", l.Name(), seed, level, w, s)
					}
				}
				for i, w := range s.Windows {
					if i > 0 && w.After < s.Windows[i-1].After {
						t.Fatalf("%s seed %d level %d: windows out of order: %s", l.Name(), seed, level, s)
					}
					if w.Kind == Recovery {
						prev := s.Windows[i-1]
						if gap := w.After - prev.After; gap < 0 || gap > 64 {
							t.Errorf("%s seed %d: recovery window %s is not right after %s", l.Name(), seed, w, prev)
						}
					}
				}
			}
		}
	}
}

// TestScheduleChoicesDoNotDependOnTheSpan: the span a test names moves the
// windows, never the lever's choices, so a seed's parameters are the same
// in a long workload and a short one, and the command that picks seeds
// can tell them without knowing the span.
func TestScheduleChoicesDoNotDependOnTheSpan(t *testing.T) {
	for _, l := range All() {
		a, b := NewSchedule(l, 7, Scope{Level: 3}), NewSchedule(l, 7, Scope{Level: 3, Span: 40})
		for i := range a.Windows {
			if !reflect.DeepEqual(a.Windows[i].Params, b.Windows[i].Params) || a.Windows[i].Kind != b.Windows[i].Kind {
				t.Fatalf("%s: span 600 and 40 drew other choices:\n%s\n%s", l.Name(), a, b)
			}
		}
		if !slices.Equal(a.Traits(), b.Traits()) {
			t.Fatalf("%s: traits %v and %v", l.Name(), a.Traits(), b.Traits())
		}
	}
}

// TestLeversDrawTheirParameters: the levers with parameters draw them per
// window: reset's direction covers both ways over seeds and overlaps them
// at level 2, pool-exhaustion's count stays in its range, a burst's
// permutation differs per window, a crash's restart delay is its hold.
func TestLeversDrawTheirParameters(t *testing.T) {
	traits := map[string]bool{}
	for seed := int64(1); seed <= 40; seed++ {
		for _, tr := range NewSchedule(Reset, seed, Scope{Level: 2}).Traits() {
			traits[tr] = true
		}
	}
	for _, want := range []string{"reset:upstream", "reset:downstream", "reset:both"} {
		if !traits[want] {
			t.Errorf("40 seeds at level 2 never drew %s: %v", want, traits)
		}
	}
	for _, w := range NewSchedule(Reset, 3, Scope{Level: 2}).Windows {
		p := w.Params.(ResetParams)
		if w.Kind == More && len(p.Streams) != 2 {
			t.Errorf("a level-2 reset resets %v, want both directions", p.Streams)
		}
		if p.Delay < 0 || p.Delay > 20*time.Millisecond {
			t.Errorf("reset delay %v out of 0-20ms", p.Delay)
		}
	}
	bs := NewSchedule(Burst, 5, Scope{Level: 1}).Windows
	if bs[0].Params.(BurstParams).Seed == bs[1].Params.(BurstParams).Seed {
		t.Errorf("two bursts of one schedule share a permutation: %v", bs)
	}
	for _, w := range NewSchedule(CrashAndResume, 5, Scope{Level: 1}).Windows {
		if w.Hold != 0 || w.For != w.Params.(CrashParams).Restart {
			t.Errorf("a crash window %s does not hold for its restart delay", w)
		}
	}
	if got := (CrashParams{Pick: 0.99}).Victim(3); got != 2 {
		t.Errorf("Victim(3) of pick 0.99 = %d", got)
	}
}

// TestWindowBeyondTheSchedule: a test that arms more faults than the
// schedule planned still gets seeded parameters, the same for the same
// seed and index.
func TestWindowBeyondTheSchedule(t *testing.T) {
	s := NewSchedule(Reset, 11, Scope{Level: 1})
	a, b := s.Window(9), NewSchedule(Reset, 11, Scope{Level: 1}).Window(9)
	if a.Params == nil || !reflect.DeepEqual(a, b) {
		t.Fatalf("Window(9) = %v and %v", a, b)
	}
	if reflect.DeepEqual(s.Window(9), s.Window(10)) {
		t.Errorf("windows 9 and 10 are alike: %v", s.Window(9))
	}
}

func TestRetryDelay(t *testing.T) {
	r := Retry{Backoff: 10 * time.Millisecond, Max: 50 * time.Millisecond}
	for attempt, want := range []time.Duration{10, 20, 40, 50, 50} {
		if got := r.Delay(attempt); got != want*time.Millisecond {
			t.Errorf("Delay(%d) = %v, want %v", attempt, got, want*time.Millisecond)
		}
	}
}

func TestScheduleDescription(t *testing.T) {
	s := NewSchedule(Reset, 1, Scope{Level: 2})
	d := s.String()
	for _, want := range []string{"reset level 2 over 600 steps:", "#4 ", "upstream+downstream", "(more)", "retry "} {
		if !strings.Contains(d, want) {
			t.Errorf("description lacks %q: %s", want, d)
		}
	}
	if len(s.Digest()) != 16 || s.Digest() != Digest(d) {
		t.Errorf("digest %q of %q", s.Digest(), d)
	}
}

// TestTheLevelsTableHolds: what the levels table (docs/concepts/seeds-and-levels.md) says of each
// lever, drawn over many seeds of one span. Level 1's two windows hold
// 2-6% of the span or 80-400ms; level 2 adds one between them and one
// after them; level 3 adds, 0-2 steps after each window's hold, one of 2-6
// steps or 30-150ms; and each lever's parameters stay in the ranges the
// table gives per level.
func TestTheLevelsTableHolds(t *testing.T) {
	const span = 600
	for _, l := range All() {
		for seed := int64(1); seed <= 50; seed++ {
			s := NewSchedule(l, seed, Scope{Level: 3, Span: span})
			var base, more []Window
			for i, w := range s.Windows {
				switch w.Kind {
				case Base:
					base = append(base, w)
				case More:
					more = append(more, w)
				case Recovery:
					prev := s.Windows[i-1]
					if gap := w.After - prev.After; gap < 1 {
						t.Errorf("%s seed %d: recovery window %s is not after %s", l.Name(), seed, w, prev)
					}
					if !timeHeld(l.Name()) && (w.Hold < 2 || w.Hold > 6 || w.For < 30*time.Millisecond || w.For > 150*time.Millisecond) {
						t.Errorf("%s seed %d: recovery window %s holds outside 2-6 steps / 30-150ms", l.Name(), seed, w)
					}
					if !timeHeld(l.Name()) {
						if gap := w.After - prev.After - prev.Hold; gap < 0 || gap > 2 {
							t.Errorf("%s seed %d: recovery window %s lands %d steps after %s's hold, want 0-2", l.Name(), seed, w, gap, prev)
						}
					}
				}
				if timeHeld(l.Name()) {
					continue
				}
				if w.Kind != Recovery && (w.Hold < span*2/100 || w.Hold > span*6/100 || w.For < 80*time.Millisecond || w.For > 400*time.Millisecond) {
					t.Errorf("%s seed %d: window %s holds outside 2-6%% of %d steps / 80-400ms", l.Name(), seed, w, span)
				}
			}
			if len(base) != 2 || len(more) != 2 {
				t.Fatalf("%s seed %d: %d base and %d more windows", l.Name(), seed, len(base), len(more))
			}
			if !(base[0].After < more[0].After && more[0].After < base[1].After && base[1].After < more[1].After) {
				t.Errorf("%s seed %d: level 2's windows are not one between level 1's and one after: %s", l.Name(), seed, s)
			}
			for _, w := range s.Windows {
				checkTableParams(t, l.Name(), seed, w, s)
			}
		}
	}
}

// timeHeld reports whether a lever's windows hold by time alone (its
// victim does no steps while struck), so the table's step holds do not
// apply: a crashed worker, a client cut off.
func timeHeld(lever string) bool { return lever == NameCrashAndResume || lever == NameIsolate }

// tableParams are a lever's parameters that know the levels table's word
// on them: the lever's own test gives its Params type a checkTable, so a
// new lever's ranges are checked beside it, not in a list of levers here.
type tableParams interface {
	Params
	// checkTable reports where window w (of seed) leaves the table's ranges.
	checkTable(t *testing.T, seed int64, w Window)
}

// checkTableParams checks one window's parameters against the docs'
// levels table: parameters of a type with no checkTable are refused, and
// so is a window without parameters in a schedule whose others have them.
func checkTableParams(t *testing.T, lever string, seed int64, w Window, s Schedule) {
	t.Helper()
	switch p := w.Params.(type) {
	case tableParams:
		p.checkTable(t, seed, w)
	case nil:
		if i := slices.IndexFunc(s.Windows, func(o Window) bool { return o.Params != nil }); i >= 0 {
			t.Errorf("seed %d: %s window %s has no parameters, window %s has", seed, lever, w, s.Windows[i])
		}
	default:
		t.Errorf("seed %d: %s window with parameters %T the table does not name (give them a checkTable in the lever's test)", seed, lever, p)
	}
}
