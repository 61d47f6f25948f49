package history

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
)

// A small discrete-event simulation of clients talking to a correct (linearizable) service,
// used to produce legal histories of any size. Each client is sequential: it invokes an op,
// the op takes effect at a random instant inside its interval (its linearization point), and
// the client sees the answer at complete. An ambiguous op takes effect, or not, at a random
// instant that may even fall after its client gave up.

type simEvent struct {
	at   int64
	seq  int // tie-break: earlier scheduled first
	kind int // evInvoke, evEffect, evComplete
	proc int
	op   *simOp
}

const (
	evEffect = iota // effects first at equal times: an op can't observe one that completes after it began
	evComplete
	evInvoke
)

type simOp struct {
	op      Op
	effect  func() any // applies the op to the service and returns its answer
	answer  any
	applies bool // an ambiguous op that does take effect
}

type eventQueue []simEvent

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	if q[i].kind != q[j].kind {
		return q[i].kind < q[j].kind
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(simEvent)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// simClient decides a process's next op from what it has seen so far. It returns the op's
// type, key, input and the effect on the service (run at the linearization point). done is
// called at complete with the answer, or with nil when the outcome stayed unknown.
type simClient interface {
	next(rng *rand.Rand) (typ, key string, input any, effect func() any)
	done(answer any)
}

// simulate runs procs clients until n ops were invoked, with the given fraction of ops ending
// ambiguously, and returns the history in op id order.
func simulate(seed uint64, n, procs int, ambiguity float64, clients []simClient) []Op {
	return simulateAt(seed, n, procs, ambiguity, clients, new(int64))
}

// simulateAt is simulate with the simulation's clock kept in now while an op takes effect,
// for services whose answers depend on time (a lease's expiry).
func simulateAt(seed uint64, n, procs int, ambiguity float64, clients []simClient, now *int64) []Op {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	var q eventQueue
	seq := 0
	push := func(e simEvent) {
		seq++
		e.seq = seq
		heap.Push(&q, e)
	}
	for p := range procs {
		push(simEvent{at: rng.Int64N(100), kind: evInvoke, proc: p})
	}
	var ops []Op
	invoked := 0
	for q.Len() > 0 {
		e := heap.Pop(&q).(simEvent)
		switch e.kind {
		case evInvoke:
			if invoked == n {
				continue
			}
			invoked++
			typ, key, input, effect := clients[e.proc].next(rng)
			dur := 20 + rng.Int64N(300)
			so := &simOp{effect: effect, op: Op{
				ID: int64(invoked), Process: fmt.Sprintf("p%d", e.proc), Invoke: e.at,
				Complete: At(e.at + dur), Type: typ, Key: key, Input: raw(input),
			}}
			effectAt := e.at + 1 + rng.Int64N(dur-1)
			if rng.Float64() < ambiguity {
				so.op.Timeout, so.op.Error = true, "context deadline exceeded"
				so.applies = rng.IntN(2) == 0
				effectAt = e.at + 1 + rng.Int64N(3*dur) // may land after the client gave up
			} else {
				so.applies = true
			}
			if so.applies {
				push(simEvent{at: effectAt, kind: evEffect, proc: e.proc, op: so})
			}
			push(simEvent{at: *so.op.Complete, kind: evComplete, proc: e.proc, op: so})
		case evEffect:
			*now = e.at
			e.op.answer = e.op.effect()
		case evComplete:
			if e.op.op.Timeout {
				clients[e.proc].done(nil)
			} else {
				e.op.op.Output = raw(e.op.answer)
				clients[e.proc].done(e.op.answer)
			}
			ops = append(ops, e.op.op)
			push(simEvent{at: e.at + rng.Int64N(50), kind: evInvoke, proc: e.proc})
		}
	}
	// back to op id order, as a recorder hands it out
	out := make([]Op, len(ops))
	for _, op := range ops {
		out[op.ID-1] = op
	}
	return out
}

// ledgerService is a correct ledger.
type ledgerService struct{ bal map[string]int64 }

// ledgerClient reads, writes, deposits and transfers at random over a few accounts.
type ledgerClient struct {
	svc       *ledgerService
	accounts  []string
	transfers bool
}

func (c *ledgerClient) next(rng *rand.Rand) (string, string, any, func() any) {
	a := c.accounts[rng.IntN(len(c.accounts))]
	kinds := 3
	if c.transfers {
		kinds = 4
	}
	switch rng.IntN(kinds) {
	case 0, 1:
		return TypeRead, a, nil, func() any { return c.svc.bal[a] }
	case 2:
		if !c.transfers && rng.IntN(2) == 0 {
			v := rng.Int64N(100)
			return TypeWrite, a, v, func() any { c.svc.bal[a] = v; return OutcomeOK }
		}
		d := 1 + rng.Int64N(20)
		return TypeDeposit, a, d, func() any { c.svc.bal[a] += d; return OutcomeOK }
	default:
		b := c.accounts[rng.IntN(len(c.accounts))]
		amt := 1 + rng.Int64N(60)
		return TypeTransfer, a, Transfer{From: a, To: b, Amount: amt}, func() any {
			if c.svc.bal[a] < amt {
				return OutcomeRejected
			}
			c.svc.bal[a] -= amt
			c.svc.bal[b] += amt
			return OutcomeOK
		}
	}
}

func (c *ledgerClient) done(any) {}

// simulateAccounts returns a legal Accounts history and the model to check it with.
func simulateAccounts(seed uint64, n, procs, accounts int, ambiguity float64, transfers bool) (*Accounts, []Op) {
	initial := make(map[string]int64, accounts)
	names := make([]string, accounts)
	for i := range names {
		names[i] = fmt.Sprintf("acct-%d", i)
		initial[names[i]] = 100
	}
	svc := &ledgerService{bal: make(map[string]int64)}
	for k, v := range initial {
		svc.bal[k] = v
	}
	clients := make([]simClient, procs)
	for i := range clients {
		clients[i] = &ledgerClient{svc: svc, accounts: names, transfers: transfers}
	}
	return NewAccounts(initial), simulate(seed, n, procs, ambiguity, clients)
}

// leaseService is a correct lease table; expired leases are simulated by letting an acquire
// that finds no free port take over a held one now and then (and say so).
type leaseService struct {
	ports  []int
	holder map[int]string
	epoch  map[int]int64
}

type leaseClient struct {
	svc    *leaseService
	name   string
	port   int
	epoch  int64
	renews int
}

func (c *leaseClient) next(rng *rand.Rand) (string, string, any, func() any) {
	s := c.svc
	if c.port == 0 {
		name := c.name
		return TypeAcquire, "", LeaseRef{Holder: name}, func() any {
			for _, p := range s.ports {
				if s.holder[p] == "" {
					s.holder[p], s.epoch[p] = name, s.epoch[p]+1
					return Acquired{Port: p, Epoch: s.epoch[p]}
				}
			}
			if rng.IntN(3) == 0 { // a lease expired: take it over
				p := s.ports[rng.IntN(len(s.ports))]
				s.holder[p], s.epoch[p] = name, s.epoch[p]+1
				return Acquired{Port: p, Epoch: s.epoch[p], Reclaimed: true}
			}
			return OutcomeNoneFree
		}
	}
	ref := LeaseRef{Port: c.port, Epoch: c.epoch, Holder: c.name}
	current := func() bool { return s.holder[ref.Port] == ref.Holder && s.epoch[ref.Port] == ref.Epoch }
	if c.renews > 0 {
		c.renews--
		return TypeRenew, fmt.Sprint(c.port), ref, func() any {
			if !current() {
				return OutcomeFenced
			}
			return OutcomeOK
		}
	}
	c.port = 0 // whatever the answer, this client is done with the lease
	return TypeRelease, fmt.Sprint(ref.Port), ref, func() any {
		if !current() {
			return OutcomeFenced
		}
		s.holder[ref.Port] = ""
		return OutcomeOK
	}
}

func (c *leaseClient) done(answer any) {
	switch a := answer.(type) {
	case Acquired:
		c.port, c.epoch, c.renews = a.Port, a.Epoch, 2
	case string:
		if a == OutcomeFenced {
			c.port = 0
		}
	}
}

// simulateLease returns a legal Lease history over the given number of ports.
func simulateLease(seed uint64, n, procs, ports int, ambiguity float64) (*Lease, []Op) {
	svc := &leaseService{holder: make(map[int]string), epoch: make(map[int]int64)}
	for i := range ports {
		svc.ports = append(svc.ports, 31000+i)
		svc.epoch[31000+i] = int64(10 * i) // the table predates the history
	}
	clients := make([]simClient, procs)
	for i := range clients {
		clients[i] = &leaseClient{svc: svc, name: fmt.Sprintf("TestLeg/%d", i)}
	}
	return NewLease(svc.ports...), simulate(seed, n, procs, ambiguity, clients)
}
