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
)

// The contested contracts of the ledger: one test per surface in contested-surfaces.toml, one
// subtest per leg. CONTESTED_LEVEL 1 (the default, what the battery runs) runs each lever on
// its own; 2 adds a storm that combines levers; 3 repeats the faults (more windows, repeated
// crash-restart). CONTESTED_SEED replays a run's seeded choices.

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

func storeReset(t *testing.T, level int) {
	ctx := context.Background()
	leg := contested.Start(t, "ledger.store", contested.Reset)
	r := newRig(t, leg.DirectDSN(), 4, 100, leg)
	seen := sight(leg)
	load := &storeLoad{
		store: ledger.NewStore(r.victimPool(leg, 6)), rec: r.rec, mix: r.mix(40), clients: 4,
		timeout: 2 * time.Second, seed: uint64(leg.Seed()), prefix: "store", observe: seen.observe,
	}
	r.monitor()
	runCtx, stop := context.WithCancel(ctx)
	clients := load.run(runCtx)
	time.Sleep(300 * time.Millisecond)
	for range 3 * level {
		r.window(ctx, seen, "reset", 150*time.Millisecond, 5*time.Second)
		time.Sleep(300 * time.Millisecond)
	}
	stop()
	clients.Wait()
	load.closingReads()
	r.judge(checks{linearizable: true})
}

func storeConfirmTimeout(t *testing.T, level int) {
	ctx := context.Background()
	leg := contested.Start(t, "ledger.store", contested.ConfirmTimeout)
	r := newRig(t, leg.DirectDSN(), 4, 100, leg)
	load := &storeLoad{
		store: ledger.NewStore(r.victimPool(leg, 6)), rec: r.rec, mix: r.mix(40), clients: 4,
		timeout: 400 * time.Millisecond, seed: uint64(leg.Seed()), prefix: "store", observe: leg.Observe,
	}
	r.monitor()
	runCtx, stop := context.WithCancel(ctx)
	clients := load.run(runCtx)
	time.Sleep(300 * time.Millisecond)
	for range level {
		// Only transfers while armed: a write whose commit reached the server and whose
		// answer was lost is what this lever is about.
		load.transfersOnly.Store(true)
		time.Sleep(20 * time.Millisecond) // reads in flight finish on their warm connections
		epoch := r.rec.BeginFault("confirm-timeout")
		leg.Arm(ctx)
		time.Sleep(900 * time.Millisecond)
		leg.Heal(ctx)
		if err := r.rec.EndFault(epoch); err != nil {
			t.Error(err)
		}
		load.transfersOnly.Store(false)
		// The server-side half of the proof: some transfer the client saw time out in this
		// window was committed all the same.
		var lost []string
		for _, op := range r.rec.Ops() {
			if op.FaultEpoch == epoch && op.Ambiguous() && op.Type == "transfer" {
				lost = append(lost, transferID(t, op.Input))
			}
		}
		committed := leg.Committed(ctx, `SELECT EXISTS (SELECT 1 FROM applied_transfers WHERE transfer_id = ANY($1))`, lost)
		t.Logf("confirm-timeout window %s: %d transfers timed out; committed server-side: %v", epoch, len(lost), committed)
		time.Sleep(300 * time.Millisecond)
	}
	stop()
	clients.Wait()
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

// burst enqueues the leg's seeded delivery order (duplicates and reorderings included) while
// three consumers drain the queue, and reports each perturbed delivery the consumers
// acknowledged.
func consumerBurst(t *testing.T, level int) {
	ctx := context.Background()
	leg := contested.Start(t, "ledger.consumer", contested.Burst)
	r := newRig(t, leg.DirectDSN(), 6, 100, leg)
	r.monitor()
	w := &ledger.Worker{Pool: r.directPool(6), Name: "burst", Consumers: 3, BatchSize: 8, Poll: 10 * time.Millisecond}
	burst(ctx, t, r, leg, w, 90*level, leg.Observe, nil)
	r.judge(checks{})
}

// burst runs a burst of n transfers through w's queue while w's consumers drain it, and
// waits until the queue is empty. Each delivery is one enqueue (so a duplicate delivery is a
// second row with the same transfer id); each perturbed delivery a consumer acknowledged is
// reported to the leg. When until is not nil, the consumers keep running (and claiming,
// through whatever fault is armed) until it is closed, however early the queue drains.
func burst(ctx context.Context, t *testing.T, r *rig, leg *contested.Leg, w *ledger.Worker, n int, observe func(error) bool, until <-chan struct{}) {
	t.Helper()
	transfers := r.mix(50).Generate(uint64(leg.Seed()), n, "burst")
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
	if until != nil {
		<-until
	}
	if err := r.drained(ctx, 30*time.Second); err != nil {
		t.Error(err)
	}
	stop()
	<-done
}

// consumerCrash runs the worker as a separate process (cmd/ledger's code), kills it with
// SIGKILL once it is well into the queue, restarts it, and checks that the restarted
// generation drains what the killed one left, with nothing lost or applied twice.
func consumerCrash(t *testing.T, level int) {
	ctx := context.Background()
	leg := contested.Start(t, "ledger.consumer", contested.CrashAndResume)
	r := newRig(t, leg.DirectDSN(), 8, 200, leg)
	pool := r.directPool(4)
	const n = 1200
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
	w := leg.StartWorker(func() *exec.Cmd {
		gen++
		return ledgerCmd(t, "work", "-dsn", r.direct, "-consumers", "4", "-batch", "10", "-exit-when-empty", "-name", fmt.Sprintf("gen-%d", gen))
	})
	// Kill at a few points of progress (one at level 1, three at level 3): always mid-queue.
	kills := 1
	if level >= 3 {
		kills = 3
	}
	for k := 1; k <= kills; k++ {
		mark := k * n / (kills + 2) / 2
		if err := waitDecided(ctx, pool, mark, w); err != nil {
			t.Fatal(err)
		}
		epoch := r.rec.BeginFault("crash-and-resume")
		leg.Arm(ctx)
		left, err := ledger.NewQueue(pool).Pending(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			t.Fatalf("the kill did not land mid-work: the queue was already drained")
		}
		leg.Heal(ctx) // restarts the worker
		if err := r.rec.EndFault(epoch); err != nil {
			t.Error(err)
		}
		t.Logf("killed generation %d with %d rows pending; restarted", gen-1, left)
		if k < kills {
			// The victim-side proof of this fault: the restarted generation makes progress
			// on what the killed one left, before it is killed in turn.
			var before int
			if err := pool.QueryRow(ctx, `SELECT count(*) FROM applied_transfers`).Scan(&before); err != nil {
				t.Fatal(err)
			}
			if err := waitDecided(ctx, pool, before+20, w); err != nil {
				t.Fatal(err)
			}
			leg.Note(fmt.Sprintf("restarted worker (generation %d) resumed the %d rows the killed generation left pending", gen, left))
		} else {
			wctx, cancel := context.WithTimeout(ctx, time.Minute)
			err := w.Wait(wctx)
			cancel()
			if err != nil {
				t.Fatalf("the restarted worker: %v", err)
			}
			if err := r.drained(ctx, time.Second); err != nil {
				t.Fatalf("the restarted worker exited with work left: %v", err)
			}
			leg.Note(fmt.Sprintf("restarted worker (generation %d) drained the %d rows the killed generation left pending and exited 0", gen, left))
		}
	}
	r.judge(checks{})
}

// waitDecided waits until at least n transfers are decided, failing if the worker exits.
func waitDecided(ctx context.Context, pool ledger.DB, n int, w *contested.Worker) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		var d int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM applied_transfers`).Scan(&d); err != nil {
			return fmt.Errorf("count decided transfers: %w", err)
		}
		if d >= n {
			return nil
		}
		if !w.Running() {
			return fmt.Errorf("the worker exited with only %d of %d transfers decided", d, n)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("only %d of %d transfers decided: %w", d, n, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// consumerStorm combines levers (CONTESTED_LEVEL >= 2): a seeded burst through a queue whose
// producer and consumers talk to Postgres through a proxy that resets their connections.
func consumerStorm(t *testing.T, level int) {
	ctx := context.Background()
	reset := contested.Start(t, "ledger.consumer", contested.Reset)
	flood := contested.Start(t, "ledger.consumer", contested.Burst)
	r := newRig(t, reset.DirectDSN(), 6, 100, reset, flood)
	r.monitor()
	pool := r.victimPool(reset, 6)
	seen := sight(reset)
	w := &ledger.Worker{Pool: pool, Name: "storm", Consumers: 3, BatchSize: 8, Poll: 10 * time.Millisecond,
		OnError: func(err error) { seen.observe(err) }}
	// The windows open while the burst is under way; the consumers keep claiming until the
	// last one closed (an idle consumer still polls, so a window that opens after the queue
	// drained lands on its next claim).
	stormed := make(chan struct{})
	go func() {
		defer close(stormed)
		time.Sleep(200 * time.Millisecond)
		for range 2 * level {
			r.window(ctx, seen, "reset", 150*time.Millisecond, 5*time.Second)
			time.Sleep(250 * time.Millisecond)
		}
	}()
	burst(ctx, t, r, flood, w, 150*level, seen.observe, stormed)
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
// after it is healed.
func startPoolLoad(ctx context.Context, t *testing.T, r *rig, leg *contested.Leg, seen *sightings, seed uint64, prefix string) *poolLoad {
	l := &poolLoad{done: make(chan error, 1), producing: make(chan struct{})}
	var runCtx context.Context
	runCtx, l.stop = context.WithCancel(ctx)
	consumers, producers := r.victimPool(leg, 3), r.victimPool(leg, poolProducers)
	l.pools = []*pgxpool.Pool{consumers, producers}
	l.workers = &ledger.Worker{Pool: consumers, Name: "pool", Consumers: 3, BatchSize: 10, Poll: 20 * time.Millisecond,
		OnError: func(err error) { seen.observe(err) }}
	go func() { l.done <- l.workers.Run(runCtx) }()
	p := &producer{queue: ledger.NewQueue(producers), rec: r.rec, timeout: time.Second, pace: time.Millisecond, observe: seen.observe}
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

// finish stops the producers and waits for them, gives the consumers 15s to drain the queue
// (the surface's promise once the fault is healed), then stops them and closes the pools.
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

// faultCycles is how many times the pool contract arms its fault: once, and three times at
// CONTESTED_LEVEL=3.
func faultCycles(level int) int {
	if level >= 3 {
		return 3
	}
	return 1
}

func poolExhaustion(t *testing.T, level int) {
	ctx := context.Background()
	leg := contested.Start(t, "ledger.pool", contested.PoolExhaustion)
	r := newRig(t, leg.DirectDSN(), 6, 150, leg)
	preload(ctx, t, r, leg)
	r.monitor()
	seen := sight(leg)
	for i := range faultCycles(level) {
		release := r.settle(ctx, t, 1) // the monitor
		before := seen.n.Load()
		heal := r.fault(ctx, leg, "pool-exhaustion")
		release()
		// Fresh pools: every connection they need is opened with the database already full.
		load := startPoolLoad(ctx, t, r, leg, seen, uint64(leg.Seed())+uint64(i*poolProducers)+1, fmt.Sprintf("live%d", i))
		time.Sleep(500 * time.Millisecond)
		for start := time.Now(); seen.n.Load() == before && time.Since(start) < 5*time.Second; {
			time.Sleep(10 * time.Millisecond)
		}
		heal()
		time.Sleep(300 * time.Millisecond) // the producers go on once connections are granted
		load.finish(ctx, t, r)
	}
	r.judge(checks{})
}

func poolDisconnect(t *testing.T, level int) {
	ctx := context.Background()
	leg := contested.Start(t, "ledger.pool", contested.Disconnect)
	r := newRig(t, leg.DirectDSN(), 6, 150, leg)
	preload(ctx, t, r, leg)
	r.monitor()
	seen := sight(leg)
	load := startPoolLoad(ctx, t, r, leg, seen, uint64(leg.Seed())+1, "live")
	time.Sleep(200 * time.Millisecond)
	// Two windows per cycle: each cuts the connections in flight once, in whatever phase the
	// producers' and consumers' requests are.
	for range 2 * faultCycles(level) {
		r.window(ctx, seen, "disconnect", 400*time.Millisecond, 5*time.Second)
		time.Sleep(200 * time.Millisecond)
	}
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
