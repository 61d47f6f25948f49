package oracle

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contested/contested/contested"
	"github.com/contested/contested/contested/history"
	"github.com/contested/contested/examples/ledger"
	"github.com/contested/contested/internal/envvar"
)

// Every oracle must be able to fail: each table below has cases that hold and cases that
// must be reported, with the words the report must carry.

var (
	tA = ledger.Transfer{ID: "t-a", From: "x", To: "y", Amount: 10}
	tB = ledger.Transfer{ID: "t-b", From: "y", To: "x", Amount: 5}
)

// op builds one recorded op: outcome is "ok", "rejected", "duplicate", "failed", "unknown",
// or for an enqueue "ack:<seq>".
func op(id int64, typ string, t ledger.Transfer, outcome string, invoke, complete int64) history.Op {
	in, _ := json.Marshal(t)
	o := history.Op{ID: id, Process: "p", Type: typ, Input: in, Invoke: invoke, Complete: history.At(complete)}
	if typ == TypeEnqueue {
		o.Key = t.ID
	}
	switch {
	case outcome == "ok" || outcome == "rejected":
		o.Output = json.RawMessage(`"` + outcome + `"`)
	case outcome == "duplicate":
		o.Error = DuplicateAnswer
	case outcome == "failed":
		o.Error = "failed to connect"
	case outcome == "unknown":
		o.Complete, o.Timeout, o.Error = nil, true, "connection reset"
	case strings.HasPrefix(outcome, "ack:"):
		o.Output = json.RawMessage(`{"seq":` + strings.TrimPrefix(outcome, "ack:") + `}`)
	}
	return o
}

func post(t ledger.Transfer) Posting {
	return Posting{TransferID: t.ID, From: t.From, To: t.To, Amount: t.Amount}
}

func decided(t ledger.Transfer, o ledger.Outcome) Decision {
	return Decision{From: t.From, To: t.To, Amount: t.Amount, Outcome: o}
}

// mustReport checks that v failed or held as expected, naming want when it failed.
func mustReport(t *testing.T, v Verdict, fails bool, want string) {
	t.Helper()
	if fails == v.Held() {
		t.Fatalf("held = %v, want %v: %s", v.Held(), !fails, v)
	}
	if fails && !strings.Contains(v.String(), want) {
		t.Errorf("the report %q does not say %q", v, want)
	}
	if fails && !errors.Is(v.Err(), ErrViolated) && !errors.Is(v.Err(), contested.ErrInconclusive) {
		t.Errorf("Err() = %v, want ErrViolated or contested.ErrInconclusive", v.Err())
	}
	if !strings.HasPrefix(v.String(), "oracle "+v.Oracle+": ") {
		t.Errorf("the report %q does not start with the oracle's name", v)
	}
}

func TestConservation(t *testing.T) {
	tests := []struct {
		name    string
		samples []Sample
		final   map[string]int64
		fails   bool
		want    string
	}{
		{"money moved, none made or lost", []Sample{{Total: 100}, {Total: 100}}, map[string]int64{"x": 30, "y": 70}, false, ""},
		{"a sample caught money in flight", []Sample{{Total: 100}, {Total: 90}}, map[string]int64{"x": 30, "y": 70}, true, "summed to 90, not 100 (-10)"},
		{"money lost at quiescence", nil, map[string]int64{"x": 30, "y": 60}, true, "at quiescence the balances sum to 90"},
		{"money made at quiescence", nil, map[string]int64{"x": 40, "y": 70}, true, "(+10)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mustReport(t, CheckConservation(100, tt.samples, State{Balances: tt.final}), tt.fails, tt.want)
		})
	}
}

func TestJournal(t *testing.T) {
	opening := map[string]int64{"x": 50, "y": 50}
	tests := []struct {
		name     string
		balances map[string]int64
		postings []Posting
		fails    bool
		want     string
	}{
		{"balances follow the postings", map[string]int64{"x": 40, "y": 60}, []Posting{post(tA)}, false, ""},
		{"a balance changed without a posting", map[string]int64{"x": 40, "y": 60}, nil, true, "account x holds 40, but its opening balance and postings say 50"},
		{"a posting without its balance change", map[string]int64{"x": 50, "y": 50}, []Posting{post(tA)}, true, "account y holds 50"},
		{"an account vanished", map[string]int64{"x": 50}, nil, true, "account y vanished"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mustReport(t, CheckJournal(opening, State{Balances: tt.balances, Postings: tt.postings}), tt.fails, tt.want)
		})
	}
}

func TestExactlyOnce(t *testing.T) {
	forged := tA
	forged.Amount = 99
	tests := []struct {
		name  string
		ops   []history.Op
		final State
		fails bool
		want  string
	}{
		{
			name:  "a retried transfer applied once",
			ops:   []history.Op{op(1, history.TypeTransfer, tA, "unknown", 0, 0), op(2, history.TypeTransfer, tA, "duplicate", 10, 20)},
			final: State{Postings: []Posting{post(tA)}, Decided: map[string]Decision{tA.ID: decided(tA, ledger.Applied)}},
		},
		{
			name:  "a redelivered transfer applied twice",
			ops:   []history.Op{op(1, TypeEnqueue, tA, "ack:1", 0, 1), op(2, TypeEnqueue, tA, "ack:2", 2, 3)},
			final: State{Postings: []Posting{post(tA), post(tA)}, Decided: map[string]Decision{tA.ID: decided(tA, ledger.Applied)}},
			fails: true, want: "transfer t-a was applied 2 times",
		},
		{
			name:  "groups by transfer id, not op id",
			ops:   []history.Op{op(1, history.TypeTransfer, tA, "unknown", 0, 0), op(2, history.TypeTransfer, tA, "ok", 10, 20)},
			final: State{Postings: []Posting{post(tA), post(tA)}, Decided: map[string]Decision{tA.ID: decided(tA, ledger.Applied)}},
			fails: true, want: "applied 2 times",
		},
		{
			name:  "a posting nobody issued",
			ops:   []history.Op{op(1, history.TypeTransfer, tA, "ok", 0, 1)},
			final: State{Postings: []Posting{post(tA), post(tB)}, Decided: map[string]Decision{tA.ID: decided(tA, ledger.Applied), tB.ID: decided(tB, ledger.Applied)}},
			fails: true, want: "transfer t-b was decided (applied) but no client issued it (invented)",
		},
		{
			name:  "a transfer whose every attempt failed definitely",
			ops:   []history.Op{op(1, TypeEnqueue, tA, "failed", 0, 1)},
			final: State{Postings: []Posting{post(tA)}, Decided: map[string]Decision{tA.ID: decided(tA, ledger.Applied)}},
			fails: true, want: "every one of its 1 attempts definitely failed (invented)",
		},
		{
			name:  "a transfer decided rejected although every attempt failed definitely",
			ops:   []history.Op{op(1, history.TypeTransfer, tA, "failed", 0, 1)},
			final: State{Decided: map[string]Decision{tA.ID: decided(tA, ledger.Rejected)}},
			fails: true, want: "transfer t-a was decided (rejected) although every one of its 1 attempts definitely failed (invented)",
		},
		{
			name:  "a transfer decided rejected after an attempt whose outcome was unknown",
			ops:   []history.Op{op(1, history.TypeTransfer, tA, "unknown", 0, 0), op(2, history.TypeTransfer, tA, "failed", 10, 20)},
			final: State{Decided: map[string]Decision{tA.ID: decided(tA, ledger.Rejected)}},
		},
		{
			name:  "a posting with other content than issued",
			ops:   []history.Op{op(1, history.TypeTransfer, tA, "ok", 0, 1)},
			final: State{Postings: []Posting{post(forged)}, Decided: map[string]Decision{tA.ID: decided(tA, ledger.Applied)}},
			fails: true, want: "was posted as x→y 99 but issued as x→y 10",
		},
		{
			name:  "answered applied but never posted",
			ops:   []history.Op{op(1, history.TypeTransfer, tA, "ok", 0, 1)},
			final: State{Decided: map[string]Decision{tA.ID: decided(tA, ledger.Applied)}},
			fails: true, want: "answered applied but posted 0 times",
		},
		{
			name:  "answered rejected but posted",
			ops:   []history.Op{op(1, history.TypeTransfer, tA, "rejected", 0, 1)},
			final: State{Postings: []Posting{post(tA)}, Decided: map[string]Decision{tA.ID: decided(tA, ledger.Rejected)}},
			fails: true, want: "answered rejected but posted 1 times",
		},
		{
			name: "one delivery decided, the redelivery answered duplicate",
			ops:  []history.Op{op(1, TypeEnqueue, tA, "ack:1", 0, 1), op(2, TypeEnqueue, tA, "ack:2", 2, 3)},
			final: State{Decided: map[string]Decision{tA.ID: decided(tA, ledger.Rejected)},
				Queue: []QueueRow{{Seq: 1, TransferID: tA.ID, Acked: true, Outcome: "rejected"}, {Seq: 2, TransferID: tA.ID, Acked: true, Outcome: "duplicate"}}},
		},
		{
			name: "two deliveries decided one transfer",
			ops:  []history.Op{op(1, TypeEnqueue, tA, "ack:1", 0, 1), op(2, TypeEnqueue, tA, "ack:2", 2, 3)},
			final: State{Postings: []Posting{post(tA)}, Decided: map[string]Decision{tA.ID: decided(tA, ledger.Applied)},
				Queue: []QueueRow{{Seq: 1, TransferID: tA.ID, Acked: true, Outcome: "applied"}, {Seq: 2, TransferID: tA.ID, Acked: true, Outcome: "applied"}}},
			fails: true, want: "transfer t-a was decided by 2 deliveries (rows [1 2])",
		},
		{
			name: "a delivery acknowledged with another outcome than the ledger decided",
			ops:  []history.Op{op(1, TypeEnqueue, tA, "ack:1", 0, 1)},
			final: State{Decided: map[string]Decision{tA.ID: decided(tA, ledger.Rejected)},
				Queue: []QueueRow{{Seq: 1, TransferID: tA.ID, Acked: true, Outcome: "applied"}}},
			fails: true, want: "queue row 1 acknowledged transfer t-a as applied, but the ledger decided it rejected",
		},
		{
			name: "a delivery acknowledged with no outcome of applying",
			ops:  []history.Op{op(1, TypeEnqueue, tA, "ack:1", 0, 1)},
			final: State{Postings: []Posting{post(tA)}, Decided: map[string]Decision{tA.ID: decided(tA, ledger.Applied)},
				Queue: []QueueRow{{Seq: 1, TransferID: tA.ID, Acked: true, Outcome: "claimed"}}},
			fails: true, want: `queue row 1 (transfer t-a) was acknowledged as "claimed"`,
		},
		{
			name: "a queued transfer decided but none of its deliveries says so",
			ops:  []history.Op{op(1, TypeEnqueue, tA, "ack:1", 0, 1)},
			final: State{Postings: []Posting{post(tA)}, Decided: map[string]Decision{tA.ID: decided(tA, ledger.Applied)},
				Queue: []QueueRow{{Seq: 1, TransferID: tA.ID, Acked: true, Outcome: "duplicate"}}},
			fails: true, want: "none of its 1 acknowledged deliveries says so",
		},
		{
			name:  "a posting that escaped the idempotency key",
			ops:   []history.Op{op(1, history.TypeTransfer, tA, "unknown", 0, 0)},
			final: State{Postings: []Posting{post(tA)}, Decided: map[string]Decision{}},
			fails: true, want: "no decision: it escaped the idempotency key",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mustReport(t, CheckExactlyOnce(tt.ops, tt.final), tt.fails, tt.want)
		})
	}
}

func TestNoLostAck(t *testing.T) {
	tests := []struct {
		name  string
		ops   []history.Op
		final State
		fails bool
		want  string
	}{
		{
			name: "every acknowledged enqueue applied",
			ops:  []history.Op{op(1, TypeEnqueue, tA, "ack:1", 0, 1), op(2, TypeEnqueue, tB, "unknown", 2, 2)},
			final: State{Decided: map[string]Decision{tA.ID: decided(tA, ledger.Applied)}, Postings: []Posting{post(tA)},
				Queue: []QueueRow{{Seq: 1, TransferID: tA.ID, Acked: true}}},
		},
		{
			name:  "an acknowledged enqueue never applied",
			ops:   []history.Op{op(1, TypeEnqueue, tA, "ack:1", 0, 1)},
			final: State{Decided: map[string]Decision{}, Queue: []QueueRow{{Seq: 1, TransferID: tA.ID, Acked: true}}},
			fails: true, want: "was acknowledged but the transfer was never applied",
		},
		{
			name:  "a timed-out enqueue is not an acknowledgement",
			ops:   []history.Op{op(1, TypeEnqueue, tA, "unknown", 0, 0)},
			final: State{Decided: map[string]Decision{}},
			fails: true, want: "UNKNOWN (never green): nothing checked", // nothing lost, but no verdict is green on nothing
		},
		{
			name:  "a row left pending at quiescence",
			ops:   []history.Op{op(1, TypeEnqueue, tA, "ack:1", 0, 1)},
			final: State{Decided: map[string]Decision{tA.ID: decided(tA, ledger.Applied)}, Queue: []QueueRow{{Seq: 1, TransferID: tA.ID}}},
			fails: true, want: "still pending at quiescence",
		},
		{
			name:  "an acknowledged transfer missing from the journal",
			ops:   []history.Op{op(1, history.TypeTransfer, tA, "ok", 0, 1)},
			final: State{Decided: map[string]Decision{tA.ID: decided(tA, ledger.Applied)}},
			fails: true, want: "answered applied but is not in the journal",
		},
		{
			name:  "an acknowledgement that names another row",
			ops:   []history.Op{op(1, TypeEnqueue, tA, "ack:7", 0, 1)},
			final: State{Decided: map[string]Decision{tA.ID: decided(tA, ledger.Applied)}, Queue: []QueueRow{{Seq: 7, TransferID: tB.ID, Acked: true}}},
			fails: true, want: "acknowledged as row 7, which holds transfer t-b",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mustReport(t, CheckNoLostAck(tt.ops, tt.final), tt.fails, tt.want)
		})
	}
}

// turn is decided with a turn in the ledger's serial order.
func turn(t ledger.Transfer, o ledger.Outcome, n int64) Decision {
	d := decided(t, o)
	d.Turn = n
	return d
}

func TestDecisions(t *testing.T) {
	opening := map[string]int64{"x": 10, "y": 0}
	tC := ledger.Transfer{ID: "t-c", From: "x", To: "y", Amount: 1}
	tests := []struct {
		name     string
		decided  map[string]Decision
		balances map[string]int64
		fails    bool
		want     string
	}{
		{
			name:     "the exact balance applied, then a transfer from the emptied account rejected",
			decided:  map[string]Decision{tA.ID: turn(tA, ledger.Applied, 1), tC.ID: turn(tC, ledger.Rejected, 2)},
			balances: map[string]int64{"x": 0, "y": 10},
		},
		{
			name:     "the turns decide, not the ids: a rejection before the funds arrived",
			decided:  map[string]Decision{tB.ID: turn(tB, ledger.Rejected, 1), tA.ID: turn(tA, ledger.Applied, 2)},
			balances: map[string]int64{"x": 0, "y": 10},
		},
		{
			name:     "the exact balance rejected",
			decided:  map[string]Decision{tA.ID: turn(tA, ledger.Rejected, 1)},
			balances: map[string]int64{"x": 10, "y": 0},
			fails:    true, want: "transfer t-a (x→y 10) was rejected at turn 1 while x held 10, enough for it",
		},
		{
			name:     "applied without the funds",
			decided:  map[string]Decision{tC.ID: turn(tC, ledger.Applied, 1), tA.ID: turn(tA, ledger.Applied, 2)},
			balances: map[string]int64{"x": -1, "y": 11},
			fails:    true, want: "transfer t-a (x→y 10) was applied at turn 2 while x held 9",
		},
		{
			name:     "a balance the decisions do not explain",
			decided:  map[string]Decision{tA.ID: turn(tA, ledger.Applied, 1)},
			balances: map[string]int64{"x": 5, "y": 10},
			fails:    true, want: "replaying the decisions in turn order leaves x at 0, but it holds 5 (+5)",
		},
		{
			name:     "two decisions in one turn",
			decided:  map[string]Decision{tA.ID: turn(tA, ledger.Applied, 1), tC.ID: turn(tC, ledger.Rejected, 1)},
			balances: map[string]int64{"x": 0, "y": 10},
			fails:    true, want: "share turn 1",
		},
		{
			name:     "nothing decided",
			decided:  map[string]Decision{},
			balances: map[string]int64{"x": 10, "y": 0},
			fails:    true, want: "nothing checked",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mustReport(t, CheckDecisions(opening, State{Balances: tt.balances, Decided: tt.decided}), tt.fails, tt.want)
		})
	}
}

func TestBatchOrder(t *testing.T) {
	tC := ledger.Transfer{ID: "t-c", From: "x", To: "y", Amount: 1}
	decisions := map[string]Decision{tA.ID: turn(tA, ledger.Applied, 1), tB.ID: turn(tB, ledger.Applied, 2), tC.ID: turn(tC, ledger.Rejected, 3)}
	row := func(seq int64, tr ledger.Transfer, outcome string, batch int64) QueueRow {
		return QueueRow{Seq: seq, TransferID: tr.ID, Acked: true, Outcome: outcome, Worker: "w/0", Batch: batch}
	}
	tests := []struct {
		name  string
		queue []QueueRow
		fails bool
		want  string
	}{
		{
			name:  "one batch in enqueue order, a duplicate in between",
			queue: []QueueRow{row(1, tA, "applied", 7), row(2, tA, "duplicate", 7), row(3, tB, "applied", 7), row(4, tC, "rejected", 7)},
		},
		{
			name:  "two batches may interleave",
			queue: []QueueRow{row(1, tB, "applied", 7), row(2, tA, "applied", 8), row(3, tC, "rejected", 7)},
		},
		{
			name:  "a batch applied backwards",
			queue: []QueueRow{row(1, tC, "rejected", 7), row(2, tB, "applied", 7), row(3, tA, "applied", 7)},
			fails: true, want: "batch 7 (w/0) decided row 2 (transfer t-b) at turn 2, before row 1 (transfer t-c) at turn 3",
		},
		{
			name:  "no deciding rows",
			queue: []QueueRow{row(1, tA, "duplicate", 7)},
			fails: true, want: "nothing checked",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mustReport(t, CheckBatchOrder(State{Decided: decisions, Queue: tt.queue}), tt.fails, tt.want)
		})
	}
}

func TestLinearizableSavesTheVisualizationOnFailure(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(envvar.ResultsDir, dir)
	opening := map[string]int64{"x": 50, "y": 50}
	read := func(id int64, acct string, v int64, at int64) history.Op {
		b, _ := json.Marshal(v)
		return history.Op{ID: id, Process: "r", Type: history.TypeRead, Key: acct, Output: b, Invoke: at, Complete: history.At(at + 1)}
	}
	tests := []struct {
		name  string
		ops   []history.Op
		fails bool
		want  string
	}{
		{
			name: "a transfer seen whole",
			ops:  []history.Op{op(1, history.TypeTransfer, tA, "ok", 0, 10), read(2, "x", 40, 20), read(3, "y", 60, 30)},
		},
		{
			name:  "a transfer seen half done after it completed",
			ops:   []history.Op{op(1, history.TypeTransfer, tA, "ok", 0, 10), read(2, "x", 40, 20), read(3, "y", 50, 30)},
			fails: true, want: "porcupine found no linearization",
		},
		{
			name: "a rejection the balance explains",
			ops: []history.Op{op(1, history.TypeTransfer, ledger.Transfer{ID: "big", From: "x", To: "y", Amount: 60}, "rejected", 0, 10),
				read(2, "x", 50, 20)},
		},
		{
			name:  "a transfer rejected although the source held exactly enough",
			ops:   []history.Op{op(1, history.TypeTransfer, ledger.Transfer{ID: "all", From: "x", To: "y", Amount: 50}, "rejected", 0, 10)},
			fails: true, want: "porcupine found no linearization",
		},
		{
			name:  "a rejected transfer reported applied",
			ops:   []history.Op{op(1, history.TypeTransfer, ledger.Transfer{ID: "big", From: "x", To: "y", Amount: 60}, "ok", 0, 10)},
			fails: true, want: "porcupine found no linearization",
		},
		{
			name:  "an ambiguous transfer may have happened, but not by half",
			ops:   []history.Op{op(1, history.TypeTransfer, tA, "unknown", 0, 0), read(2, "x", 40, 20), read(3, "y", 50, 30)},
			fails: true, want: "porcupine found no linearization",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := CheckLinearizable(context.Background(), history.NewAccounts(opening), tt.ops, nil, t.Name(), 0)
			mustReport(t, v, tt.fails, tt.want)
			if !tt.fails {
				return
			}
			if v.Artifact == "" || !strings.HasPrefix(v.Artifact, filepath.Join(dir, VisualizationDir)) {
				t.Fatalf("visualization %q, want one under %s", v.Artifact, filepath.Join(dir, VisualizationDir))
			}
			for _, p := range []string{v.Artifact, strings.TrimSuffix(v.Artifact, ".html") + ".history.jsonl"} {
				if _, err := os.Stat(p); err != nil {
					t.Errorf("evidence missing: %v", err)
				}
			}
			if !strings.Contains(v.String(), v.Artifact) {
				t.Errorf("the report %q does not name the visualization", v)
			}
		})
	}
}

func TestPerTransferSettlesRetriesWithTheServersAudit(t *testing.T) {
	final := State{Decided: map[string]Decision{tA.ID: decided(tA, ledger.Applied), tB.ID: decided(tB, ledger.Rejected)}}
	tC := ledger.Transfer{ID: "t-c", From: "x", To: "y", Amount: 1}
	ops := []history.Op{
		op(1, history.TypeTransfer, tA, "unknown", 0, 0),
		op(2, history.TypeTransfer, tA, "failed", 5, 6),
		op(3, history.TypeTransfer, tA, "duplicate", 10, 20),
		op(4, history.TypeTransfer, tB, "unknown", 30, 30),
		op(5, history.TypeTransfer, tC, "unknown", 40, 40),
	}
	got, err := PerTransfer(ops, final)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("%d logical ops, want 3: %+v", len(got), got)
	}
	tests := []struct {
		name     string
		op       history.Op
		output   string
		timeout  bool
		complete int64
	}{
		{"a duplicate answer takes the server's decision and ends the interval", got[0], `"ok"`, false, 20},
		{"an unanswered transfer the server decided stays ambiguous", got[1], "", true, -1},
		{"an unanswered transfer the server never decided did not happen", got[2], "", false, 40},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if string(tt.op.Output) != tt.output || tt.op.Timeout != tt.timeout {
				t.Errorf("op %d: output %s timeout %v, want %s %v", tt.op.ID, tt.op.Output, tt.op.Timeout, tt.output, tt.timeout)
			}
			if tt.complete >= 0 && (tt.op.Complete == nil || *tt.op.Complete != tt.complete) {
				t.Errorf("op %d completes at %v, want %d", tt.op.ID, tt.op.Complete, tt.complete)
			}
			if tt.op.Invoke != ops[tt.op.ID-1].Invoke {
				t.Errorf("op %d invoked at %d, want the first attempt's %d", tt.op.ID, tt.op.Invoke, ops[tt.op.ID-1].Invoke)
			}
		})
	}
}
