package history

import (
	"testing"
	"time"
)

func getOp(id int64, proc string, inv, comp int64, key string, v any) Op {
	return mkOp(id, proc, ms(inv), ms(comp), TypeRead, key, nil, v)
}

func putOp(id int64, proc string, inv, comp int64, key string, v any) Op {
	return mkOp(id, proc, ms(inv), ms(comp), TypeWrite, key, v, OutcomeOK)
}

func casOp(id int64, proc string, inv, comp int64, key string, from, to any, outcome string) Op {
	return mkOp(id, proc, ms(inv), ms(comp), TypeCAS, key, CAS{From: raw(from), To: raw(to)}, outcome)
}

func TestKVVerdicts(t *testing.T) {
	tests := []struct {
		name     string
		initial  map[string]any
		ops      []Op
		want     Verdict
		property string
		texts    []string
	}{
		{
			name: "write, read it back, compare-and-set, read the new value",
			ops: []Op{
				putOp(1, "c1", 0, 5, "x", 1),
				getOp(2, "c2", 10, 12, "x", 1),
				casOp(3, "c1", 20, 25, "x", 1, 2, OutcomeOK),
				casOp(4, "c2", 30, 35, "x", 1, 3, OutcomeMismatch),
				getOp(5, "c2", 40, 42, "x", 2),
			},
			want: Ok,
		},
		{
			name:    "an initial value and an absent key",
			initial: map[string]any{"x": map[string]int{"n": 1}},
			ops: []Op{
				getOp(1, "c1", 0, 5, "x", map[string]int{"n": 1}),
				getOp(2, "c1", 10, 15, "y", nil),
			},
			want: Ok,
		},
		{
			name: "a read concurrent with a write may see either value",
			ops: []Op{
				putOp(1, "c1", 0, 5, "x", 1),
				putOp(2, "c1", 10, 50, "x", 2),
				getOp(3, "c2", 20, 30, "x", 1),
				getOp(4, "c3", 20, 30, "x", 2),
			},
			want: Ok,
		},
		{
			name: "a write whose answer was lost may land late",
			ops: []Op{
				putOp(1, "c1", 0, 5, "x", 1),
				ambiguous(putOp(2, "c2", 10, 20, "x", 2)),
				getOp(3, "c3", 30, 35, "x", 1),
				getOp(4, "c3", 40, 45, "x", 2),
			},
			want: Ok,
		},
		{
			name: "stale read",
			ops: []Op{
				putOp(1, "c1", 0, 5, "x", 1),
				putOp(2, "c1", 10, 15, "x", 2),
				getOp(3, "c2", 20, 25, "x", 1),
			},
			want: Illegal, property: "a read sees the latest write",
			texts: []string{"stale read: c2 read x = 1 at 20.0 ms to 25.0 ms, but c1 had written x = 2 at 10.0 ms to 15.0 ms, after every write of 1"},
		},
		{
			name: "a value no write put there",
			ops: []Op{
				putOp(1, "c1", 0, 5, "x", 1),
				getOp(2, "c2", 10, 15, "x", 9),
			},
			want: Illegal, property: "a read sees the latest write", texts: []string{"value never written: c2 read x = 9"},
		},
		{
			name: "a compare-and-set that succeeded on a replaced value",
			ops: []Op{
				putOp(1, "c1", 0, 5, "x", 1),
				putOp(2, "c1", 10, 15, "x", 2),
				casOp(3, "c2", 20, 25, "x", 1, 3, OutcomeOK),
			},
			want: Illegal, property: "a read sees the latest write", texts: []string{"c2 compare-and-set expected x = 1"},
		},
		{
			name: "a compare-and-set refused although the value matched",
			ops: []Op{
				putOp(1, "c1", 0, 5, "x", 1),
				casOp(2, "c2", 10, 15, "x", 1, 3, OutcomeMismatch),
			},
			want: Illegal, property: "linearizable", texts: []string{"cannot place op 2", "cas(x, 1 → 3) → mismatch"},
		},
		{
			name: "two readers see two writes in opposite orders",
			ops: []Op{
				putOp(1, "w1", 0, 100, "x", 1),
				putOp(2, "w2", 0, 100, "x", 2),
				getOp(3, "r1", 10, 20, "x", 1),
				getOp(4, "r1", 30, 40, "x", 2),
				getOp(5, "r2", 10, 20, "x", 2),
				getOp(6, "r2", 30, 40, "x", 1),
			},
			want: Illegal, property: "linearizable", texts: []string{"not linearizable"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kv, err := NewKV(tt.initial)
			if err != nil {
				t.Fatal(err)
			}
			wantVerdict(t, checkModel(t, kv, tt.ops), tt.want, tt.property, tt.texts...)
		})
	}
}

func enq(id int64, proc string, inv, comp int64, job string) Op {
	return mkOp(id, proc, ms(inv), ms(comp), TypeEnqueue, job, map[string]string{"job": job}, OutcomeOK)
}

func deq(id int64, proc string, inv, comp int64, job string) Op {
	if job == "" {
		return mkOp(id, proc, ms(inv), ms(comp), TypeDequeue, "", nil, OutcomeEmpty)
	}
	return mkOp(id, proc, ms(inv), ms(comp), TypeDequeue, "", nil, Delivered{Job: job})
}

func qAck(id int64, proc string, inv, comp int64, job string) Op {
	return mkOp(id, proc, ms(inv), ms(comp), TypeAck, job, nil, OutcomeOK)
}

func TestQueueVerdicts(t *testing.T) {
	exactly := QueueSpec{Delivery: ExactlyOnce, FIFO: true}
	tests := []struct {
		name     string
		spec     QueueSpec
		ops      []Op
		want     Verdict
		property string
		texts    []string
	}{
		{
			name: "two jobs delivered once each, in order, acknowledged, then empty",
			spec: exactly,
			ops: []Op{
				enq(1, "p", 0, 5, "j1"), enq(2, "p", 10, 15, "j2"),
				deq(3, "w1", 20, 25, "j1"), qAck(4, "w1", 30, 35, "j1"),
				deq(5, "w2", 20, 26, "j2"), qAck(6, "w2", 30, 36, "j2"),
				deq(7, "w1", 40, 45, ""),
			},
			want: Ok,
		},
		{
			name: "an enqueue whose answer was lost need not be delivered",
			spec: exactly,
			ops: []Op{
				ambiguous(enq(1, "p", 0, 5, "j1")),
				deq(2, "w1", 20, 25, ""),
			},
			want: Ok,
		},
		{
			name: "a redelivery after the visibility timeout is at-least-once",
			spec: QueueSpec{Visibility: 100 * time.Millisecond},
			ops: []Op{
				enq(1, "p", 0, 5, "j1"),
				deq(2, "w1", 10, 15, "j1"),
				deq(3, "w2", 200, 205, "j1"), qAck(4, "w2", 210, 215, "j1"),
				deq(5, "w2", 220, 225, ""),
			},
			want: Ok,
		},
		{
			name: "a dequeue whose answer was lost may have taken the job that is missing",
			spec: exactly,
			ops: []Op{
				enq(1, "p", 0, 5, "j1"),
				ambiguous(deq(2, "w1", 10, 15, "j1")),
				deq(3, "w2", 20, 25, ""),
			},
			want: Ok,
		},
		{
			name: "but not two missing jobs",
			spec: exactly,
			ops: []Op{
				enq(1, "p", 0, 5, "j1"), enq(2, "p", 6, 8, "j2"),
				ambiguous(deq(3, "w1", 10, 15, "j1")),
				deq(4, "w2", 20, 25, ""),
			},
			want: Illegal, property: "every acknowledged enqueue is delivered", texts: []string{"1 of the 2 jobs listed may have gone to the 1 dequeues whose answers were lost"},
		},
		{
			name: "no empty answer after the last enqueue: completeness cannot be decided",
			spec: exactly,
			ops:  []Op{enq(1, "p", 0, 5, "j1")},
			want: Unknown,
		},
		{
			name: "a lost job",
			spec: exactly,
			ops: []Op{
				enq(1, "p", 0, 5, "j1"),
				deq(2, "w1", 20, 25, ""),
			},
			want: Illegal, property: "every acknowledged enqueue is delivered",
			texts: []string{"lost job: job j1, enqueued by p (answered ok at 5.0 ms), was never delivered, though the queue answered empty to w1 at 20.0 ms"},
		},
		{
			name: "a delivered job never acknowledged nor delivered again past its visibility timeout",
			spec: QueueSpec{Visibility: 100 * time.Millisecond},
			ops: []Op{
				enq(1, "p", 0, 5, "j1"), enq(2, "p", 6, 7, "j2"),
				deq(3, "w1", 10, 15, "j1"),
				deq(4, "w2", 10, 16, "j2"), qAck(5, "w2", 20, 25, "j2"),
				deq(6, "w2", 300, 305, ""),
			},
			want: Illegal, property: "every acknowledged enqueue is delivered", texts: []string{"job j1 was delivered to w1 at 15.0 ms and never acknowledged"},
		},
		{
			name: "an invented delivery",
			spec: exactly,
			ops: []Op{
				deq(1, "w1", 0, 5, "j9"),
			},
			want: Illegal, property: "nothing is delivered that was not enqueued", texts: []string{"invented delivery: w1 got job j9", "never enqueued"},
		},
		{
			name: "a duplicate delivery under exactly-once",
			spec: exactly,
			ops: []Op{
				enq(1, "p", 0, 5, "j1"),
				deq(2, "w1", 10, 15, "j1"), qAck(3, "w1", 20, 25, "j1"),
				deq(4, "w2", 30, 35, "j1"),
				deq(5, "w2", 40, 45, ""),
			},
			want: Illegal, property: "delivered once", texts: []string{"duplicate delivery: job j1 was delivered to w1 at 15.0 ms and again to w2 at 35.0 ms"},
		},
		{
			name: "the same duplicate is legal at least once",
			spec: QueueSpec{},
			ops: []Op{
				enq(1, "p", 0, 5, "j1"),
				deq(2, "w1", 10, 15, "j1"), qAck(3, "w1", 20, 25, "j1"),
				deq(4, "w2", 30, 35, "j1"),
				deq(5, "w2", 40, 45, ""),
			},
			want: Ok,
		},
		{
			name: "a job run twice at once",
			spec: QueueSpec{},
			ops: []Op{
				enq(1, "p", 0, 5, "j1"),
				deq(2, "w1", 10, 15, "j1"),
				deq(3, "w2", 20, 25, "j1"),
				qAck(4, "w1", 50, 55, "j1"),
				deq(5, "w2", 60, 65, ""),
			},
			want: Illegal, property: "no job runs twice at once",
			texts: []string{"run twice at once: job j1 was delivered to w2 at 25.0 ms while w1 was still running it (delivered at 15.0 ms, running until at least 50.0 ms)"},
		},
		{
			name: "a worker that never came back is not still running its job",
			spec: QueueSpec{},
			ops: []Op{
				enq(1, "p", 0, 5, "j1"),
				deq(2, "w1", 10, 15, "j1"),
				deq(3, "w2", 20, 25, "j1"), qAck(4, "w2", 30, 35, "j1"),
				deq(5, "w2", 60, 65, ""),
			},
			want: Ok,
		},
		{
			name: "out of order",
			spec: exactly,
			ops: []Op{
				enq(1, "p", 0, 5, "j1"), enq(2, "p", 10, 15, "j2"),
				deq(3, "w1", 20, 25, "j2"), deq(4, "w1", 30, 35, "j1"),
				deq(5, "w1", 40, 45, ""),
			},
			want: Illegal, property: "delivered in order",
			texts: []string{"out of order: job j2 was delivered to w1 at 25.0 ms before job j1 (delivered at 30.0 ms), although j1 was enqueued first (answered at 5.0 ms; j2 was sent at 10.0 ms)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantVerdict(t, checkModel(t, NewQueue(tt.spec), tt.ops), tt.want, tt.property, tt.texts...)
		})
	}
}

func bankBalances(id int64, proc string, inv, comp int64, bals map[string]int64) Op {
	return mkOp(id, proc, ms(inv), ms(comp), TypeBalances, "", nil, bals)
}

func TestBankVerdicts(t *testing.T) {
	opening := map[string]int64{"a": 100, "b": 0}
	tests := []struct {
		name     string
		ops      []Op
		want     Verdict
		property string
		texts    []string
	}{
		{
			name: "transfers, a refusal, and balances that sum to the total",
			ops: []Op{
				transfer(1, "c1", ms(0), ms(5), "a", "b", 60, OutcomeOK),
				transfer(2, "c2", ms(10), ms(15), "a", "b", 60, OutcomeRejected),
				bankBalances(3, "c3", 20, 25, map[string]int64{"a": 40, "b": 60}),
			},
			want: Ok,
		},
		{
			name: "a deposit whose answer was lost may be in the total",
			ops: []Op{
				ambiguous(deposit(1, "c1", ms(0), ms(5), "a", 10)),
				bankBalances(2, "c3", 20, 25, map[string]int64{"a": 110, "b": 0}),
			},
			want: Ok,
		},
		{
			name: "money created",
			ops: []Op{
				transfer(1, "c1", ms(0), ms(5), "a", "b", 60, OutcomeOK),
				bankBalances(2, "c3", 20, 25, map[string]int64{"a": 60, "b": 60}),
			},
			want: Illegal, property: "money is conserved",
			texts: []string{"money not conserved: the balances c3 read at 20.0 ms to 25.0 ms sum to 120, not 100 (20 created)"},
		},
		{
			name: "a negative balance",
			ops: []Op{
				transfer(1, "c1", ms(0), ms(5), "a", "b", 160, OutcomeOK),
				read(2, "c2", ms(10), ms(15), "a", -60),
			},
			want: Illegal, property: "no balance goes below zero", texts: []string{"negative balance: c2 read a = -60"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantVerdict(t, checkModel(t, NewBank(opening), tt.ops), tt.want, tt.property, tt.texts...)
		})
	}
}

func request(id int64, proc string, inv, comp int64, key string, req, resp any) Op {
	return mkOp(id, proc, ms(inv), ms(comp), TypeRequest, key, req, resp)
}

func applied(id int64, proc string, inv, comp int64, key string, n int64) Op {
	return mkOp(id, proc, ms(inv), ms(comp), TypeApplied, key, nil, n)
}

func TestIdempotentVerdicts(t *testing.T) {
	pay := map[string]int{"amount": 5}
	tests := []struct {
		name     string
		ops      []Op
		want     Verdict
		property string
		texts    []string
	}{
		{
			name: "a request, its replay with the same answer, applied once",
			ops: []Op{
				request(1, "c1", 0, 5, "k1", pay, map[string]int{"id": 8}),
				request(2, "c2", 10, 15, "k1", pay, map[string]int{"id": 8}),
				request(3, "c2", 20, 25, "k1", map[string]int{"amount": 6}, OutcomeConflict),
				applied(4, "audit", 30, 35, "k1", 1),
			},
			want: Ok,
		},
		{
			name: "a request whose answer was lost, then its replay",
			ops: []Op{
				ambiguous(request(1, "c1", 0, 5, "k1", pay, nil)),
				request(2, "c1", 10, 15, "k1", pay, map[string]int{"id": 8}),
				applied(3, "audit", 30, 35, "k1", 1),
			},
			want: Ok,
		},
		{
			name: "no count read: at most once cannot be decided",
			ops:  []Op{request(1, "c1", 0, 5, "k1", pay, map[string]int{"id": 8})},
			want: Unknown,
		},
		{
			name: "applied twice",
			ops: []Op{
				request(1, "c1", 0, 5, "k1", pay, map[string]int{"id": 8}),
				applied(2, "audit", 30, 35, "k1", 2),
			},
			want: Illegal, property: "a key is applied at most once", texts: []string{"applied more than once: key k1 was applied 2 times"},
		},
		{
			name: "a replay answered differently",
			ops: []Op{
				request(1, "c1", 0, 5, "k1", pay, map[string]int{"id": 8}),
				request(2, "c2", 10, 15, "k1", pay, map[string]int{"id": 9}),
				applied(3, "audit", 30, 35, "k1", 1),
			},
			want: Illegal, property: "a replay answers what the first request answered",
			texts: []string{`replay answered differently: c2's replay of key k1 at 10.0 ms to 15.0 ms answered {"id":9}, but the first answer (c1 at 0 ns to 5.0 ms) was {"id":8}`},
		},
		{
			name: "answered but never applied",
			ops: []Op{
				request(1, "c1", 0, 5, "k1", pay, map[string]int{"id": 8}),
				applied(2, "audit", 30, 35, "k1", 0),
			},
			want: Illegal, property: "a key is applied at most once", texts: []string{"answered but not applied"},
		},
		{
			name: "a different request under a used key answered ok",
			ops: []Op{
				request(1, "c1", 0, 5, "k1", pay, map[string]int{"id": 8}),
				request(2, "c2", 10, 15, "k1", map[string]int{"amount": 6}, map[string]int{"id": 8}),
				applied(3, "audit", 30, 35, "k1", 1),
			},
			want: Illegal, property: "linearizable", texts: []string{"cannot place op 2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantVerdict(t, checkModel(t, NewIdempotent(), tt.ops), tt.want, tt.property, tt.texts...)
		})
	}
}
