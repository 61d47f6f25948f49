package history

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// Simulated correct services for the models a team picks: every history they produce is
// legal, ambiguity included (an ambiguous op takes effect or not, possibly after its client
// gave up), so each must check Ok; the same services with a planted bug must check Illegal and
// name the anomaly the bug causes.

// lockSvc is a lease-based lock service with fencing tokens and a time to live.
type lockSvc struct {
	now    *int64
	ttl    int64
	holder map[string]string
	token  map[string]int64
	expiry map[string]int64
	// bug: grantWhileHeld grants a held lock; staleActs answers ok to acts of any token.
	grantWhileHeld, staleActs bool
}

func (s *lockSvc) current(lock, holder string, token int64) bool {
	return s.holder[lock] == holder && s.token[lock] == token && s.expiry[lock] > *s.now
}

type lockSimClient struct {
	svc     *lockSvc
	name    string
	locks   []string
	want    string // the lock an acquire asks for
	held    string
	token   int64
	left    int
	lostAct bool // after a fenced answer, act once more (a client that did not notice)
}

func (c *lockSimClient) next(rng *rand.Rand) (string, string, any, func() any) {
	s := c.svc
	if c.held == "" {
		lock, name := c.locks[rng.IntN(len(c.locks))], c.name
		c.want = lock
		return TypeAcquire, lock, LockRef{Holder: name}, func() any {
			if s.holder[lock] != "" && s.expiry[lock] > *s.now && !(s.grantWhileHeld && rng.IntN(4) == 0) {
				return OutcomeBusy
			}
			s.holder[lock], s.token[lock], s.expiry[lock] = name, s.token[lock]+1, *s.now+s.ttl
			return Granted{Token: s.token[lock]}
		}
	}
	lock, ref := c.held, LockRef{Holder: c.name, Token: c.token}
	c.left--
	if c.left <= 0 {
		c.held = ""
		return TypeRelease, lock, ref, func() any {
			if s.holder[lock] != ref.Holder || s.token[lock] != ref.Token {
				return OutcomeFenced
			}
			s.holder[lock] = ""
			return OutcomeOK
		}
	}
	if rng.IntN(3) == 0 {
		return TypeRenew, lock, ref, func() any {
			if !s.current(lock, ref.Holder, ref.Token) {
				return OutcomeFenced
			}
			s.expiry[lock] = *s.now + s.ttl
			return OutcomeOK
		}
	}
	return TypeAct, lock, ref, func() any {
		if !s.current(lock, ref.Holder, ref.Token) && !s.staleActs {
			return OutcomeFenced
		}
		return OutcomeOK
	}
}

func (c *lockSimClient) done(answer any) {
	switch a := answer.(type) {
	case Granted:
		c.held, c.token, c.left = c.want, a.Token, 6
	case string:
		if a == OutcomeFenced {
			c.held = ""
		}
	}
}

// simulateLock returns a lock history: procs clients over locks locks, TTL 400 time units
// (ops take 20-320, so renewals race expiry).
func simulateLock(seed uint64, n, procs, locks int, ambiguity float64, bug func(*lockSvc)) []Op {
	now := new(int64)
	svc := &lockSvc{now: now, ttl: 400, holder: map[string]string{}, token: map[string]int64{}, expiry: map[string]int64{}}
	if bug != nil {
		bug(svc)
	}
	names := make([]string, locks)
	for i := range names {
		names[i] = fmt.Sprintf("L%d", i)
	}
	clients := make([]simClient, procs)
	for i := range clients {
		clients[i] = &lockSimClient{svc: svc, name: fmt.Sprintf("c%d", i), locks: names}
	}
	return simulateAt(seed, n, procs, ambiguity, clients, now)
}

// simLockSpec is what the simulated lock promises, on its clock: an ambiguous op takes effect
// within 3 op durations of its invoke, so within 700 units of its client giving up.
var simLockSpec = LockSpec{TTL: 400, Fencing: true, RecordsRenewals: true, Reacquire: 400, Slack: 1, EffectWithin: 700}

// queueSvc is a FIFO job store with a visibility timeout.
type queueSvc struct {
	now        *int64
	visibility int64
	pending    []string          // in enqueue order
	claimedBy  map[string]string // job → worker
	until      map[string]int64  // job → when its claim runs out
	seq        int
	// bug: lose drops every tenth enqueue; twice delivers a claimed job again at once.
	lose, twice bool
}

func (s *queueSvc) dequeue(worker string) any {
	// a claim that ran out goes back to the front
	for j, w := range s.claimedBy {
		if w != "" && s.until[j] <= *s.now && s.visibility > 0 {
			s.claimedBy[j] = ""
			s.pending = append([]string{j}, s.pending...)
		}
	}
	if s.twice {
		for _, j := range slices.Sorted(maps.Keys(s.claimedBy)) {
			if w := s.claimedBy[j]; w != "" && w != worker {
				return Delivered{Job: j}
			}
		}
	}
	if len(s.pending) == 0 {
		return OutcomeEmpty
	}
	j := s.pending[0]
	s.pending = s.pending[1:]
	s.claimedBy[j], s.until[j] = worker, *s.now+s.visibility
	return Delivered{Job: j}
}

type queueSimClient struct {
	svc      *queueSvc
	name     string
	producer bool
	job      string // the job this worker runs, "" when none
	busy     int    // follow-up jobs it still enqueues while it runs the job
	crash    float64
}

func (c *queueSimClient) next(rng *rand.Rand) (string, string, any, func() any) {
	s := c.svc
	if c.producer || (c.job != "" && c.busy > 0) {
		c.busy--
		s.seq++
		j := fmt.Sprintf("j%04d", s.seq)
		return TypeEnqueue, j, map[string]string{"job": j}, func() any {
			if !(s.lose && s.seq%10 == 0) {
				s.pending = append(s.pending, j)
			}
			return OutcomeOK
		}
	}
	if c.job != "" && rng.Float64() >= c.crash {
		j, w := c.job, c.name
		c.job = ""
		return TypeAck, j, nil, func() any {
			if s.claimedBy[j] != w {
				return OutcomeFenced
			}
			delete(s.claimedBy, j)
			return OutcomeOK
		}
	}
	c.job = "" // a crash forgets the job: its claim runs out
	w := c.name
	return TypeDequeue, "", nil, func() any { return s.dequeue(w) }
}

func (c *queueSimClient) done(answer any) {
	if d, ok := answer.(Delivered); ok {
		c.job, c.busy = d.Job, 2
	}
}

// simulateQueue returns a queue history of producers and workers, drained at the end: after
// the workload, a drainer takes every job left (claims ran out by then) and the queue answers
// empty.
func simulateQueue(seed uint64, n, procs int, ambiguity float64, visibility int64, crash float64, bug func(*queueSvc)) []Op {
	now := new(int64)
	svc := &queueSvc{now: now, visibility: visibility, claimedBy: map[string]string{}, until: map[string]int64{}}
	if bug != nil {
		bug(svc)
	}
	clients := make([]simClient, procs)
	for i := range clients {
		clients[i] = &queueSimClient{svc: svc, name: fmt.Sprintf("w%d", i), producer: i%3 == 0, crash: crash}
	}
	ops := simulateAt(seed, n, procs, ambiguity, clients, now)
	t := int64(0)
	for _, op := range ops {
		t = max(t, op.Invoke, gaveUpOr(op, op.Invoke))
	}
	t += visibility + 1000
	*now = t
	id := int64(len(ops))
	for {
		id++
		out := svc.dequeue("drainer")
		ops = append(ops, Op{ID: id, Process: "drainer", Invoke: t, Complete: At(t + 1), Type: TypeDequeue, Output: raw(out)})
		t += 2
		d, ok := out.(Delivered)
		if !ok {
			return ops
		}
		id++
		delete(svc.claimedBy, d.Job)
		ops = append(ops, Op{ID: id, Process: "drainer", Invoke: t, Complete: At(t + 1), Type: TypeAck, Key: d.Job, Output: raw(OutcomeOK)})
		t += 2
	}
}

// kvSimClient reads, writes and compare-and-sets three keys.
type kvSimClient struct {
	vals  map[string]int
	stale bool // bug: reads return the value before the latest write
	prev  map[string]int
}

func (c *kvSimClient) next(rng *rand.Rand) (string, string, any, func() any) {
	k := []string{"x", "y", "z"}[rng.IntN(3)]
	switch rng.IntN(3) {
	case 0:
		return TypeRead, k, nil, func() any {
			if c.stale && rng.IntN(5) == 0 {
				return c.prev[k]
			}
			return c.vals[k]
		}
	case 1:
		v := rng.IntN(1000)
		return TypeWrite, k, v, func() any { c.prev[k], c.vals[k] = c.vals[k], v; return OutcomeOK }
	}
	from, to := rng.IntN(4), rng.IntN(1000)
	return TypeCAS, k, CAS{From: raw(from), To: raw(to)}, func() any {
		if c.vals[k] != from {
			return OutcomeMismatch
		}
		c.prev[k], c.vals[k] = c.vals[k], to
		return OutcomeOK
	}
}

func (c *kvSimClient) done(any) {}

// idemSimClient sends requests under a few keys, some replays, some with another request.
type idemSimClient struct {
	svc map[string]*idemEntry
	// bug: applyAgain applies a replay again, with a fresh answer.
	applyAgain bool
}

type idemEntry struct {
	request  int
	response int
	count    int64
}

func (c *idemSimClient) next(rng *rand.Rand) (string, string, any, func() any) {
	k := fmt.Sprintf("k%d", rng.IntN(20))
	req := 1
	if rng.IntN(10) == 0 {
		req = 2
	}
	return TypeRequest, k, map[string]int{"amount": req}, func() any {
		e := c.svc[k]
		switch {
		case e == nil:
			c.svc[k] = &idemEntry{request: req, response: rng.IntN(1 << 20), count: 1}
			return map[string]int{"id": c.svc[k].response}
		case e.request != req:
			return OutcomeConflict
		case c.applyAgain:
			e.count++
			e.response = rng.IntN(1 << 20)
		}
		return map[string]int{"id": e.response}
	}
}

func (c *idemSimClient) done(any) {}

func simulateIdempotent(seed uint64, n, procs int, ambiguity float64, bug bool) []Op {
	svc := map[string]*idemEntry{}
	clients := make([]simClient, procs)
	for i := range clients {
		clients[i] = &idemSimClient{svc: svc, applyAgain: bug}
	}
	ops := simulate(seed, n, procs, ambiguity, clients)
	t := int64(0)
	for _, op := range ops {
		t = max(t, gaveUpOr(op, op.Invoke)) + 1000
	}
	for i := range 20 {
		k := fmt.Sprintf("k%d", i)
		var count int64
		if e := svc[k]; e != nil {
			count = e.count
		}
		ops = append(ops, Op{ID: int64(len(ops) + 1), Process: "audit", Invoke: t, Complete: At(t + 1), Type: TypeApplied, Key: k, Output: raw(count)})
		t += 2
	}
	return ops
}

// bankSimClient is the ledger client with a read of every balance now and then.
type bankSimClient struct {
	ledgerClient
	cheat bool // bug: a balances read that misses a transfer in flight
}

func (c *bankSimClient) next(rng *rand.Rand) (string, string, any, func() any) {
	if rng.IntN(6) == 0 {
		return TypeBalances, "", nil, func() any {
			out := make(map[string]int64, len(c.accounts))
			for _, a := range c.accounts {
				out[a] = c.svc.bal[a]
			}
			if c.cheat && rng.IntN(4) == 0 {
				out[c.accounts[0]] += 1000
			}
			return out
		}
	}
	return c.ledgerClient.next(rng)
}

func simulateBank(seed uint64, n, procs int, ambiguity float64, cheat bool) (*Bank, []Op) {
	opening := map[string]int64{}
	var names []string
	for i := range 4 {
		names = append(names, fmt.Sprintf("acct-%d", i))
		opening[names[i]] = 100
	}
	svc := &ledgerService{bal: map[string]int64{}}
	for k, v := range opening {
		svc.bal[k] = v
	}
	clients := make([]simClient, procs)
	for i := range clients {
		clients[i] = &bankSimClient{ledgerClient: ledgerClient{svc: svc, accounts: names, transfers: true}, cheat: cheat}
	}
	return NewBank(opening), simulate(seed, n, procs, ambiguity, clients)
}

// TestSimulatedModelsAreOkAndTheirBugsAreNamed: each model checks the histories of its correct
// simulated service Ok and green, over several seeds, and the same service with a planted bug
// Illegal, with the anomaly the bug causes named.
func TestSimulatedModelsAreOkAndTheirBugsAreNamed(t *testing.T) {
	kv, _ := NewKV(map[string]any{"x": 0, "y": 0, "z": 0})
	tests := []struct {
		name     string
		build    func(seed uint64) (Model, []Op)
		bug      func(seed uint64) (Model, []Op)
		property string // the anomaly the bug must cause
	}{
		{
			name: "lock",
			build: func(seed uint64) (Model, []Op) {
				return NewLock(simLockSpec), simulateLock(seed, 1500, 6, 2, 0.03, nil)
			},
			bug: func(seed uint64) (Model, []Op) {
				return NewLock(simLockSpec), simulateLock(seed, 1500, 6, 2, 0.03, func(s *lockSvc) { s.grantWhileHeld = true })
			},
			property: "one holder at a time",
		},
		{
			name: "lock acting on stale tokens",
			build: func(seed uint64) (Model, []Op) {
				return NewLock(simLockSpec), simulateLock(seed, 1500, 6, 2, 0.03, nil)
			},
			bug: func(seed uint64) (Model, []Op) {
				return NewLock(simLockSpec), simulateLock(seed, 1500, 6, 2, 0.03, func(s *lockSvc) { s.staleActs = true })
			},
			property: "a lost lease is noticed before acting",
		},
		{
			name: "queue, exactly once, in order",
			build: func(seed uint64) (Model, []Op) {
				return NewQueue(QueueSpec{Delivery: ExactlyOnce, FIFO: true}), simulateQueue(seed, 1500, 6, 0.02, 0, 0, nil)
			},
			bug: func(seed uint64) (Model, []Op) {
				return NewQueue(QueueSpec{Delivery: ExactlyOnce, FIFO: true}), simulateQueue(seed, 1500, 6, 0.02, 0, 0, func(s *queueSvc) { s.lose = true })
			},
			property: "every acknowledged enqueue is delivered",
		},
		{
			name: "queue, at least once, crashing workers, visibility timeout",
			build: func(seed uint64) (Model, []Op) {
				return NewQueue(QueueSpec{Visibility: 500, Slack: 1, FIFO: false}), simulateQueue(seed, 1500, 6, 0.02, 500, 0.2, nil)
			},
			bug: func(seed uint64) (Model, []Op) {
				return NewQueue(QueueSpec{Visibility: 500, Slack: 1}), simulateQueue(seed, 1500, 6, 0.02, 500, 0.2, func(s *queueSvc) { s.twice = true })
			},
			property: "no job runs twice at once",
		},
		{
			name: "kv",
			build: func(seed uint64) (Model, []Op) {
				return kv, simulate(seed, 1500, 6, 0.03, kvClients(6, false))
			},
			bug: func(seed uint64) (Model, []Op) {
				return kv, simulate(seed, 1500, 6, 0.03, kvClients(6, true))
			},
			property: "a read sees the latest write",
		},
		{
			name: "idempotent",
			build: func(seed uint64) (Model, []Op) {
				return NewIdempotent(), simulateIdempotent(seed, 1500, 6, 0.03, false)
			},
			bug: func(seed uint64) (Model, []Op) {
				return NewIdempotent(), simulateIdempotent(seed, 1500, 6, 0.03, true)
			},
			property: "a key is applied at most once",
		},
		{
			name:     "bank",
			build:    func(seed uint64) (Model, []Op) { return simulateBank(seed, 1000, 4, 0.02, false) },
			bug:      func(seed uint64) (Model, []Op) { return simulateBank(seed, 1000, 4, 0.02, true) },
			property: "money is conserved",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for seed := uint64(1); seed <= 4; seed++ {
				m, ops := tt.build(seed)
				if err := Validate(ops); err != nil {
					t.Fatalf("seed %d: the simulation made an invalid history: %v", seed, err)
				}
				res, err := Check(t.Context(), m, ops, Options{Timeout: generous, Expected: len(ops)})
				if err != nil || !res.Green() {
					t.Fatalf("seed %d: a correct service is not green: %v %s\n%v", seed, err, res, res.Anomalies)
				}
				m, ops = tt.bug(seed)
				res, err = Check(t.Context(), m, ops, Options{Timeout: generous, Expected: len(ops)})
				if err != nil || res.Verdict != Illegal {
					t.Fatalf("seed %d: the planted bug was not found: %v %s", seed, err, res)
				}
				if !slices.ContainsFunc(res.Anomalies, func(a Anomaly) bool { return a.Property == tt.property }) {
					t.Fatalf("seed %d: the planted bug was found, but not as %q: %v", seed, tt.property, res.Anomalies)
				}
			}
		})
	}
}

func kvClients(n int, stale bool) []simClient {
	vals, prev := map[string]int{}, map[string]int{}
	out := make([]simClient, n)
	for i := range out {
		out[i] = &kvSimClient{vals: vals, prev: prev, stale: stale}
	}
	return out
}
