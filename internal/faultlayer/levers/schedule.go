package levers

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	seedpkg "github.com/contested/contested/internal/seed"
)

// Schedule is when and how one leg's faults land: at which step of the
// workload each fault is armed, how long it holds, the lever's parameters
// for it, and how the workload retries around it. It is a pure function
// of the lever, the seed and the scope (NewSchedule): each lever draws its
// own windows (Lever.Draw) from random sources seeded by the seed, so one
// seed replays one schedule and another seed gives another.
type Schedule struct {
	Lever   string
	Seed    int64
	Level   int
	Span    int // the workload's length in steps the windows are placed in
	Windows []Window
	Retry   Retry
}

// Window is one fault of a schedule. A leg whose workload marks its steps
// (contested's Leg.Step) arms it at the first step after After steps and
// heals it once the victim saw it and Hold steps or For have passed,
// whichever comes first (Hold 0: For alone), and at MaxHold in any case.
type Window struct {
	After  int
	Hold   int
	For    time.Duration
	Kind   Kind
	Params Params // the lever's own parameters for this fault; nil when it has none
}

// Kind says which level added a window.
type Kind int

// Kinds of window: the level-1 windows every level keeps, the level-2
// windows that add faults (and, for some levers, overlap two at once), and
// the level-3 windows that land while the victim recovers from the fault
// before.
const (
	Base Kind = iota
	More
	Recovery
)

func (k Kind) String() string {
	switch k {
	case More:
		return "more"
	case Recovery:
		return "recovery"
	default:
		return "base"
	}
}

// Params are a lever's parameters for one window: what its toxic, armer
// or plan does differently from one seed to another.
type Params interface {
	// String describes them for a schedule's description and digest.
	String() string
	// Traits are their categorical parts ("downstream", "both"): the
	// variety a seed budget should cover.
	Traits() []string
}

// Retry is how a workload retries an operation a fault failed: a first
// pause of Backoff, doubled on each attempt up to Max.
type Retry struct {
	Backoff time.Duration
	Max     time.Duration
}

// Delay is the pause before retry number attempt (0 for the first).
func (r Retry) Delay(attempt int) time.Duration {
	d := r.Backoff
	for range attempt {
		if d >= r.Max {
			break
		}
		d *= 2
	}
	return min(d, r.Max)
}

// Scope is what a schedule is drawn for: the level (1 sunny, 2 stormy, 3
// radioactive) and the workload's span in steps.
type Scope struct {
	Level int
	Span  int
}

// DefaultSpan is the span of a workload that does not say how many steps
// it takes: a few seconds of a handful of clients' operations.
const DefaultSpan = 600

// MaxHold bounds a window the schedule arms: it is healed this long after
// it was armed, whether or not the victim saw it by then.
const MaxHold = 5 * time.Second

// NewSchedule draws l's schedule for seed and p. The level-1 windows come
// from a stream of their own, the level-2 and level-3 windows from others,
// so a seed keeps its level-1 windows at every level and a higher level
// only adds to them.
func NewSchedule(l Lever, seed int64, p Scope) Schedule {
	p = p.norm()
	s := Schedule{Lever: l.Name(), Seed: seed, Level: p.Level, Span: p.Span, Windows: l.Draw(streams(l.Name(), seed), p)}
	r := seedpkg.Seed(seed).Rand(l.Name() + "/retry")
	s.Retry = Retry{Backoff: between(r, 5, 40) * time.Millisecond, Max: between(r, 100, 400) * time.Millisecond}
	return s
}

func (p Scope) norm() Scope {
	p.Level = min(max(p.Level, 1), 3)
	if p.Span <= 0 {
		p.Span = DefaultSpan
	}
	return p
}

// Streams are the random sources a lever draws its windows from: one per
// kind of window, all seeded by the leg's seed and the lever's name.
type Streams struct {
	base, more, recovery *rand.Rand
}

// Of returns the stream of kind k.
func (s Streams) Of(k Kind) *rand.Rand {
	switch k {
	case More:
		return s.more
	case Recovery:
		return s.recovery
	default:
		return s.base
	}
}

func streams(lever string, seed int64) Streams {
	s := seedpkg.Seed(seed)
	return Streams{s.Rand(lever + "/base"), s.Rand(lever + "/more"), s.Rand(lever + "/recovery")}
}

// between draws an integer in [lo, hi].
func between(r *rand.Rand, lo, hi int) time.Duration {
	return time.Duration(lo + r.IntN(hi-lo+1))
}

// drawWindows lays out a lever's windows for p over its span, in slots:
// at level 1 two base windows, in the first and third quarter of the
// span's middle; level 2 adds two in the second and fourth; level 3 adds a
// recovery window right after each of those, while the victim recovers.
// params draws one window's parameters from r for its kind (nil: none).
// Every draw of a kind comes from that kind's stream, and the number of
// draws does not depend on the span, so the same seed gives the same
// choices whatever span a test names.
func drawWindows(s Streams, p Scope, params func(r *rand.Rand, k Kind) Params) []Window {
	p = p.norm()
	slot := func(r *rand.Rand, k Kind, i int) Window {
		width := float64(p.Span) * 0.2
		start := float64(p.Span)*0.1 + float64(i)*width
		hold := max(1, int(float64(p.Span)*(0.02+0.04*r.Float64())))
		w := Window{Hold: hold, For: between(r, 80, 400) * time.Millisecond, Kind: k}
		w.After = int(start + r.Float64()*max(0, width-float64(hold)-8))
		if params != nil {
			w.Params = params(r, k)
		}
		return w
	}
	var out []Window
	for _, i := range []int{0, 2} {
		out = append(out, slot(s.base, Base, i))
	}
	if p.Level >= 2 {
		for _, i := range []int{1, 3} {
			out = append(out, slot(s.more, More, i))
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].After < out[j].After })
	if p.Level >= 3 {
		var with []Window
		for _, w := range out {
			r := s.recovery
			rec := Window{After: w.After + w.Hold + r.IntN(3), Hold: 2 + r.IntN(5), For: between(r, 30, 150) * time.Millisecond, Kind: Recovery}
			if params != nil {
				rec.Params = params(r, Recovery)
			}
			with = append(with, w, rec)
		}
		out = with
	}
	return out
}

// String describes the schedule in full: its lever, level, span, every
// window and the retry pace. Two schedules with the same description are
// the same schedule; the seed itself is not part of it.
func (s Schedule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s level %d over %d steps:", s.Lever, s.Level, s.Span)
	for i, w := range s.Windows {
		fmt.Fprintf(&b, " #%d %s;", i+1, w)
	}
	fmt.Fprintf(&b, " retry %v..%v", s.Retry.Backoff, s.Retry.Max)
	return b.String()
}

// String describes one window: when it is armed, how long it holds, what
// the lever does in it.
func (w Window) String() string {
	s := fmt.Sprintf("@%d hold %d steps/%v", w.After, w.Hold, w.For)
	if w.Kind != Base {
		s += " (" + w.Kind.String() + ")"
	}
	if w.Params != nil {
		s += " " + w.Params.String()
	}
	return s
}

// Digest is a short digest of a description: 16 hex digits of its SHA-256.
func Digest(description string) string {
	sum := sha256.Sum256([]byte(description))
	return hex.EncodeToString(sum[:8])
}

// Digest is the digest of the schedule's description.
func (s Schedule) Digest() string { return Digest(s.String()) }

// Traits are the lever's categorical choices over the schedule's windows,
// each prefixed with the lever's name ("reset:downstream"), sorted and
// without repeats: what a seed budget should cover.
func (s Schedule) Traits() []string {
	var out []string
	for _, w := range s.Windows {
		if w.Params == nil {
			continue
		}
		for _, t := range w.Params.Traits() {
			out = append(out, s.Lever+":"+t)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Window returns window i of the schedule. Beyond the windows it drew
// (a test that arms more often than the schedule planned) it draws one
// more from the seed and i, so every fault a leg arms has seeded
// parameters.
func (s Schedule) Window(i int) Window {
	if i < len(s.Windows) {
		return s.Windows[i]
	}
	l, ok := Lookup(s.Lever)
	if !ok {
		return Window{}
	}
	extra := l.Draw(streams(s.Lever, s.Seed^int64(i+1)*0x5851f42d4c957f2d), Scope{Level: 1, Span: s.Span})
	if len(extra) == 0 {
		return Window{}
	}
	w := extra[0]
	w.After = 0
	return w
}
