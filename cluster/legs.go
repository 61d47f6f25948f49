package cluster

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/registry"
)

// A kill leg: a lever the rig applies while transfers stream in.
type leg struct {
	name  string        // the leg's name in results
	lever string        // the registry lever it records as
	hold  time.Duration // how long the fault stays before heal
	// inject applies the fault and proves it from the injector side; heal
	// takes it away. Both run while the producer streams transfers.
	inject func(ctx context.Context, r *rig, f *fired) error
	heal   func(ctx context.Context, r *rig, f *fired) error
}

// fired collects a leg's evidence from both sides.
type fired struct {
	faultrecord.Sides
	mark      time.Time      // when the fault was injected
	healing   time.Time      // when healing began
	busy      map[string]int // per replica, rows acknowledged in the second before the fault
	remaining int            // operations the producer had yet to perform at the fault
}

var legs = []leg{
	{
		name: "kill-one", lever: registry.LeverCrashAndResume, hold: 300 * time.Millisecond,
		inject: func(ctx context.Context, r *rig, f *fired) error {
			status, err := r.replicas.Kill(ctx, 0)
			if err != nil {
				return err
			}
			f.Injector("SIGKILL: "+status, true)
			return nil
		},
		heal: func(ctx context.Context, r *rig, f *fired) error {
			return r.restart(ctx, 0)
		},
	},
	{
		name: "mass-restart", lever: registry.LeverMassRestart, hold: 300 * time.Millisecond,
		inject: func(ctx context.Context, r *rig, f *fired) error {
			var mu sync.Mutex
			var wg sync.WaitGroup
			var errs []error
			var killed []string
			for i := range r.replicas.Names() {
				wg.Add(1)
				go func() {
					defer wg.Done()
					status, err := r.replicas.Kill(ctx, i)
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						errs = append(errs, err)
						return
					}
					killed = append(killed, "SIGKILL: "+status)
				}()
			}
			wg.Wait()
			if len(errs) > 0 {
				return fmt.Errorf("kill every replica: %v", errs)
			}
			f.Injector(strings.Join(killed, "; "), len(killed) == len(r.replicas.Names()))
			return nil
		},
		heal: func(ctx context.Context, r *rig, f *fired) error {
			for i := range r.replicas.Names() {
				if err := r.replicas.Start(ctx, i); err != nil {
					return err
				}
			}
			all := make([]int, len(r.replicas.Names()))
			for i := range all {
				all[i] = i
			}
			return r.waitHealthy(ctx, all...)
		},
	},
	{
		name: "partition", lever: registry.LeverPartition, hold: 2 * time.Second,
		inject: func(ctx context.Context, r *rig, f *fired) error {
			p, err := r.layer.Toxiproxy().Proxy(r.proxies[1])
			if err != nil {
				return err
			}
			if err := p.Disable(); err != nil {
				return err
			}
			back, err := r.layer.Toxiproxy().Proxy(r.proxies[1])
			if err != nil {
				return err
			}
			f.Injector(fmt.Sprintf("proxy %s between replica-2 and Postgres disabled (read back enabled=%v)", back.Name, back.Enabled), !back.Enabled)
			return nil
		},
		heal: func(ctx context.Context, r *rig, f *fired) error {
			p, err := r.layer.Toxiproxy().Proxy(r.proxies[1])
			if err != nil {
				return err
			}
			return p.Enable()
		},
	},
}

// LegResult is one kill leg's outcome.
type LegResult struct {
	Name     string         `json:"name"`
	Lever    string         `json:"lever"`
	Fired    bool           `json:"fired"`
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
	parts := []string{map[bool]string{true: "fired", false: "DID NOT FIRE"}[l.Fired]}
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
		res := LegResult{Name: leg.name, Lever: leg.lever, Error: "not run: the replicas stopped consuming in leg " + stalled}
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

// runLeg streams n operations through the replicas, applies the leg's
// fault a third of the way in, heals it, waits for quiescence and judges:
// the fault fired (both sides) and the service's oracles held. The leg's
// record is written whatever happened.
func (r *rig) runLeg(ctx context.Context, l leg, n int) (res LegResult) {
	start := time.Now()
	res = LegResult{Name: l.name, Lever: l.lever}
	f := &fired{busy: map[string]int{}}
	defer func() { r.record(l, n, f, &res, start) }()

	r.legSeq++
	r.work.Plan(l.name, r.legSeq, n)
	prodCtx, stopProd := context.WithCancel(ctx)
	defer stopProd()
	produced := make(chan error, 1)
	var sent atomic.Int64
	go func() { produced <- r.produce(prodCtx, n, &sent) }()

	// Fault a third of the way into the stream, while the replicas are busy.
	if err := r.waitDone(ctx, l.name, n/3); err != nil {
		res.Error, res.stalled = "before the fault: "+err.Error(), true
		return res
	}
	at, healed, err := r.fault(ctx, l, n, f, &sent)
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
	r.victimEvidence(ctx, l, f, at, healed)
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

// fault injects the leg's fault, holds it and heals it. It returns when
// the judged window opens (a moment after the fault: a transaction in
// flight when it landed may still commit) and when healing was done.
func (r *rig) fault(ctx context.Context, l leg, n int, f *fired, sent *atomic.Int64) (at, healed time.Time, err error) {
	f.mark = time.Now()
	f.remaining = n - int(sent.Load())
	for _, name := range r.replicas.Names() {
		f.busy[name] = r.doneBetween(ctx, name, f.mark.Add(-time.Second), f.mark)
	}
	if err := l.inject(ctx, r, f); err != nil {
		return at, healed, fmt.Errorf("inject: %w", err)
	}
	at = time.Now().Add(200 * time.Millisecond)
	healing := f.mark.Add(l.hold)
	select {
	case <-ctx.Done():
		return at, healed, ctx.Err()
	case <-time.After(l.hold):
	}
	if err := l.heal(ctx, r, f); err != nil {
		return at, healed, fmt.Errorf("heal: %w", err)
	}
	f.healing = healing
	return at, time.Now(), nil
}

// record writes the leg's fault record.
func (r *rig) record(l leg, n int, f *fired, res *LegResult, start time.Time) {
	res.Took = time.Since(start)
	res.Injector = f.InjectorText()
	res.Victim = f.VictimText()
	res.Fired = f.Both()
	rec := faultrecord.Record{
		Test: r.testName + "/" + l.name, Surface: r.spec.Surface, Class: Class, Leg: l.lever,
		Replay: "go tool mage cluster-tests", Armed: true, ArmedAt: f.mark, Fired: res.Fired, FiredAt: f.LandedAt(),
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
	if f.mark.IsZero() {
		rec.ArmedAt = time.Now()
	}
	if path, err := r.rec.Write(rec); err == nil {
		res.Record = path
	} else if res.Error == "" {
		res.Error = "write the leg's record: " + err.Error()
	}
}

// victimEvidence says, from the service's side, that the fault landed.
// A kill lands mid-stream when a victim was working (it completed
// operations in the second before) while the producer still had
// operations to perform, and the restarted victim took work again.
func (r *rig) victimEvidence(ctx context.Context, l leg, f *fired, at, healed time.Time) {
	names := r.replicas.Names()
	switch l.name {
	case "kill-one", "mass-restart":
		victims := names
		if l.name == "kill-one" {
			victims = names[:1]
		}
		busy, resumed := false, false
		var parts []string
		for _, name := range victims {
			after := r.doneBetween(ctx, name, f.healing, time.Time{})
			parts = append(parts, fmt.Sprintf("%s completed %d operations in the second before the kill and %d after its restart", name, f.busy[name], after))
			busy = busy || f.busy[name] > 0
			resumed = resumed || after > 0
		}
		f.Victim(fmt.Sprintf("killed with %d operations still to come; %s", f.remaining, strings.Join(parts, "; ")), busy && resumed && f.remaining > 0, time.Now())
	case "partition":
		during := r.doneBetween(ctx, names[1], at, healed)
		others := 0
		for _, name := range append(names[:1:1], names[2:]...) {
			others += r.doneBetween(ctx, name, at, healed)
		}
		after := r.doneBetween(ctx, names[1], healed, time.Time{})
		f.Victim(fmt.Sprintf("while cut off %s completed %d operations and the others %d; after healing it completed %d", names[1], during, others, after), during == 0 && others > 0, time.Now())
	}
}

// produce performs the planned operations, retrying each until it is
// acknowledged, paced so the stream outlasts the fault.
func (r *rig) produce(ctx context.Context, n int, sent *atomic.Int64) error {
	// The stream lasts at least four seconds whatever its size, so every
	// fault lands mid-stream and the restarted replicas find work.
	pace := max(8*time.Millisecond, 4*time.Second/time.Duration(max(n, 1)))
	for i := range n {
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
