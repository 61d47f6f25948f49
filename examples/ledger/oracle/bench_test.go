package oracle

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/contested/contested/contested/history"
	"github.com/contested/contested/examples/ledger"
)

// simulateLedger returns the history of a correct ledger: clients issue transfers and reads
// with overlapping intervals, each op taking effect at a random point inside its interval, a
// few with their answer lost (taking effect or not). It is what the store contract records,
// at a size a long run would reach.
func simulateLedger(seed uint64, clients, n, accounts int, lost float64) ([]history.Op, map[string]int64) {
	r := rand.New(rand.NewPCG(seed, 7))
	opening := map[string]int64{}
	names := make([]string, accounts)
	for i := range names {
		names[i] = fmt.Sprintf("acct-%02d", i)
		opening[names[i]] = 100
	}
	type sim struct {
		op     history.Op
		at     int64 // when it takes effect
		effect bool
		t      ledger.Transfer
	}
	cursor := make([]int64, clients)
	sims := make([]sim, n)
	for i := range sims {
		c := i % clients
		invoke := cursor[c] + 1 + r.Int64N(5)
		dur := 2 + r.Int64N(20)
		s := sim{at: invoke + r.Int64N(dur+1), effect: true}
		s.op = history.Op{ID: int64(i + 1), Process: fmt.Sprintf("client-%d", c), Invoke: invoke, Complete: history.At(invoke + dur)}
		cursor[c] = invoke + dur
		if r.IntN(10) < 7 {
			from := r.IntN(accounts)
			to := (from + 1 + r.IntN(accounts-1)) % accounts
			s.t = ledger.Transfer{ID: fmt.Sprintf("t-%d", i), From: names[from], To: names[to], Amount: 1 + r.Int64N(40)}
			s.op.Type = history.TypeTransfer
			s.op.Input, _ = json.Marshal(s.t)
			if r.Float64() < lost {
				s.op.Complete, s.op.Timeout, s.op.Error = nil, true, "connection reset"
				s.effect = r.IntN(2) == 0
			}
		} else {
			s.op.Type, s.op.Key = history.TypeRead, names[r.IntN(accounts)]
		}
		sims[i] = s
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return int(sims[a].at - sims[b].at) })
	bal := map[string]int64{}
	for k, v := range opening {
		bal[k] = v
	}
	for _, i := range order {
		s := &sims[i]
		switch {
		case s.op.Type == history.TypeRead:
			s.op.Output, _ = json.Marshal(bal[s.op.Key])
		case s.op.Timeout && !s.effect:
		case bal[s.t.From] >= s.t.Amount:
			bal[s.t.From] -= s.t.Amount
			bal[s.t.To] += s.t.Amount
			if !s.op.Timeout {
				s.op.Output = json.RawMessage(`"ok"`)
			}
		case !s.op.Timeout:
			s.op.Output = json.RawMessage(`"rejected"`)
		}
	}
	ops := make([]history.Op, n)
	for i, s := range sims {
		ops[i] = s.op
	}
	return ops, opening
}

// BenchmarkLinearizableLedgerHistory measures how long the linearizability oracle takes on a
// correct ledger history of a few thousand ops, four clients, one partition (transfers link
// every account), with and without lost answers, in the verbose mode the oracle runs in (it
// keeps what a visualization needs). Each result must be Ok: a benchmark of a check that
// gave up would measure nothing.
func BenchmarkLinearizableLedgerHistory(b *testing.B) {
	for _, bc := range []struct {
		ops  int
		lost float64
	}{{1000, 0}, {3000, 0}, {3000, 0.002}, {3000, 0.01}, {5000, 0}} {
		b.Run(fmt.Sprintf("ops=%d/lost=%.1f%%", bc.ops, bc.lost*100), func(b *testing.B) {
			ops, opening := simulateLedger(1, 4, bc.ops, 6, bc.lost)
			dir := b.TempDir()
			b.ResetTimer()
			for b.Loop() {
				res, err := history.Check(context.Background(), history.NewAccounts(opening), ops,
					history.Options{Timeout: 2 * time.Minute, VisualizeDir: dir})
				if err != nil || !res.Green() {
					b.Fatalf("%s: %v", res, err)
				}
			}
			b.ReportMetric(float64(bc.ops), "ops/history")
		})
	}
}

func TestSimulatedLedgerHistoryIsLinearizable(t *testing.T) {
	ops, opening := simulateLedger(3, 4, 400, 4, 0.01)
	res, err := history.Check(context.Background(), history.NewAccounts(opening), ops, history.Options{Timeout: time.Minute})
	if err != nil || !res.Green() {
		t.Fatalf("a correct simulated ledger was judged %s: %v", res, err)
	}
	// The same history with one read changed must be refused: the benchmark's histories are
	// not trivially accepted.
	for i := range ops {
		if ops[i].Type == history.TypeRead {
			ops[i].Output = json.RawMessage(`100000`)
			break
		}
	}
	res, err = history.Check(context.Background(), history.NewAccounts(opening), ops, history.Options{Timeout: time.Minute})
	if res.Verdict != history.Illegal {
		t.Fatalf("a corrupted read was judged %s: %v", res, err)
	}
}

// BenchmarkIllegalLedgerHistory measures the harder case: proving that no linearization
// exists, which porcupine must search exhaustively. A read near the end of the history sees a
// transfer by half (the debit without the credit). Lost answers multiply that search, which
// is why the store contract checks one logical op per transfer id (PerTransfer).
func BenchmarkIllegalLedgerHistory(b *testing.B) {
	for _, bc := range []struct {
		ops  int
		lost float64
	}{{1000, 0}, {3000, 0}, {3000, 0.002}} {
		b.Run(fmt.Sprintf("ops=%d/lost=%.1f%%", bc.ops, bc.lost*100), func(b *testing.B) {
			ops, opening := simulateLedger(1, 4, bc.ops, 6, bc.lost)
			for i := len(ops) - 1; i >= 0; i-- {
				if ops[i].Type == history.TypeRead {
					var v int64
					_ = json.Unmarshal(ops[i].Output, &v)
					ops[i].Output, _ = json.Marshal(v - 1)
					break
				}
			}
			dir := b.TempDir()
			b.ResetTimer()
			for b.Loop() {
				res, err := history.Check(context.Background(), history.NewAccounts(opening), ops,
					history.Options{Timeout: 2 * time.Minute, VisualizeDir: dir})
				if res.Verdict != history.Illegal {
					b.Fatalf("%s: %v", res, err)
				}
			}
			b.ReportMetric(float64(bc.ops), "ops/history")
		})
	}
}
