package contested

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/faultlayer/levers"
)

// Schedule is when and how a leg's faults land, drawn from its seed and
// level by its lever: one seed replays one schedule.
type Schedule struct {
	Lever string // the lever whose faults these are
	Seed  int64  // the seed they were drawn from
	Level int    // the level they were drawn at, 1 to 3
	// Span is the workload's length in steps the windows are placed in.
	Span    int
	Windows []Window // the faults, in the order they land
	// Backoff and MaxBackoff are the retry pace around a fault: a first
	// pause of Backoff, doubled on each attempt up to MaxBackoff.
	Backoff, MaxBackoff time.Duration
	s                   levers.Schedule
}

// String describes the schedule: its lever, level, span, each window and
// the retry pace.
func (s Schedule) String() string { return s.s.String() }

// Digest is 16 hex digits of the SHA-256 of the schedule's description:
// two runs with the same digest drew the same faults.
func (s Schedule) Digest() string { return s.s.Digest() }

// Window is one fault of a schedule: armed at the first step after After
// steps, healed once the victim saw it and Hold steps or For have passed,
// whichever comes first.
type Window struct {
	After int           // the steps before it is armed
	Hold  int           // the steps it holds for at least (0: For alone)
	For   time.Duration // the time it holds for at least
	// Kind is the level that added it: "base" (every level), "more"
	// (level 2 and up), "recovery" (level 3: while the victim recovers).
	Kind string
	// Params describes the lever's own parameters for this fault ("" when
	// it has none).
	Params string
	desc   string
}

// String describes the window: when it is armed, how long it holds, what
// the lever does in it.
func (w Window) String() string { return w.desc }

func window(w levers.Window) Window {
	pw := Window{After: w.After, Hold: w.Hold, For: w.For, Kind: w.Kind.String(), desc: w.String()}
	if w.Params != nil {
		pw.Params = w.Params.String()
	}
	return pw
}

func schedule(s levers.Schedule) Schedule {
	ps := Schedule{Lever: s.Lever, Seed: s.Seed, Level: s.Level, Span: s.Span, Backoff: s.Retry.Backoff, MaxBackoff: s.Retry.Max, s: s}
	for _, w := range s.Windows {
		ps.Windows = append(ps.Windows, window(w))
	}
	return ps
}

// Who decided when a fault was armed and healed: the record's
// schedule.timing.
const (
	timingSchedule = "schedule"         // the leg, on the workload's steps
	timingHeld     = "held by schedule" // the test armed it, the leg held and healed it
	timingTest     = "test"             // the test armed and healed it
)

// drive is a leg's schedule at work: the steps its workload marked, the
// next window, the window the schedule holds now, and the hooks around
// each window.
type drive struct {
	mu      sync.Mutex // held across a transition: arm or heal with its hooks
	step    int
	next    int
	byTest  bool // the test arms the windows itself (it called Arm)
	stepped bool // the workload marked steps
	armed   *held
	broken  bool // arming failed: the schedule arms nothing more
	done    chan struct{}
	closed  bool
	onArm   []func(context.Context, levers.Window)
	onHeal  []func(context.Context, levers.Window)
	// busy are the clients in the middle of an operation they marked
	// (Client.Begin), and what it is; dueSince is when a window that waits
	// for one came due.
	busy     map[int]string
	dueSince time.Time
	// stopped: the test ended (stopDrive); nothing is armed any more.
	stopped bool
}

// held is a window the schedule holds: armed at step at, healed by Step
// or by its timer, whichever comes first.
type held struct {
	f     *fault
	w     levers.Window
	at    int
	start time.Time
	stop  chan struct{}
}

// Schedule is the leg's schedule: what its seed and level drew for its
// lever. Tests read its windows (how many faults, their parameters) and
// its retry pace; Step runs it.
func (l *Leg) Schedule() Schedule { return schedule(l.sched) }

// Step marks that the workload is about to run its next operation. The
// leg arms its schedule's next window on the step the window names and
// heals it once the victim saw it and the window's hold is over (its
// steps, or its time, whichever comes first): the tool owns when each
// fault lands and how long it stays. Call it from any goroutine, before
// each operation, and run the workload until Done; a step that arms or
// heals waits for that to finish, so the operations after it run with the
// fault in place or healed. Burst legs are armed by Deliveries, never by
// a step.
func (l *Leg) Step(ctx context.Context) { l.advance(ctx, 1, 0) }

// Progress is Step for a workload that counts its own progress (the
// transfers a worker process decided): it sets the step count to n when
// n is higher, then arms or heals as Step does.
func (l *Leg) Progress(ctx context.Context, n int) { l.advance(ctx, 0, n) }

// Armed reports whether a fault of the leg is armed now.
func (l *Leg) Armed() bool { return l.armedNow() }

// Done is closed once every window of the schedule was armed and healed.
func (l *Leg) Done() <-chan struct{} { return l.drive.done }

// OnArm registers f to run just before the leg arms each window of its
// schedule (a history's fault window opens, a workload changes its mix).
// f must not call Step.
func (l *Leg) OnArm(f func(ctx context.Context, w Window)) {
	l.drive.mu.Lock()
	defer l.drive.mu.Unlock()
	l.drive.onArm = append(l.drive.onArm, func(ctx context.Context, w levers.Window) { f(ctx, window(w)) })
}

// OnHeal registers f to run just after the leg healed each window of its
// schedule. f must not call Step.
func (l *Leg) OnHeal(f func(ctx context.Context, w Window)) {
	l.drive.mu.Lock()
	defer l.drive.mu.Unlock()
	l.drive.onHeal = append(l.drive.onHeal, func(ctx context.Context, w levers.Window) { f(ctx, window(w)) })
}

// Backoff is the pause before retry number attempt of an operation a
// fault failed, by the schedule's retry pace.
func (l *Leg) Backoff(attempt int) time.Duration { return l.sched.Retry.Delay(attempt) }

// HoldAndHeal holds the fault the test armed as its window says (at least
// the window's time, and until the victim saw it, at most levers.MaxHold)
// and heals it: for a test that must arm at a moment of its own (a
// database settled first) and leaves the rest to the schedule.
func (l *Leg) HoldAndHeal(ctx context.Context) {
	l.t.Helper()
	l.mu.Lock()
	f := l.current
	if f != nil {
		f.timing = timingHeld
	}
	l.mu.Unlock()
	if f == nil {
		l.t.Errorf("contested: HoldAndHeal on leg %s with no fault armed; call Arm first", l.lever)
		return
	}
	if sleep(ctx, time.Until(f.armedAt.Add(f.window.For))) {
		for !l.landed(f) && time.Since(f.armedAt) < levers.MaxHold {
			if !sleep(ctx, 10*time.Millisecond) {
				break
			}
		}
	}
	l.Heal(ctx)
}

// sleep waits d, or less when ctx ends first: false then.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// advance moves the step count (by steps, or to n) and runs the schedule.
func (l *Leg) advance(ctx context.Context, by, to int) {
	d := &l.drive
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return
	}
	d.stepped = true
	d.step = max(d.step+by, to)
	l.transition(ctx)
}

// transition heals the window the schedule holds when its hold is over,
// and arms the next window when its step came. d.mu is held.
func (l *Leg) transition(ctx context.Context) {
	d := &l.drive
	if a := d.armed; a != nil && a.w.Hold > 0 && d.step-a.at >= a.w.Hold && l.landed(a.f) {
		l.healHeld(ctx, a)
	}
	if d.armed == nil && !d.byTest && !d.broken && l.scheduled() && d.next < len(l.sched.Windows) && d.step >= l.sched.Windows[d.next].After {
		if wait, note := l.waitsForBusy(l.sched.Windows[d.next]); !wait {
			l.armNext(ctx, note)
		}
	}
	l.checkDone()
}

// scheduleLeft says where the schedule is: what it armed, and the step
// its next window waits for.
func (l *Leg) scheduleLeft() string {
	d := &l.drive
	d.mu.Lock()
	defer d.mu.Unlock()
	n := len(l.sched.Windows)
	if d.next >= n {
		return fmt.Sprintf("the schedule armed all %d of its windows", n)
	}
	return fmt.Sprintf("the schedule armed %d of its %d windows at step %d, and waits for step %d to arm the next (%s)", d.next, n, d.step, l.sched.Windows[d.next].After, l.sched)
}

// scheduled reports whether the schedule arms the lever on steps: every
// lever but a burst, whose deliveries the test asks for.
func (l *Leg) scheduled() bool { return l.value.Needs()&levers.NeedPlan == 0 }

// armNext arms the schedule's next window on the step it came, with a note
// for the injector side on the moment it was armed ("" for none). d.mu is
// held. A failure fails the test (from whichever goroutine stepped) and
// stops the schedule.
func (l *Leg) armNext(ctx context.Context, note string) {
	d := &l.drive
	i := d.next
	d.next++
	w := l.sched.Windows[i]
	for _, h := range d.onArm {
		h(ctx, w)
	}
	f, err := l.arm(ctx, levers.BurstTarget{}, i, w, timingSchedule)
	if f != nil && note != "" {
		l.injector(f, false, note)
	}
	if err != nil {
		d.broken = true
		l.t.Errorf("contested: leg %s could not arm window %d of its schedule (%s): %v", l.lever, i+1, w, err)
		if f != nil {
			l.heal(ctx)
		}
		return
	}
	a := &held{f: f, w: w, at: d.step, start: time.Now(), stop: make(chan struct{})}
	d.armed = a
	go l.holdFor(a)
}

// holdFor heals a once its time is over and the victim saw it (at most
// levers.MaxHold after it was armed), unless a step healed it first.
func (l *Leg) holdFor(a *held) {
	t := time.NewTimer(a.w.For)
	defer t.Stop()
	select {
	case <-t.C:
	case <-a.stop:
		return
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !l.landed(a.f) && time.Since(a.start) < levers.MaxHold {
		select {
		case <-tick.C:
		case <-a.stop:
			return
		}
	}
	d := &l.drive
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.armed == a {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		l.healHeld(ctx, a)
		l.checkDone()
	}
}

// healHeld heals the window the schedule holds and runs the heal hooks.
// d.mu is held.
func (l *Leg) healHeld(ctx context.Context, a *held) {
	d := &l.drive
	close(a.stop)
	d.armed = nil
	if err := l.heal(ctx); err != nil {
		l.t.Errorf("contested: heal %s (window %s): %v", l.lever, a.w, err)
	}
	for _, h := range d.onHeal {
		h(ctx, a.w)
	}
}

// checkDone closes Done once no window is left to arm or heal. d.mu is
// held.
func (l *Leg) checkDone() {
	d := &l.drive
	if d.closed || d.armed != nil || l.armedNow() {
		return
	}
	if d.next >= len(l.sched.Windows) || d.broken {
		d.closed = true
		close(d.done)
	}
}

func (l *Leg) armedNow() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.current != nil
}

// landed reports whether the victim saw fault f, or the lever has no
// signals to see (a crash is proven after its restart).
func (l *Leg) landed(f *fault) bool {
	if len(l.value.Signals()) == 0 {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return f.Landed()
}

// stopDrive stops the schedule at the end of the test: a window it holds
// is left to cleanup's heal, and its timer stops. It reports a workload
// that stopped before its schedule was done.
func (l *Leg) stopDrive() {
	d := &l.drive
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopped = true
	if a := d.armed; a != nil {
		close(a.stop)
		d.armed = nil
	}
	if d.stepped && !d.byTest && !d.broken && l.scheduled() && d.next < len(l.sched.Windows) && !l.t.Failed() && !l.t.Skipped() {
		l.t.Errorf("contested: leg %s: the workload stopped at step %d, before its schedule armed window %d of %d (at step %d); run the workload until leg.Done()",
			l.name(), d.step, d.next+1, len(l.sched.Windows), l.sched.Windows[d.next].After)
	}
	if !d.closed {
		d.closed = true
		close(d.done)
	}
}

// ran describes the schedule the leg's faults ran by, as they were armed:
// each fault's window, and who decided its timing. The seed is not in it,
// so two seeds that ran the same schedule describe it alike; a test that
// arms and heals by itself a lever without parameters describes the same
// schedule for every seed, which is what the contract verdict catches.
func (l *Leg) ran(faults []*fault) faultrecord.Schedule {
	var b strings.Builder
	fmt.Fprintf(&b, "%s level %d over %d steps:", l.lever, l.sched.Level, l.sched.Span)
	timed := false
	for i, f := range faults {
		params := ""
		if f.window.Params != nil {
			params = ": " + f.window.Params.String()
		}
		switch f.timing {
		case timingSchedule:
			timed = true
			fmt.Fprintf(&b, " #%d %s;", i+1, f.window)
		case timingHeld:
			timed = true
			fmt.Fprintf(&b, " #%d armed by the test, held %v%s;", i+1, f.window.For, params)
		default:
			fmt.Fprintf(&b, " #%d armed by the test%s;", i+1, params)
		}
	}
	if timed {
		fmt.Fprintf(&b, " retry %v..%v", l.sched.Retry.Backoff, l.sched.Retry.Max)
	}
	desc := b.String()
	summary := desc
	if len(summary) > 300 {
		summary = summary[:300] + "…"
	}
	return faultrecord.Schedule{Digest: levers.Digest(desc), Summary: summary}
}
