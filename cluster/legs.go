package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync/atomic"
	"time"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/faultlayer/levers"
)

// A kill leg: a lever of the fault set (internal/faultlayer/levers) the rig arms
// on its replicas while the workload streams operations in.
type leg struct {
	name  string        // the leg's name in results
	lever levers.Lever  // what it does, and the lever it records as
	one   bool          // the lever acts on one replica (which one, the seed's plan says)
	hold  time.Duration // the least the fault stays before heal; the plan adds to it
}

var legs = []leg{
	{name: "kill-one", lever: levers.CrashAndResume, one: true, hold: 300 * time.Millisecond},
	{name: "mass-restart", lever: levers.MassRestart, hold: 300 * time.Millisecond},
	{name: "partition", lever: levers.Partition, one: true, hold: 2 * time.Second},
}

// rigCluster is the rig as the cluster levers see it (levers.Cluster):
// its replicas, the proxy between each and the database, and the
// operations each completed.
type rigCluster struct{ r *rig }

var _ levers.Cluster = rigCluster{}

func (c rigCluster) Names() []string { return c.r.replicas.Names() }

func (c rigCluster) Kill(ctx context.Context, i int) (string, error) {
	return c.r.replicas.Kill(ctx, i)
}

// Start starts replica i again and returns once it answers its health
// endpoint, as after every start of a replica.
func (c rigCluster) Start(ctx context.Context, i int) error { return c.r.restart(ctx, i) }

// Link is replica i's proxy.
func (c rigCluster) Link(i int) string { return c.r.proxies[i] }

// Acked is how many operations replica i completed in (from, to]
// (Workload.DoneBy).
func (c rigCluster) Acked(ctx context.Context, i int, from, to time.Time) int {
	return c.r.doneBetween(ctx, c.r.replicas.Names()[i], from, to)
}

// LegResult is one kill leg's outcome.
type LegResult struct {
	Name  string `json:"name"`  // the leg: kill-one, mass-restart, partition
	Lever string `json:"lever"` // the lever it applies
	Fired bool   `json:"fired"` // proven to land from both sides
	// Unfired is what the lever's fired rule found missing when the leg
	// did not fire (levers.Lever.Fired).
	Unfired  string         `json:"unfired,omitempty"`
	Injector string         `json:"injector"`         // the injector side's evidence
	Victim   string         `json:"victim"`           // the victim side's evidence: the work around the fault
	Oracles  []OracleResult `json:"oracles"`          // the service's oracles at quiescence
	Error    string         `json:"error,omitempty"`  // why the leg could not run, if it could not
	Record   string         `json:"record,omitempty"` // the path of its fault record
	Took     time.Duration  `json:"took_ns"`          // how long the leg took
	// stalled: the replicas never completed enough to reach the fault, so
	// the legs after this one would only wait for the same nothing.
	stalled bool
}

// OK reports whether the leg fired and every oracle held.
func (l LegResult) OK() bool {
	if !l.Fired || l.Error != "" || len(l.Oracles) == 0 {
		return false
	}
	for _, o := range l.Oracles {
		if !o.Held {
			return false
		}
	}
	return true
}

func (l LegResult) summary() string {
	if l.Error != "" {
		return "ERROR: " + l.Error
	}
	parts := []string{"fired"}
	if !l.Fired {
		parts[0] = "DID NOT FIRE (" + l.Unfired + ")"
	}
	for _, o := range l.Oracles {
		parts = append(parts, fmt.Sprintf("%s %s", o.Name, map[bool]string{true: "held", false: "VIOLATED"}[o.Held]))
	}
	return strings.Join(parts, ", ")
}

// runLegs runs the legs one after another on the shared rig. When the
// replicas never reach a leg's fault, the legs after it are reported not
// run instead of each waiting its minute.
func (r *rig) runLegs(ctx context.Context, n int, rep *Report, out io.Writer) error {
	stalled := ""
	for _, leg := range legs {
		if err := ctx.Err(); err != nil {
			return err
		}
		res := LegResult{Name: leg.name, Lever: leg.lever.Name(), Error: "not run: the replicas stopped consuming in leg " + stalled}
		if stalled == "" {
			res = r.runLeg(ctx, leg, n)
			if res.stalled {
				stalled = leg.name
			}
		}
		rep.Legs = append(rep.Legs, res)
		fmt.Fprintf(out, "cluster: leg %s: %s\n", leg.name, res.summary())
	}
	rep.Green = true
	for _, l := range rep.Legs {
		rep.Green = rep.Green && l.OK()
	}
	return nil
}

// runLeg streams n operations through the replicas, arms the leg's
// lever where the seed's plan says (one strike at level 1, more at higher
// levels), heals each, waits for quiescence and judges: every strike fired
// (the lever's rule over both sides' proof) and the service's oracles
// held. Each strike's record is written whatever happened.
func (r *rig) runLeg(ctx context.Context, l leg, n int) (res LegResult) {
	start := time.Now()
	res = LegResult{Name: l.name, Lever: l.lever.Name()}
	p := planLeg(l, r.seed, r.level, n, len(r.proxies))
	struck := make([]blow, len(p.strikes))
	defer func() {
		res.Took = time.Since(start)
		r.conclude(l, p, n, &res, struck)
	}()

	r.legSeq++
	r.work.Plan(l.name, r.legSeq, n)
	prodCtx, stopProd := context.WithCancel(ctx)
	defer stopProd()
	produced := make(chan error, 1)
	healed := make([]chan struct{}, p.phases())
	for k := range healed {
		healed[k] = make(chan struct{})
	}
	released := make([]bool, len(healed))
	release := func(k int) {
		if !released[k] {
			released[k] = true
			close(healed[k])
		}
	}
	var sent atomic.Int64
	go func() {
		produced <- r.produce(prodCtx, n, time.Duration(len(p.strikes))*streamTime, &sent, holds(n, len(healed)), healed)
	}()

	for i, st := range p.strikes {
		// The stream goes on once the strike before healed: a strike
		// during recovery lands while the others work, a later strike
		// while everyone does.
		if i > 0 {
			release(p.phase(i - 1))
		}
		// Fault where the plan says, while the replicas are busy.
		if st.after >= 0 {
			if err := r.waitDone(ctx, l.name, st.after); err != nil {
				res.Error, res.stalled = fmt.Sprintf("before fault %d: %v", i+1, err), true
				return res
			}
		}
		struck[i].armedAt = time.Now()
		f, err := r.fault(ctx, l, st, n-int(sent.Load()))
		struck[i].f = f
		if f != nil {
			struck[i].proof.Injected, struck[i].injector = f.Injector()
		}
		if err != nil {
			res.Error = err.Error()
			return res
		}
	}
	release(len(healed) - 1)
	if err := <-produced; err != nil {
		res.Error = "produce: " + err.Error()
		return res
	}
	if err := r.quiesce(ctx, time.Minute); err != nil {
		res.Error = err.Error()
		return res
	}
	for i := range struck {
		judged, ok := struck[i].f.(levers.Judged)
		if !ok {
			res.Error = fmt.Sprintf("the %s lever's fault armed on the rig is not judged by the work around it", l.lever.Name())
			return res
		}
		landed, victim := judged.Victim(ctx)
		struck[i].victim = victim
		if landed {
			struck[i].proof.Victim, struck[i].firedAt = 1, time.Now()
		}
	}
	oracles, err := r.oracle.Judge(ctx)
	if err != nil {
		res.Error = "judge: " + err.Error()
		return res
	}
	if len(oracles) == 0 {
		res.Error = "judge: the service's oracle judged nothing"
	}
	res.Oracles = oracles
	return res
}

// blow is one strike as it happened: the fault armed, when, and both
// sides' proof of it.
type blow struct {
	f                levers.Fault
	armedAt, firedAt time.Time
	proof            levers.Proof
	injector, victim string
}

// conclude judges each strike by the lever's fired rule, sums them up in
// res (fired only when every strike fired) and writes each strike's
// record.
func (r *rig) conclude(l leg, p plan, n int, res *LegResult, struck []blow) {
	var injectors, victims []string
	for i, b := range struck {
		if err := l.lever.Fired(b.proof); err != nil && res.Unfired == "" {
			res.Unfired = err.Error()
			if len(struck) > 1 {
				res.Unfired = fmt.Sprintf("fault %d: %v", i+1, err)
			}
		}
		injectors, victims = append(injectors, b.injector), append(victims, b.victim)
	}
	res.Fired = res.Unfired == ""
	res.Injector, res.Victim = strings.Join(nonEmpty(injectors), "; "), strings.Join(nonEmpty(victims), "; ")
	for i, b := range struck {
		// A strike never armed (an earlier one failed) has no record; the
		// first always has one, so a leg that never reached its fault is
		// on record as armed and unfired.
		if i == 0 || !b.armedAt.IsZero() {
			r.record(l, p, i, n, res, b)
		}
	}
}

func nonEmpty(ss []string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// fault arms the leg's lever on the rig, with pending operations still to
// come, holds it and heals it. It returns what was armed (nil when arming
// changed nothing), also with an error; a fault whose arming failed half
// way is healed at once, so the next leg finds the rig whole.
func (r *rig) fault(ctx context.Context, l leg, st strike, pending int) (levers.Fault, error) {
	t := levers.Target{Toxiproxy: r.layer.Toxiproxy(), Cluster: rigCluster{r}, Replica: st.replica, Pending: pending, Window: levers.Window{Kind: st.kind}}
	f, err := l.lever.Arm(ctx, t)
	if err != nil {
		if f != nil {
			if herr := f.Heal(ctx); herr != nil {
				err = errors.Join(err, fmt.Errorf("heal: %w", herr))
			}
		}
		return f, fmt.Errorf("arm %s: %w", l.lever.Name(), err)
	}
	select {
	case <-ctx.Done():
		return f, ctx.Err()
	case <-time.After(st.hold):
	}
	if err := f.Heal(ctx); err != nil {
		return f, fmt.Errorf("heal %s: %w", l.lever.Name(), err)
	}
	return f, nil
}

// record writes the record of strike i of the leg: its own evidence and
// times, the leg's oracles.
func (r *rig) record(l leg, p plan, i, n int, res *LegResult, b blow) {
	fired := l.lever.Fired(b.proof) == nil
	rec := faultrecord.Record{
		Test: r.testName + "/" + l.name, Surface: r.spec.Surface, Class: Class, Leg: l.lever.Name(),
		Seed: r.seed, Schedule: p.record(l, i), Replay: r.replay,
		Armed: true, ArmedAt: b.armedAt, Fired: fired, FiredAt: b.firedAt,
		Evidence:   faultrecord.Evidence{Injector: orNothing(b.injector), Victim: orNothing(b.victim)},
		TestFailed: !res.OK() && res.Fired,
	}
	for _, o := range res.Oracles {
		result := "held"
		if !o.Held {
			result = "violated"
		}
		rec.Oracles = append(rec.Oracles, faultrecord.OracleRun{Name: o.Name, OpsProduced: n, OpsChecked: n, Result: result, Detail: o.Detail})
	}
	if b.armedAt.IsZero() {
		rec.ArmedAt = time.Now()
	}
	if path, err := r.rec.Write(rec); err == nil {
		if res.Record == "" {
			res.Record = path
		}
	} else if res.Error == "" {
		res.Error = "write the leg's record: " + err.Error()
	}
}

// streamTime is how long a leg's stream lasts at least, per strike.
const streamTime = 4 * time.Second

// produce performs the planned operations, retrying each until it is
// acknowledged, paced so the stream outlasts the faults. Before operation
// holds[k] it waits for healed[k]: however long a restart takes (a loaded
// machine), work is still to come when the struck replicas are back, so a
// restarted replica always has work to take up and the leg can prove it
// resumed.
func (r *rig) produce(ctx context.Context, n int, spread time.Duration, sent *atomic.Int64, holds []int, healed []chan struct{}) error {
	// The stream lasts at least spread whatever its size, so every fault
	// lands mid-stream and the restarted replicas find work.
	pace := max(8*time.Millisecond, spread/time.Duration(max(n, 1)))
	for i := range n {
		for k, h := range holds {
			if i == h {
				select {
				case <-healed[k]:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		}
		for {
			actx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := r.work.Op(actx, i)
			cancel()
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			time.Sleep(50 * time.Millisecond)
		}
		sent.Add(1)
		time.Sleep(pace)
	}
	return nil
}

// waitDone waits until the replicas have completed want of leg's
// operations.
func (r *rig) waitDone(ctx context.Context, leg string, want int) error {
	deadline := time.Now().Add(time.Minute)
	for {
		n, err := r.work.Done(ctx, leg)
		if err != nil {
			return err
		}
		if n >= want {
			return nil
		}
		// A rig whose replicas all exited will never complete anything:
		// say so now rather than after the minute.
		running := 0
		for i := range r.replicas.Names() {
			if r.replicas.Running(ctx, i) {
				running++
			}
		}
		if running == 0 {
			return fmt.Errorf("only %d of %d operations completed and no replica is running; their last lines:\n%s", n, want, tail(r.replicas.Logs(ctx), 20))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d operations completed after a minute: the replicas are not consuming (%d of %d running); their last lines:\n%s",
				n, want, running, len(r.replicas.Names()), tail(r.replicas.Logs(ctx), 20))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// quiesce waits until nothing is pending: no operation in flight (the
// producer is done) and every acknowledged one completed.
func (r *rig) quiesce(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		pending, err := r.work.Pending(ctx)
		if err != nil {
			return err
		}
		if pending == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d operations still pending %s after the fault was healed: the replicas did not recover", pending, limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// doneBetween is how many operations replica completed in (from, to]; a
// zero to is now. An error counts nothing, which can only weaken the
// victim's evidence, never invent it.
func (r *rig) doneBetween(ctx context.Context, replica string, from, to time.Time) int {
	n, err := r.work.DoneBy(ctx, replica, from, to)
	if err != nil {
		return 0
	}
	return n
}

func orNothing(s string) string {
	if s == "" {
		return "nothing observed"
	}
	return s
}

func goCmd(ctx context.Context, dir, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	return cmd
}
