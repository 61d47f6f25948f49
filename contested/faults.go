package contested

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/faultlayer/levers"
)

// fault is one armed fault of a leg, from Arm to Heal: it becomes one
// record.
type fault struct {
	sides                  // the evidence from both sides
	armed     levers.Fault // what the lever armed; nil when arming failed before it acted
	armedAt   time.Time
	healedAt  time.Time
	confirmed bool          // server-side confirmation a lever needs (confirm-timeout's commit)
	index     int           // which window of the schedule, from 0
	window    levers.Window // the window's timing and the lever's parameters
	timing    string        // who decided when it was armed and healed
	struck    []int         // the clients a scoped fault cut off (nil: every client)
	spared    map[int]*work // what the clients it spared did meanwhile
}

func (f *fault) victimSaw(what string, at time.Time) { f.Victim(what, true, at) }

// strikes reports whether f strikes client: every client, unless f is a
// scoped fault that cut some off only.
func (f *fault) strikes(client int) bool { return f.spared == nil || slices.Contains(f.struck, client) }

// clientSaw is victim-side evidence one of f's clients saw, naming the
// client when f strikes some clients only.
func (f *fault) clientSaw(client int, what string, at time.Time) {
	if f.spared != nil {
		what = fmt.Sprintf("client %d: %s", client, what)
	}
	f.victimSaw(what, at)
}

// Arm sets the fault up now, with the parameters of the schedule's next
// window, and proves it from the injector side (the proxy's state read
// back, the toxic in place, the connection limit reached, the worker's
// exit status). Each Arm is one armed fault and one record. A test that
// calls Arm decides when its faults land; one that marks its workload's
// steps (Step) leaves that to the schedule too, which is what makes a
// seed replay a run.
func (l *Leg) Arm(ctx context.Context) {
	l.t.Helper()
	i, w := l.nextWindow()
	if _, err := l.arm(ctx, levers.BurstTarget{}, i, w, timingTest); err != nil {
		l.t.Fatalf("contested: arm %s: %v", l.lever, err)
	}
}

// nextWindow takes the schedule's next window for a fault the test arms.
func (l *Leg) nextWindow() (int, levers.Window) {
	d := &l.drive
	d.mu.Lock()
	defer d.mu.Unlock()
	d.byTest = true
	i := d.next
	d.next++
	return i, l.sched.Window(i)
}

// arm arms one fault of the leg's lever on what the leg holds, in window
// i of the schedule (w), with burst as the shape of a burst, and returns
// it. The fault is recorded as armed from the start, also when arming
// fails.
func (l *Leg) arm(ctx context.Context, burst levers.BurstTarget, i int, w levers.Window, timing string) (*fault, error) {
	l.mu.Lock()
	if l.current != nil {
		l.mu.Unlock()
		return nil, errors.New("armed twice without Heal")
	}
	f := &fault{armedAt: time.Now(), index: i, window: w, timing: timing}
	if p, ok := w.Params.(levers.Striking); ok && l.perClient() {
		// Set before arming, so that the struck clients' errors count from the cut on.
		f.struck, f.spared = p.Victims(l.clients), map[int]*work{}
		l.scoped.Store(true)
	}
	l.faults = append(l.faults, f)
	l.current = f
	l.mu.Unlock()
	target, err := l.target(burst, w)
	if err != nil {
		return f, err
	}
	armed, err := l.value.Arm(ctx, target)
	if armed != nil {
		in, what := armed.Injector()
		l.mu.Lock()
		f.armed = armed
		if sc, ok := armed.(levers.Scoped); ok {
			f.struck = sc.Struck()
		}
		if _, ok := armed.(levers.Slowing); ok {
			l.slowing.Store(true)
		}
		l.mu.Unlock()
		l.injector(f, in, what)
	}
	return f, err
}

// target is what the leg holds for its lever to act on, in window w.
func (l *Leg) target(burst levers.BurstTarget, w levers.Window) (levers.Target, error) {
	t := levers.Target{
		Toxiproxy: l.layer.Toxiproxy(),
		Proxy:     l.sharedProxy(),
		Clients:   l.clientProxies(),
		Backends:  l.backends,
		Armer:     l.armer,
		DSN:       l.DirectDSN(),
		Hold:      l.hold,
		Burst:     burst,
		Window:    w,
	}
	if l.value.Needs()&levers.NeedProcess != 0 {
		if l.worker == nil {
			return t, errors.New("no worker: call StartWorker before Arm")
		}
		t.Process = workerProcess{l.worker}
	}
	return t, nil
}

func (l *Leg) injector(f *fault, ok bool, what string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f.Injector(what, ok)
}

// Heal takes the fault away. A fault still armed at the end of the test is
// healed then. A window the schedule holds is healed as the schedule
// would (its heal hooks run).
func (l *Leg) Heal(ctx context.Context) {
	l.t.Helper()
	d := &l.drive
	d.mu.Lock()
	defer d.mu.Unlock()
	if a := d.armed; a != nil {
		l.healHeld(ctx, a)
	} else if err := l.heal(ctx); err != nil {
		l.t.Errorf("contested: heal %s: %v", l.lever, err)
	}
	l.checkDone()
}

func (l *Leg) heal(ctx context.Context) error {
	l.mu.Lock()
	f := l.current
	l.current = nil
	l.scoped.Store(false)
	l.slowing.Store(false)
	l.mu.Unlock()
	if f == nil {
		return nil
	}
	f.healedAt = time.Now()
	if f.armed == nil {
		return nil
	}
	return f.armed.Heal(ctx)
}

// Observe reports an error the victim saw. It returns true when the error
// carries this lever's signature and a fault is armed: that is victim-side
// evidence the fault landed. Other errors are the application's own. A
// fault that strikes some clients only counts the errors their own clients
// report (Client.Observe).
func (l *Leg) Observe(err error) bool { return l.observe(err, "app", anyClient) }

// anyClient is the client of an observation that is no client's in
// particular: the shared pool, Leg.Observe.
const anyClient = -1

func (l *Leg) observe(err error, where string, client int) bool {
	s := levers.Classify(err)
	if s == "" || !slices.Contains(l.value.Signals(), s) {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.current
	if f == nil || !f.strikes(client) {
		return false
	}
	f.clientSaw(client, fmt.Sprintf("%s (%s)", s, where), time.Now())
	return true
}

// roundTrip reports one of the victim's round trips, a write and the
// first answer after it, to the armed fault when it slows the victim down
// (levers.Slowing): victim-side evidence when the write left once the
// fault was armed (an earlier one may have been slow on its own account),
// and the fault says the round trip took long enough. A fault that strikes
// some clients only counts its own clients' round trips.
func (l *Leg) roundTrip(client int, wrote, answered time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.current
	if f == nil || wrote.Before(f.armedAt) || !f.strikes(client) {
		return
	}
	s, ok := f.armed.(levers.Slowing)
	if !ok {
		return
	}
	if landed, what := s.Slowed(answered.Sub(wrote)); landed {
		f.clientSaw(client, what, answered)
	}
}

// Note records victim-side evidence the test observed itself: a duplicate
// delivery consumed, a resumed worker that finished the remainder. It
// counts for the fault armed now, or else the last one armed (a crashed
// worker is proven resumed after Heal).
func (l *Leg) Note(what string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.current
	if f == nil && len(l.faults) > 0 {
		f = l.faults[len(l.faults)-1]
	}
	if f == nil {
		l.t.Errorf("contested: Note(%q) before any Arm", what)
		return
	}
	f.victimSaw(what, time.Now())
}

// noteUnlanded is Note for every fault of the leg the victim has not
// seen land yet: a restarted worker that resumed proves its recovery
// from every kill since the last generation that did.
func (l *Leg) noteUnlanded(what string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	for _, f := range l.faults {
		if !f.Landed() {
			f.victimSaw(what, now)
		}
	}
}

// Committed checks from the server side, bypassing the proxy, that a write
// the client saw time out was in fact committed: query must return one
// boolean. For confirm-timeout this is the injector-side half of the
// proof (the other half is the client's timeout, through Observe). A write
// the server received commits on the server's time, which a busy machine
// stretches past the client's timeout and past the heal: Committed asks
// again until the query says true, for at most five seconds (levers.MaxHold).
func (l *Leg) Committed(ctx context.Context, query string, args ...any) bool {
	l.t.Helper()
	conn, err := pgx.Connect(ctx, l.DirectDSN())
	if err != nil {
		l.t.Fatalf("contested: connect directly: %v", err)
	}
	defer conn.Close(ctx)
	start := time.Now()
	var ok bool
	for {
		if err := conn.QueryRow(ctx, query, args...).Scan(&ok); err != nil {
			l.t.Fatalf("contested: check the commit: %v", err)
		}
		if ok || time.Since(start) >= commitWait || !sleep(ctx, 20*time.Millisecond) {
			break
		}
	}
	waited := ""
	if d := time.Since(start); d >= 20*time.Millisecond {
		waited = fmt.Sprintf(" (asked for %s)", d.Round(time.Millisecond))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.current
	if f == nil && len(l.faults) > 0 {
		f = l.faults[len(l.faults)-1]
	}
	if f != nil {
		f.confirmed = f.confirmed || ok
		f.Injector(fmt.Sprintf("server side, bypassing the proxy: %s → %v%s", query, ok, waited), false)
	}
	return ok
}

// commitWait bounds how long Committed waits for a write the server
// received to be committed: the longest a window is held for its victim
// (levers.MaxHold).
const commitWait = levers.MaxHold

// proof is what both sides proved about the fault, for the lever's fired
// rule (levers.Lever.Fired).
func (f *fault) proof() levers.Proof {
	return levers.Proof{Injected: f.Injected(), Confirmed: f.confirmed, Victim: f.VictimKinds(), Bystanders: f.bystanders()}
}

func (f *fault) victimEvidence() string {
	s := f.VictimText()
	if !f.Landed() {
		s = "nothing: no error or event with this lever's signature was seen while it was armed"
		if f.spared != nil {
			s = fmt.Sprintf("nothing: the clients it cut off (%v) reported no error with this lever's signature while it was armed", f.struck)
		}
	}
	if f.spared != nil {
		s += "; " + f.sparedText()
	}
	return s
}

func (l *Leg) record() {
	// Taken before this function reports anything itself: a failure now is
	// the test's own (an oracle, an assertion), not an unfired fault.
	testFailed := l.t.Failed()
	l.mu.Lock()
	faults, oracles := l.faults, l.oracles
	l.mu.Unlock()
	if len(faults) == 0 {
		if !l.t.Skipped() && !l.t.Failed() {
			l.t.Errorf("contested: leg %s was started and never armed; call Arm (or Deliveries for a burst)", l.name())
		}
		return
	}
	rec, err := recorder()
	if err != nil {
		l.t.Errorf("contested: %v", err)
		return
	}
	ran := l.ran(faults)
	for i, f := range faults {
		unfired := l.value.Fired(f.proof())
		sched := ran
		sched.Window, sched.Timing = i+1, f.timing
		fired := unfired == nil
		r := faultrecord.Record{
			Test:    l.t.Name(),
			Surface: l.surface.ID,
			Class:   l.surface.Class,
			Leg:     string(l.lever),
			Seed:    l.seed,
			Replay:  l.replay,
			Armed:   true,
			ArmedAt: f.armedAt,
			Fired:   fired,
			FiredAt: f.LandedAt(),
			Evidence: faultrecord.Evidence{
				Injector: f.InjectorText(),
				Victim:   f.victimEvidence(),
			},
			Oracles:    oracles,
			TestFailed: testFailed,
			Schedule:   &sched,
		}
		if _, err := rec.Write(r); err != nil {
			l.t.Errorf("contested: %v", err)
		}
		if !fired {
			l.t.Errorf("contested: leg %s (fault %d of %d) ARMED BUT DID NOT FIRE: %v.\n\tinjector: %s\n\tvictim: %s\n\treplay: %s",
				l.name(), i+1, len(faults), unfired, r.Evidence.Injector, r.Evidence.Victim, l.replay)
		}
	}
}
