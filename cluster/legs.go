package cluster

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/contested/contested/examples/ledger"
	"github.com/contested/contested/examples/ledger/oracle"
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
	remaining int            // transfers the producer had yet to enqueue at the fault
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
			return r.replicas.Start(ctx, 0)
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
			return nil
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

// OracleResult is one oracle's verdict on a leg.
type OracleResult struct {
	Name   string `json:"name"`
	Held   bool   `json:"held"`
	Detail string `json:"detail"`
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
	// stalled: the replicas never consumed enough to reach the fault, so
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

// runLeg streams transfers through the replicas, applies the leg's fault a
// third of the way in, heals it, waits for quiescence and judges: the fault
// fired (both sides), no acknowledged transfer lost, none applied twice,
// money conserved. The leg's record is written whatever happened.
func (r *rig) runLeg(ctx context.Context, l leg, n int) (res LegResult) {
	start := time.Now()
	res = LegResult{Name: l.name, Lever: l.lever}
	f := &fired{busy: map[string]int{}}
	defer func() {
		res.Took = time.Since(start)
		res.Injector = f.InjectorText()
		res.Victim = f.VictimText()
		res.Fired = f.Both()
		rec := faultrecord.Record{
			Test: r.testName + "/" + l.name, Surface: Surface, Class: Class, Leg: l.lever,
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
	}()

	r.legSeq++
	// One history for the rig: the final state holds every leg's
	// transfers, so each leg's oracles judge all of them.
	hist := r.hist
	transfers := ledger.Generate(uint64(r.legSeq), n, r.accounts, 50, l.name+"-")
	prodCtx, stopProd := context.WithCancel(ctx)
	defer stopProd()
	produced := make(chan error, 1)
	var sent atomic.Int64
	go func() { produced <- r.produce(prodCtx, hist, transfers, &sent) }()

	// Fault a third of the way into the stream, while the queue is busy.
	if err := r.waitAcked(ctx, l.name+"-", n/3); err != nil {
		res.Error = "before the fault: " + err.Error()
		res.stalled = true
		return res
	}
	f.mark = time.Now()
	f.remaining = n - int(sent.Load())
	for _, name := range r.replicas.Names() {
		f.busy[name] = r.ackedBetween(ctx, name, f.mark.Add(-time.Second), f.mark)
	}
	if err := l.inject(ctx, r, f); err != nil {
		res.Error = "inject: " + err.Error()
		return res
	}
	// Judge the window from a moment after the fault: a transaction in
	// flight when it landed may still commit.
	at := time.Now().Add(200 * time.Millisecond)
	healing := f.mark.Add(l.hold)
	select {
	case <-ctx.Done():
		res.Error = ctx.Err().Error()
		return res
	case <-time.After(l.hold):
	}
	if err := l.heal(ctx, r, f); err != nil {
		res.Error = "heal: " + err.Error()
		return res
	}
	healed := time.Now()
	f.healing = healing
	if err := <-produced; err != nil {
		res.Error = "produce: " + err.Error()
		return res
	}
	if err := r.quiesce(ctx, time.Minute); err != nil {
		res.Error = err.Error()
		return res
	}
	r.victimEvidence(ctx, l, f, at, healed)

	// Oracles over the history and the tables at quiescence.
	conn, err := pgx.Connect(ctx, r.ledger)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer conn.Close(ctx)
	state, err := oracle.Load(ctx, conn)
	if err != nil {
		res.Error = "load the final state: " + err.Error()
		return res
	}
	ops := hist.Ops()
	for _, v := range []oracle.Verdict{
		oracle.CheckNoLostAck(ops, state),
		oracle.CheckExactlyOnce(ops, state),
		oracle.CheckConservation(r.opening, nil, state),
	} {
		res.Oracles = append(res.Oracles, OracleResult{Name: v.Oracle, Held: v.Held(), Detail: v.String()})
	}
	return res
}

// victimEvidence says, from the service's side, that the fault landed.
// A kill lands mid-stream when a victim was working (it acknowledged rows
// in the second before) while the producer still had transfers to send,
// and the restarted victim took work again.
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
			after := r.ackedSince(ctx, name, f.healing)
			parts = append(parts, fmt.Sprintf("%s acknowledged %d rows in the second before the kill and %d after its restart", name, f.busy[name], after))
			busy = busy || f.busy[name] > 0
			resumed = resumed || after > 0
		}
		f.Victim(fmt.Sprintf("killed with %d transfers still to come; %s", f.remaining, strings.Join(parts, "; ")), busy && resumed && f.remaining > 0, time.Now())
	case "partition":
		during := r.ackedBetween(ctx, names[1], at, healed)
		others := 0
		for _, name := range append(names[:1:1], names[2:]...) {
			others += r.ackedBetween(ctx, name, at, healed)
		}
		after := r.ackedSince(ctx, names[1], healed)
		f.Victim(fmt.Sprintf("while cut off replica-2 acknowledged %d rows and the others %d; after healing it acknowledged %d", during, others, after), during == 0 && others > 0, time.Now())
	}
}

// produce enqueues every transfer, retrying one until it is acknowledged
// (the consumers' idempotency absorbs what an unknown outcome duplicated),
// paced so the stream outlasts the fault.
func (r *rig) produce(ctx context.Context, hist *oracle.Recorder, ts []ledger.Transfer, sent *atomic.Int64) error {
	q := ledger.NewQueue(r.db)
	// The stream lasts at least four seconds whatever its size, so every
	// fault lands mid-stream and the restarted replicas find work.
	pace := max(8*time.Millisecond, 4*time.Second/time.Duration(max(len(ts), 1)))
	for _, t := range ts {
		for {
			actx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := hist.Enqueue("producer", t, func() (int64, error) { return q.Enqueue(actx, t) })
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
	return hist.Err()
}

func (r *rig) waitAcked(ctx context.Context, prefix string, want int) error {
	deadline := time.Now().Add(time.Minute)
	for {
		var n int
		if err := r.db.QueryRow(ctx, `SELECT count(*) FROM transfer_queue WHERE transfer_id LIKE $1 AND acked_at IS NOT NULL`, prefix+"%").Scan(&n); err != nil {
			return err
		}
		if n >= want {
			return nil
		}
		// A rig whose replicas all exited will never acknowledge: say so
		// now rather than after the minute.
		running := 0
		for i := range r.replicas.Names() {
			if r.replicas.Running(ctx, i) {
				running++
			}
		}
		if running == 0 {
			return fmt.Errorf("only %d of %d rows acknowledged and no replica is running; their last lines:\n%s", n, want, tail(r.replicas.Logs(ctx), 20))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d rows acknowledged after a minute: the replicas are not consuming (%d of %d running); their last lines:\n%s",
				n, want, running, len(r.replicas.Names()), tail(r.replicas.Logs(ctx), 20))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// quiesce waits until nothing is pending: no in-flight enqueue (the
// producer is done) and every queued row acknowledged.
func (r *rig) quiesce(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		pending, err := ledger.NewQueue(r.db).Pending(ctx)
		if err != nil {
			return err
		}
		if pending == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d rows still pending %s after the fault was healed: the replicas did not recover", pending, limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (r *rig) ackedSince(ctx context.Context, replica string, since time.Time) int {
	var n int
	r.db.QueryRow(ctx, `SELECT count(*) FROM transfer_queue WHERE worker LIKE $1 AND acked_at > $2`, replica+"/%", since).Scan(&n)
	return n
}

func (r *rig) ackedBetween(ctx context.Context, replica string, from, to time.Time) int {
	var n int
	r.db.QueryRow(ctx, `SELECT count(*) FROM transfer_queue WHERE worker LIKE $1 AND acked_at > $2 AND acked_at <= $3`, replica+"/%", from, to).Scan(&n)
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
