package ledger_test

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/contested"
	"github.com/contested/contested/contested/history"
	"github.com/contested/contested/examples/ledger"
	"github.com/contested/contested/examples/ledger/oracle"
)

// rig is one contract run of the ledger: the database as seen directly (setup, the in-run
// conservation monitor, the oracles: they must see the truth, never the fault), the history
// the clients record, and the legs that hear what the oracles found.
type rig struct {
	t        *testing.T
	direct   string
	accounts []string
	opening  map[string]int64
	balance  int64 // every account's opening balance
	rec      *oracle.Recorder
	legs     []*contested.Leg
	start    time.Time

	mu      sync.Mutex
	samples []oracle.Sample
	missed  int // samples that could not be read
	stop    func()
}

// newRig migrates the ledger in the database at direct and opens n accounts with balance
// each.
func newRig(t *testing.T, direct string, n int, balance int64, legs ...*contested.Leg) *rig {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := &rig{t: t, direct: direct, accounts: ledger.AccountNames(n), balance: balance, opening: map[string]int64{}, rec: oracle.NewRecorder(), legs: legs, start: time.Now()}
	for _, a := range r.accounts {
		r.opening[a] = balance
	}
	pool, err := ledger.Connect(ctx, direct, 2)
	if err != nil {
		t.Fatalf("connect directly: %v", err)
	}
	defer pool.Close()
	if err := ledger.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if err := ledger.OpenAccounts(ctx, pool, r.opening); err != nil {
		t.Fatal(err)
	}
	return r
}

// mix is the rig's workload shape: its accounts (hot ones first), amounts up to maxAmount,
// and drains aimed at its opening balances (see ledger.Mix).
func (r *rig) mix(maxAmount int64) ledger.Mix {
	return ledger.Mix{Accounts: r.accounts, MaxAmount: maxAmount, Opening: r.balance}
}

// directPool opens a pool that bypasses the faults, closed at the end of the test.
func (r *rig) directPool(maxConns int32) *pgxpool.Pool {
	r.t.Helper()
	pool, err := ledger.Connect(context.Background(), r.direct, maxConns)
	if err != nil {
		r.t.Fatalf("connect directly: %v", err)
	}
	r.t.Cleanup(pool.Close)
	return pool
}

// victimPool opens a pool to the leg's victim through the fault (the leg's observing dialer,
// configured the ledger's way), closed at the end of the test.
func (r *rig) victimPool(leg *contested.Leg, maxConns int32) *pgxpool.Pool {
	r.t.Helper()
	cfg := leg.PoolConfig()
	ledger.ConfigurePool(cfg)
	cfg.MaxConns = maxConns
	cfg.ConnConfig.ConnectTimeout = 2 * time.Second
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		r.t.Fatalf("open victim pool: %v", err)
	}
	r.t.Cleanup(pool.Close)
	return pool
}

// monitor samples the sum of balances every 20ms over a direct connection of its own
// (opened now, so a pool-exhaustion fault armed later cannot starve it) until judge.
func (r *rig) monitor() {
	r.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	conn, err := pgx.Connect(ctx, r.direct)
	if err != nil {
		cancel()
		r.t.Fatalf("monitor: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer conn.Close(context.Background())
		store := ledger.NewStore(conn)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			total, err := store.Total(ctx)
			if ctx.Err() != nil {
				return // stopped mid-read: not a missed sample
			}
			r.mu.Lock()
			if err != nil {
				r.missed++
			} else {
				r.samples = append(r.samples, oracle.Sample{At: time.Since(r.start), Total: total})
			}
			r.mu.Unlock()
		}
	}()
	r.stop = func() { cancel(); <-done }
}

// fault opens a fault window in the history and arms leg; the returned function heals it and
// closes the window.
func (r *rig) fault(ctx context.Context, leg *contested.Leg, name string) (heal func()) {
	r.t.Helper()
	epoch := r.rec.BeginFault(name)
	leg.Arm(ctx)
	return func() {
		leg.Heal(ctx)
		if err := r.rec.EndFault(epoch); err != nil {
			r.t.Error(err)
		}
	}
}

// scheduled opens a fault window of the history named name each time leg's schedule arms
// its fault, and closes it when the schedule heals it.
func (r *rig) scheduled(leg *contested.Leg, name string) {
	var epoch string
	leg.OnArm(func(context.Context, contested.Window) { epoch = r.rec.BeginFault(name) })
	leg.OnHeal(func(context.Context, contested.Window) {
		if err := r.rec.EndFault(epoch); err != nil {
			r.t.Error(err)
		}
	})
}

// scheduleDone reports whether leg's schedule is done.
func scheduleDone(leg *contested.Leg) bool {
	select {
	case <-leg.Done():
		return true
	default:
		return false
	}
}

// runSchedule runs the clients until the leg's schedule is done, then stops them and lets each
// settle its pending retry.
func (l *storeLoad) runSchedule(t *testing.T) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	clients := l.run(ctx)
	untilDone(t, l.leg)
	stop()
	clients.Wait()
}

// untilDone waits until leg's schedule armed and healed every window, failing the test when
// it did not within a few minutes (the workload stopped marking its steps).
func untilDone(t *testing.T, leg *contested.Leg) {
	t.Helper()
	select {
	case <-leg.Done():
	case <-time.After(3 * time.Minute):
		t.Errorf("the schedule %s was not done after 3 minutes", leg.Schedule())
	}
}

// checks says which oracles a contract runs besides the ones every ledger run gets
// (conservation, journal, exactly-once, no lost ack).
type checks struct {
	linearizable bool // the Accounts model over transfer and read ops
}

// judge stops the monitor, reads the ledger at quiescence and runs the oracles over it and
// the history. Every verdict is printed and handed to every leg (it goes into their fault
// records); any verdict that is not a pass fails the test with the oracle's name.
func (r *rig) judge(c checks) {
	r.t.Helper()
	if r.stop != nil {
		r.stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := r.rec.Err(); err != nil {
		r.t.Errorf("the history is invalid (a recorder bug, not a verdict): %v", err)
	}
	ops := r.rec.Ops()
	if len(ops) != r.rec.Issued() {
		r.t.Errorf("the history holds %d ops, the workload issued %d", len(ops), r.rec.Issued())
	}
	conn, err := pgx.Connect(ctx, r.direct)
	if err != nil {
		r.t.Fatalf("connect directly for the oracles: %v", err)
	}
	defer conn.Close(ctx)
	final, err := oracle.Load(ctx, conn)
	if err != nil {
		r.t.Fatal(err)
	}
	r.mu.Lock()
	samples, missed := r.samples, r.missed
	r.mu.Unlock()
	var opening int64
	for _, b := range r.opening {
		opening += b
	}
	verdicts := []oracle.Verdict{
		oracle.CheckConservation(opening, samples, final),
		oracle.CheckJournal(r.opening, final),
		oracle.CheckExactlyOnce(ops, final),
		oracle.CheckNoLostAck(ops, final),
		oracle.CheckDecisions(r.opening, final),
	}
	if len(final.Queue) > 0 {
		verdicts = append(verdicts, oracle.CheckBatchOrder(final))
	}
	if missed > 0 {
		verdicts[0].Evidence += fmt.Sprintf("; %d samples could not be read", missed)
	}
	if c.linearizable {
		// Retries of one transfer id form one logical transfer, settled by the server's
		// audit (see oracle.PerTransfer); the recorded attempts stay as they were.
		logical, err := oracle.PerTransfer(ops, final)
		if err != nil {
			verdicts = append(verdicts, oracle.Verdict{Oracle: oracle.Linearizability, Inconclusive: err.Error()})
		} else {
			verdicts = append(verdicts, oracle.CheckLinearizable(ctx, history.NewAccounts(r.opening), logical, r.rec.Faults(),
				r.t.Name(), time.Minute, history.TypeTransfer, history.TypeRead))
		}
	}
	// Failed verdicts first: a summary that quotes the first line of a failed test's output
	// then quotes the oracle that failed.
	slices.SortStableFunc(verdicts, func(a, b oracle.Verdict) int { return cmp.Compare(b2i(a.Held()), b2i(b.Held())) })
	for _, v := range verdicts {
		report(r.t, v, r.legs...)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// report prints v, hands it to the legs and fails the test when it is not a pass.
func report(t *testing.T, v oracle.Verdict, legs ...*contested.Leg) {
	t.Helper()
	err := v.Err()
	for _, l := range legs {
		l.Oracle(v.Oracle, v.Produced, v.Checked, err)
	}
	if v.Held() {
		t.Log(v.String())
		return
	}
	t.Error(v.String())
}

// storeLoad is the store contract's workload: clients that transfer and read balances
// through the fault, each a sequential process of the history, over the rig's mix (hot
// accounts, so the clients keep transferring over the same rows at once; amounts that run
// sources dry, so transfers are rejected). One transfer in eight is a drain: the client reads
// the source's balance and asks for exactly that, the edge of the funds rule. A client whose
// transfer ended ambiguously retries it with the same id until it gets an answer (the
// ledger's retry protocol); a definite failure is not retried, so a posting for it would be
// invented.
type storeLoad struct {
	store   *ledger.Store
	rec     *oracle.Recorder
	mix     ledger.Mix
	clients int
	timeout time.Duration // per op
	seed    uint64
	prefix  string
	// transfersOnly makes clients issue only transfers while set (a confirm-timeout window
	// needs writes in flight to prove a commit whose answer was lost).
	transfersOnly atomic.Bool
	observe       func(error) bool
	// reading counts the clients' reads in flight during the run (see onlyTransfers).
	reading atomic.Int32
	// lost, when set, hears each transfer whose outcome was lost (ambiguous), before the
	// leg observes its error.
	lost func(ledger.Transfer)
	// leg's schedule arms and heals the fault on the clients' steps, and paces their retries.
	leg *contested.Leg
}

// run runs the clients until ctx ends, then lets each settle its pending retry.
func (l *storeLoad) run(ctx context.Context) *sync.WaitGroup {
	var wg sync.WaitGroup
	for c := range l.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.client(ctx, c)
		}()
	}
	return &wg
}

func (l *storeLoad) client(ctx context.Context, c int) {
	r := rand.New(rand.NewPCG(l.seed, uint64(c)))
	src := l.mix.Source(l.seed^uint64(c+1)<<32, fmt.Sprintf("%s-c%d", l.prefix, c))
	proc := fmt.Sprintf("client-%d", c)
	var pending *ledger.Transfer
	retries := 0
	settle := time.Time{}
	for {
		if ctx.Err() == nil {
			l.leg.Step(ctx)
		} else {
			// Settle the pending retry after the run, with a deadline of its own.
			if pending == nil {
				return
			}
			if settle.IsZero() {
				settle = time.Now().Add(10 * time.Second)
			}
			if time.Now().After(settle) {
				return
			}
		}
		switch only := l.transfersOnly.Load(); {
		case pending != nil:
			// Only an answer settles an ambiguous transfer: a retry that failed definitely
			// says nothing about the attempt before it.
			if l.transfer(proc, *pending) == nil {
				pending, retries = nil, 0
			} else {
				time.Sleep(l.leg.Backoff(retries))
				retries++
			}
		case only || r.IntN(4) > 0:
			t := src.Next()
			if !only && r.IntN(8) == 0 {
				if b, ok, err := l.runRead(proc, t.From); ok && err == nil && b > 0 {
					t.Amount = b
				}
			}
			if err := l.transfer(proc, t); err != nil && !ledger.Definite(err) {
				pending = &t
			}
		default:
			l.runRead(proc, src.Account())
		}
		time.Sleep(time.Duration(1+r.IntN(3)) * time.Millisecond)
	}
}

// closingReads reads every account once, after the clients stopped and the faults healed,
// so the history ends with answered reads of the whole ledger: money a defect lost or made
// shows up to linearizability even when the reads during the run went unanswered.
func (l *storeLoad) closingReads() {
	for _, a := range l.mix.Accounts {
		l.read("closer", a)
	}
}

// runRead makes one recorded read unless the clients issue only transfers now: ok is false
// when it did not read. A read counts as in flight from before that check, so onlyTransfers
// sees every read that could still start.
func (l *storeLoad) runRead(proc, account string) (b int64, ok bool, err error) {
	l.reading.Add(1)
	defer l.reading.Add(-1)
	if l.transfersOnly.Load() {
		return 0, false, nil
	}
	b, err = l.read(proc, account)
	return b, true, err
}

// onlyTransfers makes the clients issue only transfers and waits, up to bound, until no read
// is in flight: a window armed then strikes transfers, the writes whose answers it can lose,
// and no read of the run can be its first evidence, however long a busy machine keeps a read
// in flight. It reports whether the reads in flight were done within bound.
func (l *storeLoad) onlyTransfers(bound time.Duration) bool {
	l.transfersOnly.Store(true)
	deadline := time.Now().Add(bound)
	for l.reading.Load() > 0 {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// read makes one recorded read of account's balance.
func (l *storeLoad) read(proc, account string) (int64, error) {
	b, err := l.rec.Read(proc, account, func() (int64, error) {
		ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
		defer cancel()
		return l.store.Balance(ctx, account)
	})
	if err != nil {
		l.observe(err)
	}
	return b, err
}

// transfer makes one recorded attempt.
func (l *storeLoad) transfer(proc string, t ledger.Transfer) error {
	_, err := l.rec.Transfer(proc, t, func() (ledger.Outcome, error) {
		ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
		defer cancel()
		return l.store.Transfer(ctx, t)
	})
	if err != nil && l.lost != nil && !ledger.Definite(err) {
		l.lost(t)
	}
	if err != nil {
		l.observe(err)
	}
	return err
}

// producer enqueues transfers through q, recording each attempt, and repeats an attempt that
// failed or whose answer was lost with the same transfer id until it is acknowledged: the
// at-least-once producer the queue is built for.
type producer struct {
	queue   *ledger.Queue
	rec     *oracle.Recorder
	timeout time.Duration
	pace    time.Duration
	observe func(error) bool
	// leg, when set, arms and heals its fault on the producer's steps (one per attempt) and
	// paces its retries.
	leg *contested.Leg
}

func (p *producer) run(ctx context.Context, proc string, transfers []ledger.Transfer) error {
	for _, t := range transfers {
		for attempt := 0; ; attempt++ {
			if p.leg != nil {
				p.leg.Step(ctx)
			}
			_, err := p.rec.Enqueue(proc, t, func() (int64, error) {
				ctx, cancel := context.WithTimeout(ctx, p.timeout)
				defer cancel()
				return p.queue.Enqueue(ctx, t)
			})
			if err == nil {
				break
			}
			if p.observe != nil {
				p.observe(err)
			}
			if ctx.Err() != nil {
				return fmt.Errorf("enqueue %s: %w", t.ID, ctx.Err())
			}
			time.Sleep(p.backoff(attempt))
		}
		if p.pace > 0 {
			time.Sleep(p.pace)
		}
	}
	return nil
}

// backoff is the pause before retry attempt: the leg's schedule's, or 10ms doubling to 250ms.
func (p *producer) backoff(attempt int) time.Duration {
	if p.leg != nil {
		return p.leg.Backoff(attempt)
	}
	return min(10*time.Millisecond<<min(attempt, 5), 250*time.Millisecond)
}

// runUntil enqueues src's transfers one after another, like run, until stop is closed and at
// least min of them are acknowledged.
func (p *producer) runUntil(ctx context.Context, proc string, src *ledger.Source, stop <-chan struct{}, min int) error {
	for n := 0; ; n++ {
		if n >= min {
			select {
			case <-stop:
				return nil
			default:
			}
		}
		if err := p.run(ctx, proc, []ledger.Transfer{src.Next()}); err != nil {
			return err
		}
	}
}

// drained waits until nothing is pending in the queue, polling over a direct connection, and
// fails when the pending rows stop going down for stall: a queue its consumers no longer
// drain, as opposed to one a busy machine drains slowly.
func (r *rig) drained(ctx context.Context, stall time.Duration) error {
	conn, err := pgx.Connect(ctx, r.direct)
	if err != nil {
		return fmt.Errorf("connect directly: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	q := ledger.NewQueue(conn)
	// The consumers must keep draining: never stall for stall, however
	// slowly a busy machine lets them go. The bound on the whole drain is
	// only for a queue that shrinks forever without emptying.
	least, since, start := int64(-1), time.Now(), time.Now()
	for {
		n, err := q.Pending(ctx)
		switch {
		case err == nil && n == 0:
			return nil
		case err == nil && (least < 0 || int64(n) < least):
			least, since = int64(n), time.Now()
		}
		switch {
		case time.Since(since) > stall:
			return fmt.Errorf("the queue still holds %d pending rows: it stalled for %s (nothing decided)", least, stall)
		case time.Since(start) > 10*time.Minute:
			return fmt.Errorf("the queue still holds %d pending rows after 10 minutes of draining", least)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
