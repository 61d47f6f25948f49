package ledger_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/contested"
	"github.com/contested/contested/examples/ledger"
	"github.com/contested/contested/examples/ledger/oracle"
)

// The contested contracts of the ledger: one test per surface in contested-surfaces.toml, one
// subtest per leg. Each leg's workload marks its steps (leg.Step, leg.Progress), and the
// leg's schedule, drawn from CONTESTED_SEED and CONTESTED_LEVEL, decides on which step each
// fault lands, how long it holds and what it does (a reset's direction, the connections an
// exhaustion holds, a burst's plan): the seed replays the run. CONTESTED_LEVEL 1 (the
// default, what the battery runs) runs each lever on its own; 2 adds faults (overlapping
// ones, where the lever has them) and a storm that combines levers; 3 adds faults that land
// while the victim recovers.

// legCase is one subtest of a contract.
type legCase struct {
	name  string
	level int // the lowest CONTESTED_LEVEL that runs it
	run   func(t *testing.T, level int)
}

func runLegs(t *testing.T, cases []legCase) {
	level, err := contested.Level()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if level < c.level {
				t.Skipf("%s runs from CONTESTED_LEVEL=%d (this run: %d)", c.name, c.level, level)
			}
			c.run(t, level)
		})
	}
}

// TestStoreContract contests ledger.store: a transfer moves money atomically and at most
// once, whatever happens to the connection carrying it. Clients transfer and read through a
// proxy while the fault is armed; the oracles check conservation (in the run and at
// quiescence), the journal, exactly-once, no lost acknowledgement, and linearizability of the
// transfers and reads against the Accounts model.
func TestStoreContract(t *testing.T) {
	runLegs(t, []legCase{
		{name: "reset", level: 1, run: storeReset},
		{name: "confirm-timeout", level: 1, run: storeConfirmTimeout},
	})
}

// storeReset runs four clients through a proxy whose connections the schedule resets (each
// fault upstream, dropping a request before the server sees it, or downstream, dropping the
// answer of a transfer the server applied; both at once at level 2), on the steps it names.
// While a reset is armed the clients issue only transfers: the writes whose answers a reset
// can lose, so that a downstream reset always lands on one. The window is armed once no read
// is in flight, so its first evidence (which lets it heal) is a struck transfer, not a read
// a busy machine kept in flight.
func storeReset(t *testing.T, level int) {
	leg := contested.Start(t, "ledger.store", contested.Reset)
	r := newRig(t, leg.DirectDSN(), 4, 100, leg)
	load := &storeLoad{
		store: ledger.NewStore(r.victimPool(leg, 6)), rec: r.rec, mix: r.mix(40), clients: 4,
		timeout: 2 * time.Second, seed: uint64(leg.Seed()), prefix: "store", observe: leg.Observe, leg: leg,
	}
	leg.OnArm(func(context.Context, contested.Window) {
		if !load.onlyTransfers(readsDone) {
			t.Logf("reset: reads still in flight %s after the window came", readsDone)
		}
	})
	leg.OnHeal(func(context.Context, contested.Window) { load.transfersOnly.Store(false) })
	r.scheduled(leg, "reset")
	r.monitor()
	load.runSchedule(t)
	load.closingReads()
	r.judge(checks{linearizable: true})
}

// readsDone bounds how long a window of the store contract waits for the reads in flight when
// it came: longer than any read's own timeout.
const readsDone = 5 * time.Second

// storeConfirmTimeout lets the schedule drop the answers of transfers that reached the server:
// while a window is armed the clients issue only transfers, and after it is healed the leg
// checks server-side that one the client saw time out was committed. The window is armed
// once no read is in flight, so the timeout that lets it heal is a transfer's, and Committed
// waits (up to its bound) for that transfer to commit, however slowly a busy server gets to
// it.
func storeConfirmTimeout(t *testing.T, level int) {
	leg := contested.Start(t, "ledger.store", contested.ConfirmTimeout)
	r := newRig(t, leg.DirectDSN(), 4, 100, leg)
	load := &storeLoad{
		store: ledger.NewStore(r.victimPool(leg, 6)), rec: r.rec, mix: r.mix(40), clients: 4,
		timeout: 400 * time.Millisecond, seed: uint64(leg.Seed()), prefix: "store", observe: leg.Observe, leg: leg,
	}
	var (
		mu     sync.Mutex
		struck []string // transfers whose answer was lost while the window was armed
		armed  bool
	)
	load.lost = func(tr ledger.Transfer) {
		mu.Lock()
		defer mu.Unlock()
		if armed {
			struck = append(struck, tr.ID)
		}
	}
	var epoch string
	leg.OnArm(func(context.Context, contested.Window) {
		// Only transfers while armed: a write whose commit reached the server and whose
		// answer was lost is what this lever is about.
		if !load.onlyTransfers(readsDone) {
			t.Logf("confirm-timeout: reads still in flight %s after the window came", readsDone)
		}
		epoch = r.rec.BeginFault("confirm-timeout")
		mu.Lock()
		armed, struck = true, nil
		mu.Unlock()
	})
	leg.OnHeal(func(ctx context.Context, _ contested.Window) {
		if err := r.rec.EndFault(epoch); err != nil {
			t.Error(err)
		}
		load.transfersOnly.Store(false)
		mu.Lock()
		lost := struck
		armed, struck = false, nil
		mu.Unlock()
		// The server-side half of the proof: some transfer the client saw time out in this
		// window (one invoked in it, or one in flight when it was armed) was committed all
		// the same.
		for _, op := range r.rec.Ops() {
			if op.FaultEpoch == epoch && op.Ambiguous() && op.Type == "transfer" {
				lost = append(lost, transferID(t, op.Input))
			}
		}
		if len(lost) == 0 {
			t.Logf("confirm-timeout window %s: no transfer timed out while it was armed", epoch)
			return
		}
		committed := leg.Committed(ctx, `SELECT EXISTS (SELECT 1 FROM applied_transfers WHERE transfer_id = ANY($1))`, lost)
		t.Logf("confirm-timeout window %s: %d transfers timed out; committed server-side: %v", epoch, len(lost), committed)
	})
	r.monitor()
	load.runSchedule(t)
	load.closingReads()
	r.judge(checks{linearizable: true})
}

// TestConsumerContract contests ledger.consumer: every acknowledged enqueue is applied
// exactly once however the queue delivers it (duplicated, reordered) and even when the
// worker process is killed mid-batch and restarted.
func TestConsumerContract(t *testing.T) {
	runLegs(t, []legCase{
		{name: "burst", level: 1, run: consumerBurst},
		{name: "crash-and-resume", level: 1, run: consumerCrash},
		{name: "storm", level: 2, run: consumerStorm},
	})
}

// burst enqueues each burst of the leg's schedule (its seeded delivery order, duplicates and
// reorderings included) while three consumers drain the queue, and reports each perturbed
// delivery the consumers acknowledged.
func consumerBurst(t *testing.T, level int) {
	ctx := context.Background()
	leg := contested.Start(t, "ledger.consumer", contested.Burst)
	r := newRig(t, leg.DirectDSN(), 6, 100, leg)
	r.monitor()
	w := &ledger.Worker{Pool: r.directPool(6), Name: "burst", Consumers: 3, BatchSize: 8, Poll: 10 * time.Millisecond}
	for i := range leg.Schedule().Windows {
		burst(ctx, t, r, leg, w, 90, fmt.Sprintf("burst%d", i), nil, nil)
	}
	r.judge(checks{})
}

// burst runs a burst of n transfers (ids prefixed prefix) through w's queue while w's
// consumers drain it, and waits until the queue is empty. Each delivery is one enqueue (so a
// duplicate delivery is a second row with the same transfer id); each perturbed delivery a
// consumer acknowledged is reported to the leg. When storm is not nil, each delivery is a step
// of its schedule, and once the burst is enqueued the consumers keep claiming (through
// whatever fault is armed), on a step every 5ms, until its schedule is done.
func burst(ctx context.Context, t *testing.T, r *rig, leg *contested.Leg, w *ledger.Worker, n int, prefix string, storm *contested.Leg, observe func(error) bool) {
	t.Helper()
	if observe == nil {
		observe = leg.Observe
	}
	transfers := r.mix(50).Generate(uint64(leg.Seed()), n, prefix)
	// delivery maps a queue row to the delivery it carries. The producer holds mu from before
	// its INSERT until the row is mapped, so a consumer that acknowledges the row first waits.
	var mu sync.Mutex
	delivery := map[int64]contested.Delivery{}
	w.OnBatch = func(b ledger.Batch) {
		mu.Lock()
		defer mu.Unlock()
		for _, row := range b.Rows {
			if d, ok := delivery[row.Seq]; ok {
				leg.Consumed(d)
			}
		}
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	q := ledger.NewQueue(w.Pool)
	for _, d := range leg.Deliveries(ctx, n, contested.BurstPlan{}) {
		tr := transfers[d.Index]
		if storm != nil {
			storm.Step(ctx)
		}
		for {
			_, err := r.rec.Enqueue("burst-producer", tr, func() (int64, error) {
				mu.Lock()
				defer mu.Unlock()
				ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				defer cancel()
				seq, err := q.Enqueue(ctx, tr)
				if err == nil {
					delivery[seq] = d
				}
				return seq, err
			})
			if err == nil {
				break
			}
			observe(err)
			time.Sleep(20 * time.Millisecond)
		}
	}
	for storm != nil && !scheduleDone(storm) {
		storm.Step(ctx)
		time.Sleep(5 * time.Millisecond)
	}
	if err := r.drained(ctx, 30*time.Second); err != nil {
		t.Error(err)
	}
	stop()
	<-done
}

// consumerCrash runs the worker as a separate process (cmd/ledger's code: the test binary
// playing the role "ledger") over a queue of 1200 transfers. The leg's schedule kills it
// with SIGKILL at the points of progress it draws (always well before the queue drains) and
// restarts it after the delay it draws; the worker's progress is the number of transfers
// decided, read from the database (cmd/ledger knows nothing of contested, so it does not
// report its own). Worker.Run drives the schedule, proves that each restarted generation
// resumed, and waits for the last one to drain the queue; the oracles check that nothing
// was lost or applied twice.
func consumerCrash(t *testing.T, level int) {
	ctx := context.Background()
	const n = 1200
	leg := contested.Start(t, "ledger.consumer", contested.CrashAndResume, contested.Span(n/2))
	r := newRig(t, leg.DirectDSN(), 8, 200, leg)
	pool := r.directPool(4)
	transfers := r.mix(50).Generate(uint64(leg.Seed()), n, "crash")
	p := &producer{queue: ledger.NewQueue(pool), rec: r.rec, timeout: 5 * time.Second}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.run(ctx, fmt.Sprintf("producer-%d", i), transfers[i*n/4:(i+1)*n/4]); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	r.monitor()

	gen := 0
	c := &crashes{t: t, pool: pool, rec: r.rec}
	leg.OnArm(c.arming)
	leg.OnHeal(c.healed)
	w := leg.StartWorker(func() *exec.Cmd {
		gen++
		return contested.TestBinary("ledger", "work", "-consumers", "4", "-batch", "10", "-exit-when-empty", "-name", fmt.Sprintf("gen-%d", gen))()
	}, contested.WorkerEnv(ledger.EnvDSN+"="+r.direct), contested.ProgressFrom(func(ctx context.Context) (int, error) {
		return decided(ctx, pool)
	}))
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := w.Run(rctx); err != nil {
		t.Fatal(err)
	}
	if err := c.drainedBy(ctx); err != nil {
		t.Fatal(err)
	}
	r.judge(checks{})
}

// crashes follows the kills of a crash-and-resume schedule: a fault window of the history
// per kill, and the check that each kill landed while rows were still pending.
type crashes struct {
	mu    sync.Mutex // the heal hook runs on the schedule's timer
	t     *testing.T
	pool  ledger.DB
	rec   *oracle.Recorder
	epoch string
}

func (c *crashes) arming(context.Context, contested.Window) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch = c.rec.BeginFault("crash-and-resume")
}

// healed runs once the killed worker was restarted: the kill landed mid-work only if rows were
// still pending.
func (c *crashes) healed(ctx context.Context, _ contested.Window) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.rec.EndFault(c.epoch); err != nil {
		c.t.Error(err)
	}
	left, err := ledger.NewQueue(c.pool).Pending(ctx)
	if err != nil {
		c.t.Error(err)
	}
	if left == 0 {
		c.t.Errorf("the kill did not land mid-work: the queue was already drained")
	}
	c.t.Logf("killed a worker generation with %d rows pending; restarted", left)
}

// drainedBy checks the last generation left nothing pending.
func (c *crashes) drainedBy(ctx context.Context) error {
	left, err := ledger.NewQueue(c.pool).Pending(ctx)
	if err != nil {
		return err
	}
	if left != 0 {
		return fmt.Errorf("the last worker generation exited 0 with %d rows pending", left)
	}
	return nil
}

// decided counts the transfers decided so far.
func decided(ctx context.Context, pool ledger.DB) (int, error) {
	var d int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM applied_transfers`).Scan(&d); err != nil {
		return 0, fmt.Errorf("count decided transfers: %w", err)
	}
	return d, nil
}

// consumerStorm combines levers (CONTESTED_LEVEL >= 2): a seeded burst through a queue whose
// producer and consumers talk to Postgres through a proxy that resets their connections, the
// reset's schedule stepped by the burst's deliveries and, once they are enqueued, by the
// consumers' polling until it is done.
func consumerStorm(t *testing.T, level int) {
	ctx := context.Background()
	const n = 150
	reset := contested.Start(t, "ledger.consumer", contested.Reset, contested.Span(n))
	flood := contested.Start(t, "ledger.consumer", contested.Burst)
	r := newRig(t, reset.DirectDSN(), 6, 100, reset, flood)
	r.scheduled(reset, "reset")
	r.monitor()
	pool := r.victimPool(reset, 6)
	w := &ledger.Worker{Pool: pool, Name: "storm", Consumers: 3, BatchSize: 8, Poll: 10 * time.Millisecond,
		OnError: func(err error) { reset.Observe(err) }}
	burst(ctx, t, r, flood, w, n*level, "storm", reset, reset.Observe)
	r.judge(checks{})
}

// TestPoolContract contests ledger.pool: while the database refuses new connections (its
// connection limit is reached) or drops them (the proxy disconnects), producers and consumers
// lose, duplicate and invent nothing, and the queue drains once the fault is healed.
func TestPoolContract(t *testing.T) {
	runLegs(t, []legCase{
		{name: "pool-exhaustion", level: 1, run: poolExhaustion},
		{name: "disconnect", level: 1, run: poolDisconnect},
	})
}

// poolLoad is the pool contract's workload: consumers and producers, each side through a pool
// of its own that opens its connections through the fault.
type poolLoad struct {
	stop      context.CancelFunc
	done      chan error
	prod      sync.WaitGroup
	producing chan struct{}
	pools     []*pgxpool.Pool
	workers   *ledger.Worker
}

// poolProducers is how many producers enqueue at once in the pool contract, so that several
// enqueues are in flight whenever the fault lands.
const poolProducers = 3

// startPoolLoad starts three consumers and three producers on fresh pools. The producers
// enqueue the rig's mix one transfer after another (each its own seeded source, prefix
// prefix-p<n>) until stopProducing, so that they are busy while the fault is armed and
// after it is healed. Every error they see goes to observe; when step is not nil, each
// enqueue attempt is a step of its schedule.
func startPoolLoad(ctx context.Context, t *testing.T, r *rig, leg *contested.Leg, observe func(error) bool, seed uint64, prefix string, step *contested.Leg) *poolLoad {
	l := &poolLoad{done: make(chan error, 1), producing: make(chan struct{})}
	var runCtx context.Context
	runCtx, l.stop = context.WithCancel(ctx)
	consumers, producers := r.victimPool(leg, 3), r.victimPool(leg, poolProducers)
	l.pools = []*pgxpool.Pool{consumers, producers}
	l.workers = &ledger.Worker{Pool: consumers, Name: "pool", Consumers: 3, BatchSize: 10, Poll: 20 * time.Millisecond,
		OnError: func(err error) { observe(err) }}
	go func() { l.done <- l.workers.Run(runCtx) }()
	p := &producer{queue: ledger.NewQueue(producers), rec: r.rec, timeout: time.Second, pace: time.Millisecond, observe: observe, leg: step}
	for i := range poolProducers {
		src := r.mix(50).Source(seed+uint64(i), fmt.Sprintf("%s-p%d", prefix, i))
		l.prod.Add(1)
		go func() {
			defer l.prod.Done()
			pctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			if err := p.runUntil(pctx, fmt.Sprintf("producer-%d", i), src, l.producing, 20); err != nil {
				t.Error(err)
			}
		}()
	}
	return l
}

// stopProducing lets each producer finish the transfer it is enqueuing and stop.
func (l *poolLoad) stopProducing() { close(l.producing) }

// finish stops the producers and waits for them, lets the consumers drain the queue, never
// going 15s without deciding a row (the surface's promise once the fault is healed), then
// stops them and closes the pools.
func (l *poolLoad) finish(ctx context.Context, t *testing.T, r *rig) {
	select {
	case <-l.producing:
	default:
		l.stopProducing()
	}
	l.prod.Wait()
	if err := r.drained(ctx, 15*time.Second); err != nil {
		t.Errorf("after the fault was healed: %v", err)
	}
	l.stop()
	<-l.done
	for _, p := range l.pools {
		p.Close()
	}
}

// preload fills the queue directly before the fault, so consumers have work from the start.
func preload(ctx context.Context, t *testing.T, r *rig, leg *contested.Leg) {
	setup := r.directPool(2)
	pre := r.mix(50).Generate(uint64(leg.Seed()), 150, "pre")
	if err := (&producer{queue: ledger.NewQueue(setup), rec: r.rec, timeout: 5 * time.Second}).run(ctx, "preload", pre); err != nil {
		t.Fatal(err)
	}
	setup.Close()
}

// settle waits until the victim database has no backends but want others (the monitor's)
// and its own, and returns a function that closes its own connection: call it once the fault
// is armed. The pool-exhaustion armer sets the connection limit from the backends it counts,
// so a backend that is still closing when it counts (a closed pool's, or this one's) would
// leave the database short of full.
func (r *rig) settle(ctx context.Context, t *testing.T, want int) (release func()) {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(wctx, r.direct)
	if err != nil {
		t.Fatalf("connect directly: %v", err)
	}
	release = func() { conn.Close(context.WithoutCancel(ctx)) }
	for {
		var n int
		err := conn.QueryRow(wctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n)
		if err == nil && n <= want {
			return release
		}
		select {
		case <-wctx.Done():
			release()
			t.Fatalf("the victim database kept %d other backends (want %d): %v", n, want, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// poolExhaustion arms the schedule's windows itself, one load cycle each: with the database
// settled, it arms the exhaustion (its connection limit set to the backends it has), then
// starts fresh pools, so every connection they need is opened with the database already
// full; the leg holds the fault as the window says and heals it, and the cycle's load
// finishes, draining the queue.
func poolExhaustion(t *testing.T, level int) {
	ctx := context.Background()
	leg := contested.Start(t, "ledger.pool", contested.PoolExhaustion)
	r := newRig(t, leg.DirectDSN(), 6, 150, leg)
	preload(ctx, t, r, leg)
	r.monitor()
	for i := range leg.Schedule().Windows {
		release := r.settle(ctx, t, 1) // the monitor
		heal := r.fault(ctx, leg, "pool-exhaustion")
		release()
		load := startPoolLoad(ctx, t, r, leg, leg.Observe, uint64(leg.Seed())+uint64(i*poolProducers)+1, fmt.Sprintf("live%d", i), nil)
		leg.HoldAndHeal(ctx)
		heal()
		time.Sleep(300 * time.Millisecond) // the producers go on once connections are granted
		load.finish(ctx, t, r)
	}
	r.judge(checks{})
}

// poolDisconnect runs producers and consumers on pools through a proxy the schedule disables
// on the producers' steps (one per enqueue attempt), cutting the connections in flight in
// whatever phase their requests are, until the schedule is done.
func poolDisconnect(t *testing.T, level int) {
	ctx := context.Background()
	leg := contested.Start(t, "ledger.pool", contested.Disconnect)
	r := newRig(t, leg.DirectDSN(), 6, 150, leg)
	preload(ctx, t, r, leg)
	r.monitor()
	r.scheduled(leg, "disconnect")
	load := startPoolLoad(ctx, t, r, leg, leg.Observe, uint64(leg.Seed())+1, "live", leg)
	untilDone(t, leg)
	load.finish(ctx, t, r)
	r.judge(checks{})
}

// transferID reads the id out of a recorded transfer op's input.
func transferID(t *testing.T, input []byte) string {
	t.Helper()
	var tr ledger.Transfer
	if err := json.Unmarshal(input, &tr); err != nil {
		t.Fatalf("recorded transfer input %s: %v", input, err)
	}
	return tr.ID
}
