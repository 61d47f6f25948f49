package leasetable_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/contested/contested/contested/history"
)

// simulateLeases returns the history of a correct lease table: clients cycle through acquire,
// renew, release, and a stale release and renew of the spent epoch, with overlapping
// intervals, each op taking effect at a random point inside its interval.
func simulateLeases(seed uint64, clients, n int) []history.Op {
	r := rand.New(rand.NewPCG(seed, 11))
	type port struct {
		holder string
		epoch  int64
	}
	table := map[int]*port{}
	for _, p := range ports {
		table[p] = &port{}
	}
	type client struct {
		step    int // 0 acquire, 1 renew, 2 release, 3 stale release, 4 stale renew
		k       int
		lease   history.LeaseRef
		held    bool
		invoke  int64
		at      int64 // when the next op takes effect
		done    int64
		pending bool
	}
	cs := make([]*client, clients)
	next := func(c *client, from int64) {
		c.invoke = from + 1 + r.Int64N(5)
		dur := 2 + r.Int64N(20)
		c.at, c.done, c.pending = c.invoke+r.Int64N(dur+1), c.invoke+dur, true
	}
	for i := range cs {
		cs[i] = &client{}
		next(cs[i], 0)
	}
	var ops []history.Op
	for len(ops) < n {
		var c *client
		ci := 0
		for i, x := range cs {
			if c == nil || x.at < c.at {
				c, ci = x, i
			}
		}
		op := history.Op{ID: int64(len(ops) + 1), Process: fmt.Sprintf("c%d", ci), Invoke: c.invoke, Complete: history.At(c.done)}
		word := func(ok bool) json.RawMessage {
			if ok {
				return json.RawMessage(`"ok"`)
			}
			return json.RawMessage(`"fenced"`)
		}
		current := func() bool {
			p := table[c.lease.Port]
			return p.holder == c.lease.Holder && p.epoch == c.lease.Epoch
		}
		switch c.step {
		case 0:
			holder := fmt.Sprintf("c%d.%d", ci, c.k)
			op.Type, op.Input = history.TypeAcquire, must(json.Marshal(history.LeaseRef{Holder: holder}))
			c.held = false
			for _, pn := range ports {
				if p := table[pn]; p.holder == "" {
					p.holder, p.epoch = holder, p.epoch+1
					c.lease, c.held = history.LeaseRef{Port: pn, Epoch: p.epoch, Holder: holder}, true
					op.Output = must(json.Marshal(history.Acquired{Port: pn, Epoch: p.epoch}))
					break
				}
			}
			if !c.held {
				op.Output = json.RawMessage(`"none-free"`)
			}
		case 1, 4:
			op.Type, op.Key, op.Input = history.TypeRenew, fmt.Sprint(c.lease.Port), must(json.Marshal(c.lease))
			op.Output = word(current())
		case 2, 3:
			op.Type, op.Key, op.Input = history.TypeRelease, fmt.Sprint(c.lease.Port), must(json.Marshal(c.lease))
			ok := current()
			if ok {
				table[c.lease.Port].holder = ""
			}
			op.Output = word(ok)
		}
		ops = append(ops, op)
		c.step++
		if c.step == 5 || !c.held {
			c.step, c.k = 0, c.k+1
		}
		next(c, c.done)
	}
	return ops
}

func must(b []byte, err error) json.RawMessage {
	if err != nil {
		panic(err)
	}
	return b
}

// BenchmarkLinearizableLeaseHistory measures the lease oracle on correct histories of a few
// thousand ops (the reset leg records a few hundred to a few thousand), in the verbose mode
// the oracle runs in. Lost acquires are left out on purpose: each multiplies the model's
// search (see settleLostAcquires), which the contract settles before checking.
func BenchmarkLinearizableLeaseHistory(b *testing.B) {
	for _, n := range []int{1000, 3000, 5000} {
		b.Run(fmt.Sprintf("ops=%d", n), func(b *testing.B) {
			ops := simulateLeases(1, 4, n)
			dir := b.TempDir()
			for b.Loop() {
				res, err := history.Check(context.Background(), history.NewLease(ports...), ops,
					history.Options{Timeout: 2 * time.Minute, VisualizeDir: dir})
				if err != nil || !res.Green() {
					b.Fatalf("%s: %v", res, err)
				}
			}
			b.ReportMetric(float64(n), "ops/history")
		})
	}
}

func TestSimulatedLeaseHistoryIsLinearizable(t *testing.T) {
	ops := simulateLeases(2, 4, 600)
	res, err := history.Check(context.Background(), history.NewLease(ports...), ops, history.Options{Timeout: time.Minute})
	if err != nil || !res.Green() {
		t.Fatalf("a correct simulated lease table was judged %s: %v", res, err)
	}
	// A stale release answered ok must be refused: the benchmark's histories are not
	// trivially accepted.
	for i := range ops {
		if ops[i].Type == history.TypeRelease && string(ops[i].Output) == `"fenced"` {
			ops[i].Output = json.RawMessage(`"ok"`)
			break
		}
	}
	res, err = history.Check(context.Background(), history.NewLease(ports...), ops, history.Options{Timeout: time.Minute})
	if res.Verdict != history.Illegal {
		t.Fatalf("an unfenced stale release was judged %s: %v", res, err)
	}
}
