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

	"github.com/contested/contested/faultlayer/levers"
	"github.com/contested/contested/faultrecord"
)

// A kill leg: a lever of the fault set (faultlayer/levers) the rig arms
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
	Name  string `json:"name"`
	Lever string `json:"lever"`
	Fired bool   `json:"fired"`
	// Unfired is what the lever's fired rule found missing when the leg
	// did not fire (levers.Lever.Fired).
	Unfired  string         `json:"unfired,omitempty"`
	Injector string         `json:"injector"`
	Victim   string         `json:"victim"`
	Oracles  []OracleResult `json:"oracles"`
	Error    string         `json:"error,omitempty"`
	Record   string         `json:"record,omitempty"`
	Took     time.Duration  `json:"took_ns"`
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
// lever where the seed's plan says, heals it, waits for quiescence and judges:
// the fault fired (the lever's rule over both sides' proof) and the
// service's oracles held. The leg's record is written whatever happened.
func (r *rig) runLeg(ctx context.Context, l leg, n int) (res LegResult) {
	start := time.Now()
	res = LegResult{Name: l.name, Lever: l.lever.Name()}
	p := planLeg(l, r.seed, r.level, n, len(r.proxies))
	var proof levers.Proof
	var armedAt, firedAt time.Time
	defer func() {
		res.Took = time.Since(start)
		if err := l.lever.Fired(proof); err != nil {
			res.Unfired = err.Error()
		}
		res.Fired = res.Unfired == ""
		r.record(l, p, n, &res, armedAt, firedAt)
	}()

	r.legSeq++
	r.work.Plan(l.name, r.legSeq, n)
	prodCtx, stopProd := context.WithCancel(ctx)
	defer stopProd()
	produced := make(chan error, 1)
	healed := make(chan struct{})
	var sent atomic.Int64
	go func() { produced <- r.produce(prodCtx, n, &sent, healed) }()

	// Fault where the plan says, while the replicas are busy.
	if err := r.waitDone(ctx, l.name, p.after); err != nil {
		res.Error, res.stalled = "before the fault: "+err.Error(), true
		return res
	}
	armedAt = time.Now()
	f, err := r.fault(ctx, l, p, n-int(sent.Load()))
	close(healed)
	if f != nil {
		proof.Injected, res.Injector = f.Injector()
	}
	if err != nil {
		res.Error = err.Error()
		return res
	}
	if err := <-produced; err != nil {
		res.Error = "produce: " + err.Error()
		return res
	}
	if err := r.quiesce(ctx, time.Minute); err != nil {
		res.Error = err.Error()
		return res
	}
	judged, ok := f.(levers.Judged)
	if !ok {
		res.Error = fmt.Sprintf("the %s lever's fault armed on the rig is not judged by the work around it", l.lever.Name())
		return res
	}
	landed, victim := judged.Victim(ctx)
	res.Victim = victim
	if landed {
		proof.Victim, firedAt = 1, time.Now()
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

// fault arms the leg's lever on the rig, with pending operations still to
// come, holds it and heals it. It returns what was armed (nil when arming
// changed nothing), also with an error; a fault whose arming failed half
// way is healed at once, so the next leg finds the rig whole.
func (r *rig) fault(ctx context.Context, l leg, p plan, pending int) (levers.Fault, error) {
	t := levers.Target{Toxiproxy: r.layer.Toxiproxy(), Cluster: rigCluster{r}, Replica: p.replica, Pending: pending}
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
	case <-time.After(p.hold):
	}
	if err := f.Heal(ctx); err != nil {
		return f, fmt.Errorf("heal %s: %w", l.lever.Name(), err)
	}
	return f, nil
}

// record writes the leg's fault record.
func (r *rig) record(l leg, p plan, n int, res *LegResult, armedAt, firedAt time.Time) {
	rec := faultrecord.Record{
		Test: r.testName + "/" + l.name, Surface: r.spec.Surface, Class: Class, Leg: l.lever.Name(),
		Seed: r.seed, Schedule: p.record(l), Replay: r.replay,
		Armed: true, ArmedAt: armedAt, Fired: res.Fired, FiredAt: firedAt,
		Evidence:   faultrecord.Evidence{Injector: orNothing(res.Injector), Victim: orNothing(res.Victim)},
		TestFailed: !res.OK() && res.Fired,
	}
	for _, o := range res.Oracles {
		result := "held"
		if !o.Held {
			result = "violated"
		}
		rec.Oracles = append(rec.Oracles, faultrecord.OracleRun{Name: o.Name, OpsProduced: n, OpsChecked: n, Result: result, Detail: o.Detail})
	}
	if armedAt.IsZero() {
		rec.ArmedAt = time.Now()
	}
	if path, err := r.rec.Write(rec); err == nil {
		res.Record = path
	} else if res.Error == "" {
		res.Error = "write the leg's record: " + err.Error()
	}
}

// produce performs the planned operations, retrying each until it is
// acknowledged, paced so the stream outlasts the fault. The last quarter
// waits for healed: however long a restart takes (a loaded machine), work
// is still to come when the struck replicas are back, so a restarted
// replica always has work to take up and the leg can prove it resumed.
func (r *rig) produce(ctx context.Context, n int, sent *atomic.Int64, healed <-chan struct{}) error {
	// The stream lasts at least four seconds whatever its size, so every
	// fault lands mid-stream and the restarted replicas find work.
	pace := max(8*time.Millisecond, 4*time.Second/time.Duration(max(n, 1)))
	for i := range n {
		if i == n-n/4 {
			select {
			case <-healed:
			case <-ctx.Done():
				return ctx.Err()
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
