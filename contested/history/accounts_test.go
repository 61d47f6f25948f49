package history

import (
	"testing"
	"time"
)

// generous is porcupine's budget in tests: far more than any of these histories needs, so a
// checker bug shows as Unknown instead of a hung test.
const generous = 2 * time.Minute

func TestAccountsVerdicts(t *testing.T) {
	tests := []struct {
		name    string
		initial map[string]int64
		ops     []Op
		want    Verdict
	}{
		{
			name: "sequential write then read sees the write",
			ops:  []Op{write(1, "p1", 0, 10, "a", 10), read(2, "p1", 20, 30, "a", 10)},
			want: Ok,
		},
		{
			name: "read of a stale balance after a completed write",
			ops:  []Op{write(1, "p1", 0, 10, "a", 10), read(2, "p2", 20, 30, "a", 0)},
			want: Illegal,
		},
		{
			name: "read concurrent with a write may see the old balance",
			ops:  []Op{write(1, "p1", 0, 100, "a", 10), read(2, "p2", 10, 20, "a", 0)},
			want: Ok,
		},
		{
			name: "read concurrent with a write may see the new balance",
			ops:  []Op{write(1, "p1", 0, 100, "a", 10), read(2, "p2", 10, 20, "a", 10)},
			want: Ok,
		},
		{
			name: "reads may not flip back to the old balance",
			ops: []Op{
				write(1, "p1", 0, 100, "a", 10),
				read(2, "p2", 10, 20, "a", 10),
				read(3, "p2", 30, 40, "a", 0),
			},
			want: Illegal,
		},
		{
			name:    "transfer moves money and conserves it",
			initial: map[string]int64{"a": 10},
			ops: []Op{
				transfer(1, "p1", 0, 10, "a", "b", 4, OutcomeOK),
				read(2, "p1", 20, 30, "a", 6),
				read(3, "p2", 20, 30, "b", 4),
			},
			want: Ok,
		},
		{
			name:    "money created by a transfer answered ok without funds",
			initial: map[string]int64{"a": 5},
			ops:     []Op{transfer(1, "p1", 0, 10, "a", "b", 10, OutcomeOK)},
			want:    Illegal,
		},
		{
			name:    "money created: the destination shows more than was sent",
			initial: map[string]int64{"a": 10},
			ops: []Op{
				transfer(1, "p1", 0, 10, "a", "b", 4, OutcomeOK),
				read(2, "p2", 20, 30, "b", 8),
			},
			want: Illegal,
		},
		{
			name:    "rejected for insufficient funds is legal and moves nothing",
			initial: map[string]int64{"a": 5},
			ops: []Op{
				transfer(1, "p1", 0, 10, "a", "b", 10, OutcomeRejected),
				read(2, "p1", 20, 30, "a", 5),
				read(3, "p2", 20, 30, "b", 0),
			},
			want: Ok,
		},
		{
			name:    "rejected although the funds were there",
			initial: map[string]int64{"a": 50},
			ops:     []Op{transfer(1, "p1", 0, 10, "a", "b", 10, OutcomeRejected)},
			want:    Illegal,
		},
		{
			name:    "two concurrent transfers of the whole balance: one ok, one rejected",
			initial: map[string]int64{"a": 10},
			ops: []Op{
				transfer(1, "p1", 0, 50, "a", "b", 10, OutcomeOK),
				transfer(2, "p2", 5, 40, "a", "c", 10, OutcomeRejected),
			},
			want: Ok,
		},
		{
			name:    "double spend: two concurrent transfers of the whole balance both ok",
			initial: map[string]int64{"a": 10},
			ops: []Op{
				transfer(1, "p1", 0, 50, "a", "b", 10, OutcomeOK),
				transfer(2, "p2", 5, 40, "a", "c", 10, OutcomeOK),
			},
			want: Illegal,
		},
		{
			name: "ambiguous write that later reads show happened",
			ops:  []Op{ambiguous(write(1, "p1", 0, 10, "a", 10)), read(2, "p2", 20, 30, "a", 10)},
			want: Ok,
		},
		{
			name: "ambiguous write that later reads show never happened",
			ops:  []Op{ambiguous(write(1, "p1", 0, 10, "a", 10)), read(2, "p2", 20, 30, "a", 0), read(3, "p2", 40, 50, "a", 0)},
			want: Ok,
		},
		{
			name: "ambiguous write that lands long after its client gave up",
			ops: []Op{
				ambiguous(write(1, "p1", 0, 10, "a", 10)),
				read(2, "p2", 20, 30, "a", 0),
				read(3, "p2", 1000, 1010, "a", 10),
			},
			want: Ok,
		},
		{
			name: "ambiguous write seen and then unseen",
			ops: []Op{
				ambiguous(write(1, "p1", 0, 10, "a", 10)),
				read(2, "p2", 20, 30, "a", 10),
				read(3, "p2", 40, 50, "a", 0),
			},
			want: Illegal,
		},
		{
			name: "unanswered write may have happened",
			ops:  []Op{unanswered(write(1, "p1", 0, 10, "a", 7)), read(2, "p2", 20, 30, "a", 7)},
			want: Ok,
		},
		{
			name:    "ambiguous transfer, reads show it moved",
			initial: map[string]int64{"a": 10},
			ops: []Op{
				ambiguous(transfer(1, "p1", 0, 10, "a", "b", 10, "")),
				read(2, "p2", 20, 30, "a", 0),
				read(3, "p2", 40, 50, "b", 10),
			},
			want: Ok,
		},
		{
			name:    "ambiguous transfer, reads show it did not move",
			initial: map[string]int64{"a": 10},
			ops: []Op{
				ambiguous(transfer(1, "p1", 0, 10, "a", "b", 10, "")),
				read(2, "p2", 20, 30, "a", 10),
				read(3, "p2", 40, 50, "b", 0),
			},
			want: Ok,
		},
		{
			name:    "ambiguous transfer cannot half happen",
			initial: map[string]int64{"a": 10},
			ops: []Op{
				ambiguous(transfer(1, "p1", 0, 10, "a", "b", 10, "")),
				read(2, "p2", 20, 30, "a", 0),
				read(3, "p2", 40, 50, "b", 0),
			},
			want: Illegal,
		},
		{
			name: "a definite failure must not take effect",
			ops:  []Op{failed(write(1, "p1", 0, 10, "a", 10), "check constraint violated"), read(2, "p2", 20, 30, "a", 10)},
			want: Illegal,
		},
		{
			name: "failed reads are checked and legal whatever they say",
			ops: []Op{
				write(1, "p1", 0, 10, "a", 10),
				failed(read(2, "p2", 20, 30, "a", 999), "connection refused"),
				ambiguous(read(3, "p2", 40, 50, "a", 0)),
			},
			want: Ok,
		},
		{
			name: "deposits add up",
			ops: []Op{
				deposit(1, "p1", 0, 10, "a", 3),
				deposit(2, "p2", 0, 10, "a", 4),
				read(3, "p1", 20, 30, "a", 7),
			},
			want: Ok,
		},
		{
			name: "a lost deposit",
			ops: []Op{
				deposit(1, "p1", 0, 10, "a", 3),
				deposit(2, "p2", 0, 10, "a", 4),
				read(3, "p1", 20, 30, "a", 4),
			},
			want: Illegal,
		},
		{
			name: "per-account histories are independent without transfers",
			ops: []Op{
				write(1, "p1", 0, 10, "a", 1),
				write(2, "p2", 0, 10, "b", 2),
				read(3, "p1", 20, 30, "b", 2),
				read(4, "p2", 20, 30, "a", 1),
			},
			want: Ok,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Check(t.Context(), NewAccounts(tt.initial), tt.ops, Options{Timeout: generous})
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if res.Verdict != tt.want {
				t.Fatalf("verdict %s, want %s (%s)", res.Verdict, tt.want, res)
			}
			if got, want := res.Green(), tt.want == Ok; got != want {
				t.Errorf("Green() = %v, want %v (%s)", got, want, res)
			}
			if res.OpsChecked != res.OpsProduced {
				t.Errorf("checked %d ops of %d produced", res.OpsChecked, res.OpsProduced)
			}
		})
	}
}

func TestAccountsPartitionOnlyWithoutTransfers(t *testing.T) {
	tests := []struct {
		name string
		ops  []Op
		want int
	}{
		{
			name: "reads and writes of two accounts: two partitions",
			ops:  []Op{write(1, "p1", 0, 10, "a", 1), write(2, "p2", 0, 10, "b", 2), read(3, "p1", 20, 30, "b", 2)},
			want: 2,
		},
		{
			name: "a transfer links the accounts: one partition",
			ops: []Op{
				write(1, "p1", 0, 10, "a", 5), write(2, "p2", 0, 10, "b", 2),
				transfer(3, "p1", 20, 30, "a", "b", 1, OutcomeOK),
			},
			want: 1,
		},
		{
			name: "a transfer to the same account links nothing",
			ops: []Op{
				write(1, "p1", 0, 10, "a", 5), write(2, "p2", 0, 10, "b", 2),
				transfer(3, "p1", 20, 30, "a", "a", 1, OutcomeOK),
			},
			want: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Check(t.Context(), NewAccounts(nil), tt.ops, Options{Timeout: generous})
			if err != nil || res.Verdict != Ok {
				t.Fatalf("Check: %v, %s", err, res)
			}
			if res.Partitions != tt.want {
				t.Errorf("%d partitions, want %d", res.Partitions, tt.want)
			}
		})
	}
}

func TestAccountsStateHashMatchesEquality(t *testing.T) {
	m := NewAccounts(map[string]int64{"a": 3})
	pm := m.Porcupine()
	ctx := t.Context()
	step := func(s any, in accIn, out accOut) any {
		ok, n := pm.StepContext(ctx, s, in, out)
		if !ok {
			t.Fatalf("step %+v → %+v refused", in, out)
		}
		return n
	}
	// a=3 → write a=5 → write a=3 is the start again; b=0 written explicitly is no entry.
	s := step(pm.Init(), accIn{kind: accWrite, key: "a", amount: 5}, accOut{res: resOK})
	s = step(s, accIn{kind: accWrite, key: "a", amount: 3}, accOut{res: resOK})
	s = step(s, accIn{kind: accWrite, key: "b", amount: 0}, accOut{res: resOK})
	if !pm.Equal(s, pm.Init()) || pm.Hash(s) != pm.Hash(pm.Init()) {
		t.Fatalf("equal ledgers differ: %s (hash %x) vs %s (hash %x)", pm.DescribeState(s), pm.Hash(s), pm.DescribeState(pm.Init()), pm.Hash(pm.Init()))
	}
	if pm.DescribeState(pm.Init()) != "a=3" {
		t.Errorf("DescribeState = %q", pm.DescribeState(pm.Init()))
	}
}

func TestAccountsDescriptionsAreEscaped(t *testing.T) {
	pm := NewAccounts(map[string]int64{"<b>x</b>": 1}).Porcupine()
	if got := pm.DescribeState(pm.Init()); got != "&lt;b&gt;x&lt;/b&gt;=1" {
		t.Errorf("DescribeState = %q", got)
	}
	got := pm.DescribeOperation(accIn{kind: accTransfer, key: "<a>", to: "b&c", amount: 1}, accOut{res: resOK})
	if want := "transfer(&lt;a&gt; → b&amp;c, 1) → ok"; got != want {
		t.Errorf("DescribeOperation = %q, want %q", got, want)
	}
}

func TestAccountsRefusesWhatItCannotRead(t *testing.T) {
	tests := []struct {
		name string
		op   Op
	}{
		{"unknown type", mkOp(1, "p", 0, 1, "cas", "a", nil, nil)},
		{"read without key", read(1, "p", 0, 1, "", 3)},
		{"read whose output is not a number", mkOp(1, "p", 0, 1, TypeRead, "a", nil, "three")},
		{"write without input", mkOp(1, "p", 0, 1, TypeWrite, "a", nil, OutcomeOK)},
		{"transfer without an outcome", mkOp(1, "p", 0, 1, TypeTransfer, "a", Transfer{From: "a", To: "b", Amount: 1}, nil)},
		{"transfer with a made-up outcome", transfer(1, "p", 0, 1, "a", "b", 1, "maybe")},
		{"transfer without a destination", transfer(1, "p", 0, 1, "a", "", 1, OutcomeOK)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewAccounts(nil).Translate(tt.op)
			if !isInvalid(err) {
				t.Fatalf("Translate: %v, want ErrInvalidHistory", err)
			}
		})
	}
}
