package history

import (
	"testing"
)

func TestLeaseVerdicts(t *testing.T) {
	const p, q = 31001, 31002
	tests := []struct {
		name  string
		ports []int
		ops   []Op
		want  Verdict
	}{
		{
			name: "acquire, renew, release, acquire again with a higher epoch",
			ops: []Op{
				acquire(1, "A", 0, 10, "A", p, 1),
				renew(2, "A", 20, 30, p, 1, "A", OutcomeOK),
				release(3, "A", 40, 50, p, 1, "A", OutcomeOK),
				acquire(4, "B", 60, 70, "B", p, 2),
			},
			want: Ok,
		},
		{
			name: "the first acquire may return any epoch: the table predates the history",
			ops:  []Op{acquire(1, "A", 0, 10, "A", p, 57)},
			want: Ok,
		},
		{
			name: "two holders hold the same port with overlapping intervals",
			ops: []Op{
				acquire(1, "A", 0, 10, "A", p, 1),
				acquire(2, "B", 20, 30, "B", p, 2),
				release(3, "A", 40, 50, p, 1, "A", OutcomeOK),
			},
			want: Illegal,
		},
		{
			name: "concurrent acquires both handed the same port",
			ops: []Op{
				acquire(1, "A", 0, 100, "A", p, 1),
				acquire(2, "B", 10, 90, "B", p, 2),
			},
			want: Illegal,
		},
		{
			name: "concurrent acquires handed different ports",
			ops: []Op{
				acquire(1, "A", 0, 100, "A", p, 1),
				acquire(2, "B", 10, 90, "B", q, 1),
			},
			want: Ok,
		},
		{
			name: "an expired lease taken over: the old holder is fenced from then on",
			ops: []Op{
				acquire(1, "A", 0, 10, "A", p, 1),
				reclaimedAcquire(2, "B", 20, 30, "B", p, 2),
				renew(3, "A", 40, 50, p, 1, "A", OutcomeFenced),
				release(4, "A", 60, 70, p, 1, "A", OutcomeFenced),
				release(5, "B", 80, 90, p, 2, "B", OutcomeOK),
			},
			want: Ok,
		},
		{
			name: "a release with a stale epoch answered ok",
			ops: []Op{
				acquire(1, "A", 0, 10, "A", p, 1),
				reclaimedAcquire(2, "B", 20, 30, "B", p, 2),
				release(3, "A", 40, 50, p, 1, "A", OutcomeOK),
			},
			want: Illegal,
		},
		{
			name: "a renew with a stale epoch answered ok",
			ops: []Op{
				acquire(1, "A", 0, 10, "A", p, 1),
				release(2, "A", 20, 30, p, 1, "A", OutcomeOK),
				acquire(3, "A", 40, 50, "A", p, 2),
				renew(4, "A", 60, 70, p, 1, "A", OutcomeOK),
			},
			want: Illegal,
		},
		{
			name: "a release by someone who is not the holder answered ok",
			ops: []Op{
				acquire(1, "A", 0, 10, "A", p, 1),
				release(2, "B", 20, 30, p, 1, "B", OutcomeOK),
			},
			want: Illegal,
		},
		{
			name: "the current lease fenced",
			ops: []Op{
				acquire(1, "A", 0, 10, "A", p, 1),
				renew(2, "A", 20, 30, p, 1, "A", OutcomeFenced),
			},
			want: Illegal,
		},
		{
			name: "epochs that go backwards",
			ops: []Op{
				acquire(1, "A", 0, 10, "A", p, 5),
				release(2, "A", 20, 30, p, 5, "A", OutcomeOK),
				acquire(3, "B", 40, 50, "B", p, 3),
			},
			want: Illegal,
		},
		{
			name: "an epoch handed out twice",
			ops: []Op{
				acquire(1, "A", 0, 10, "A", p, 5),
				release(2, "A", 20, 30, p, 5, "A", OutcomeOK),
				acquire(3, "B", 40, 50, "B", p, 5),
			},
			want: Illegal,
		},
		{
			name: "a takeover claimed for a port nobody held",
			ops:  []Op{reclaimedAcquire(1, "A", 0, 10, "A", p, 1)},
			want: Illegal,
		},
		{
			name: "none free while every port is held",
			ops: []Op{
				acquire(1, "A", 0, 10, "A", p, 1),
				acquire(2, "B", 0, 10, "B", q, 1),
				noneFree(3, "C", 20, 30, "C"),
			},
			want: Ok,
		},
		{
			name: "none free while a port is free",
			ops: []Op{
				acquire(1, "A", 0, 10, "A", p, 1),
				noneFree(2, "C", 20, 30, "C"),
			},
			want: Illegal,
		},
		{
			name: "a port outside the table",
			ops:  []Op{acquire(1, "A", 0, 10, "A", 40000, 1)},
			want: Illegal,
		},
		{
			name: "reclaim frees an expired lease; the next acquire finds it free",
			ops: []Op{
				acquire(1, "A", 0, 10, "A", p, 1),
				reclaim(2, "reaper", 20, 30, p, 1, OutcomeOK),
				acquire(3, "B", 40, 50, "B", p, 2),
				renew(4, "A", 60, 70, p, 1, "A", OutcomeFenced),
			},
			want: Ok,
		},
		{
			name: "reclaim of a lease already released answered ok",
			ops: []Op{
				acquire(1, "A", 0, 10, "A", p, 1),
				release(2, "A", 20, 30, p, 1, "A", OutcomeOK),
				reclaim(3, "reaper", 40, 50, p, 1, OutcomeOK),
			},
			want: Illegal,
		},
		{
			name: "ambiguous release: the port may or may not be free after it",
			ops: []Op{
				acquire(1, "A", 0, 10, "A", p, 1),
				ambiguous(release(2, "A", 20, 30, p, 1, "A", "")),
				acquire(3, "B", 40, 50, "B", p, 2),
			},
			want: Ok,
		},
		{
			name: "ambiguous acquire may have taken the last free port",
			ops: []Op{
				acquire(1, "A", 0, 10, "A", p, 1),
				ambiguous(acquire(2, "B", 20, 30, "B", 0, 0)),
				noneFree(3, "C", 40, 50, "C"),
			},
			want: Ok,
		},
		{
			name: "ambiguous acquire may have taken over a held port",
			ops: []Op{
				acquire(1, "A", 0, 10, "A", p, 1),
				acquire(2, "C", 0, 10, "C", q, 1),
				ambiguous(acquire(3, "B", 20, 30, "B", 0, 0)),
				renew(4, "A", 40, 50, p, 1, "A", OutcomeFenced),
				renew(5, "C", 40, 50, q, 1, "C", OutcomeOK),
			},
			want: Ok,
		},
		{
			name: "ambiguous acquire does not excuse a stale epoch answered ok",
			ops: []Op{
				acquire(1, "A", 0, 10, "A", p, 1),
				ambiguous(acquire(2, "B", 20, 30, "B", 0, 0)),
				release(3, "A", 40, 50, p, 1, "A", OutcomeOK),
				acquire(4, "C", 60, 70, "C", p, 2),
				renew(5, "A", 80, 90, p, 1, "A", OutcomeOK),
			},
			want: Illegal,
		},
		{
			name: "ambiguous acquire does not excuse two definite holders",
			ops: []Op{
				ambiguous(acquire(1, "X", 0, 5, "X", 0, 0)),
				acquire(2, "A", 10, 20, "A", p, 1),
				acquire(3, "B", 30, 40, "B", p, 2),
			},
			want: Illegal,
		},
		{
			name: "a definitely failed acquire changes nothing",
			ops: []Op{
				failed(acquire(1, "A", 0, 10, "A", 0, 0), "relation fault_port_leases does not exist"),
				acquire(2, "B", 20, 30, "B", p, 1),
			},
			want: Ok,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ports := tt.ports
			if ports == nil {
				ports = []int{p, q}
			}
			res, err := Check(t.Context(), NewLease(ports...), tt.ops, Options{Timeout: generous})
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if res.Verdict != tt.want {
				t.Fatalf("verdict %s, want %s (%s)", res.Verdict, tt.want, res)
			}
			if got, want := res.Green(), tt.want == Ok; got != want {
				t.Errorf("Green() = %v, want %v (%s)", got, want, res)
			}
		})
	}
}

func TestLeaseWithUnflaggedTakeovers(t *testing.T) {
	const p = 31001
	tests := []struct {
		name string
		ops  []Op
		want Verdict
	}{
		{
			name: "a takeover without the flag is legal, and fences the old holder",
			ops: []Op{
				acquire(1, "A", 0, 10, "A", p, 1),
				acquire(2, "B", 20, 30, "B", p, 2),
				renew(3, "A", 40, 50, p, 1, "A", OutcomeFenced),
			},
			want: Ok,
		},
		{
			name: "the old holder still answered ok after the takeover",
			ops: []Op{
				acquire(1, "A", 0, 10, "A", p, 1),
				acquire(2, "B", 20, 30, "B", p, 2),
				renew(3, "A", 40, 50, p, 1, "A", OutcomeOK),
			},
			want: Illegal,
		},
		{
			name: "the fence still may not go backwards",
			ops: []Op{
				acquire(1, "A", 0, 10, "A", p, 3),
				acquire(2, "B", 20, 30, "B", p, 2),
			},
			want: Illegal,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Check(t.Context(), NewLease(p).WithUnflaggedTakeovers(), tt.ops, Options{Timeout: generous})
			if err != nil || res.Verdict != tt.want {
				t.Fatalf("Check: %v, %s; want %s", err, res, tt.want)
			}
		})
	}
}

func TestLeasePartitionsByPortUnlessAnOpConcernsAll(t *testing.T) {
	const p, q = 31001, 31002
	tests := []struct {
		name string
		ops  []Op
		want int
	}{
		{
			name: "definite ops on two ports",
			ops:  []Op{acquire(1, "A", 0, 10, "A", p, 1), acquire(2, "B", 0, 10, "B", q, 1), renew(3, "A", 20, 30, p, 1, "A", OutcomeOK)},
			want: 2,
		},
		{
			name: "none-free concerns every port",
			ops:  []Op{acquire(1, "A", 0, 10, "A", p, 1), acquire(2, "B", 0, 10, "B", q, 1), noneFree(3, "C", 20, 30, "C")},
			want: 1,
		},
		{
			name: "an acquire with an unknown port concerns every port",
			ops:  []Op{acquire(1, "A", 0, 10, "A", p, 1), ambiguous(acquire(2, "B", 0, 10, "B", 0, 0))},
			want: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Check(t.Context(), NewLease(p, q), tt.ops, Options{Timeout: generous})
			if err != nil || res.Verdict != Ok {
				t.Fatalf("Check: %v, %s", err, res)
			}
			if res.Partitions != tt.want {
				t.Errorf("%d partitions, want %d", res.Partitions, tt.want)
			}
		})
	}
}

func TestLeaseStateHashMatchesEquality(t *testing.T) {
	m := NewLease(1, 2, 3)
	pm := m.Porcupine()
	ctx := t.Context()
	step := func(s any, in leaseIn, out leaseOut) any {
		ok, n := pm.StepContext(ctx, s, in, out)
		if !ok {
			t.Fatalf("step %+v → %+v refused", in, out)
		}
		return n
	}
	// Two routes to "port 2 held by A at epoch 4, others free".
	s1 := step(pm.Init(), leaseIn{kind: leaseAcquire, holder: "A"}, leaseOut{res: resOK, port: 2, epoch: 4})
	s2 := step(pm.Init(), leaseIn{kind: leaseAcquire, holder: "B"}, leaseOut{res: resOK, port: 2, epoch: 3})
	s2 = step(s2, leaseIn{kind: leaseRelease, port: 2, epoch: 3, holder: "B"}, leaseOut{res: resOK})
	s2 = step(s2, leaseIn{kind: leaseAcquire, holder: "A"}, leaseOut{res: resOK, port: 2, epoch: 4})
	if !pm.Equal(s1, s2) || pm.Hash(s1) != pm.Hash(s2) {
		t.Fatalf("equal tables differ: %s (hash %x) vs %s (hash %x)", pm.DescribeState(s1), pm.Hash(s1), pm.DescribeState(s2), pm.Hash(s2))
	}
	if got, want := pm.DescribeState(s1), "1: free@0, 2: A@4, 3: free@0"; got != want {
		t.Errorf("DescribeState = %q, want %q", got, want)
	}
	if got, want := pm.DescribeOperation(leaseIn{kind: leaseRenew, port: 2, epoch: 4, holder: "<A>"}, leaseOut{res: resFenced}), "renew(port 2, epoch 4, &lt;A&gt;) → fenced"; got != want {
		t.Errorf("DescribeOperation = %q, want %q", got, want)
	}
}

func TestLeaseRefusesWhatItCannotRead(t *testing.T) {
	tests := []struct {
		name string
		op   Op
	}{
		{"unknown type", mkOp(1, "p", 0, 1, "steal", "", LeaseRef{Holder: "A"}, OutcomeOK)},
		{"acquire without holder", mkOp(1, "p", 0, 1, TypeAcquire, "", LeaseRef{}, Acquired{Port: 1, Epoch: 1})},
		{"acquire answered ok without a port", mkOp(1, "p", 0, 1, TypeAcquire, "", LeaseRef{Holder: "A"}, OutcomeOK)},
		{"renew without port", renew(1, "p", 0, 1, 0, 1, "A", OutcomeOK)},
		{"release with a made-up outcome", release(1, "p", 0, 1, 1, 1, "A", "meh")},
		{"release without any outcome", release(1, "p", 0, 1, 1, 1, "A", "")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewLease(1).Translate(tt.op)
			if !isInvalid(err) {
				t.Fatalf("Translate: %v, want ErrInvalidHistory", err)
			}
		})
	}
}
