package history

import (
	"strings"
	"testing"
	"time"
)

// ms is n milliseconds on the recorder's clock.
func ms(n int64) int64 { return n * int64(time.Millisecond) }

func lockAcq(id int64, proc string, inv, comp int64, lock string, token int64) Op {
	return mkOp(id, proc, ms(inv), ms(comp), TypeAcquire, lock, LockRef{Holder: proc}, Granted{Token: token})
}

func lockBusy(id int64, proc string, inv, comp int64, lock string) Op {
	return mkOp(id, proc, ms(inv), ms(comp), TypeAcquire, lock, LockRef{Holder: proc}, OutcomeBusy)
}

func lockOp(typ string, id int64, proc string, inv, comp int64, lock string, token int64, outcome string) Op {
	return mkOp(id, proc, ms(inv), ms(comp), typ, lock, LockRef{Holder: proc, Token: token}, outcome)
}

// checkModel checks ops against m and fails the test on an error.
func checkModel(t *testing.T, m Model, ops []Op) Result {
	t.Helper()
	res, err := Check(t.Context(), m, ops, Options{Timeout: generous, Expected: len(ops)})
	if err != nil {
		t.Fatalf("Check: %v (%s)", err, res)
	}
	return res
}

// wantVerdict holds a result to a verdict and, when Illegal, to an anomaly of property whose
// text holds every one of texts.
func wantVerdict(t *testing.T, res Result, want Verdict, property string, texts ...string) {
	t.Helper()
	if res.Verdict != want {
		t.Fatalf("verdict %s, want %s: %s", res.Verdict, want, res)
	}
	if want == Ok && !res.Green() {
		t.Fatalf("Ok but not green: %s", res)
	}
	if want != Illegal {
		if len(res.Anomalies) > 0 {
			t.Fatalf("anomalies on a %s verdict: %v", want, res.Anomalies)
		}
		return
	}
	for _, a := range res.Anomalies {
		if a.Property != property {
			continue
		}
		missing := false
		for _, s := range texts {
			missing = missing || !strings.Contains(a.Text, s)
		}
		if !missing {
			if len(a.Ops) == 0 {
				t.Errorf("anomaly names no ops: %s", a.Text)
			}
			return
		}
	}
	t.Fatalf("no anomaly of %q saying %q among %v", property, texts, res.Anomalies)
}

func TestLockVerdicts(t *testing.T) {
	fenced := LockSpec{TTL: 100 * time.Millisecond, Fencing: true}
	tests := []struct {
		name     string
		spec     LockSpec
		ops      []Op
		want     Verdict
		property string
		texts    []string
	}{
		{
			name: "acquire, act, renew, release, then another holder with a greater token",
			spec: fenced,
			ops: []Op{
				lockAcq(1, "A", 0, 5, "L", 1),
				lockOp(TypeAct, 2, "A", 10, 12, "L", 1, OutcomeOK),
				lockOp(TypeRenew, 3, "A", 20, 22, "L", 1, OutcomeOK),
				lockOp(TypeRelease, 4, "A", 30, 32, "L", 1, OutcomeOK),
				lockAcq(5, "B", 40, 45, "L", 2),
				lockOp(TypeAct, 6, "B", 50, 52, "L", 2, OutcomeOK),
			},
			want: Ok,
		},
		{
			name: "an expired lease taken over: busy before the TTL, granted after, the old holder fenced",
			spec: fenced,
			ops: []Op{
				lockAcq(1, "A", 0, 5, "L", 1),
				lockBusy(2, "B", 50, 55, "L"),
				lockAcq(3, "B", 120, 125, "L", 2),
				lockOp(TypeAct, 4, "A", 130, 132, "L", 1, OutcomeFenced),
				lockOp(TypeAct, 5, "B", 135, 137, "L", 2, OutcomeOK),
			},
			want: Ok,
		},
		{
			name: "an act that overlaps the next grant may have come first",
			spec: fenced,
			ops: []Op{
				lockAcq(1, "A", 0, 5, "L", 1),
				lockOp(TypeAct, 2, "A", 100, 130, "L", 1, OutcomeOK),
				lockAcq(3, "B", 110, 120, "L", 2),
			},
			want: Ok,
		},
		{
			name: "an acquire whose answer was lost may hold the lock: busy is legal",
			spec: fenced,
			ops: []Op{
				ambiguous(lockAcq(1, "A", 0, 5, "L", 1)),
				lockBusy(2, "B", 10, 12, "L"),
				lockAcq(3, "B", 200, 205, "L", 5),
			},
			want: Ok,
		},
		{
			name: "two holders: a grant inside another lease's time to live",
			spec: fenced,
			ops: []Op{
				lockAcq(1, "A", 0, 5, "L", 7),
				lockAcq(2, "B", 50, 55, "L", 8),
			},
			want: Illegal, property: "one holder at a time",
			texts: []string{"two holders: B acquired lock L at 55.0 ms (token 8) while A held it since 5.0 ms (token 7; its lease was good until at least 98.0 ms)"},
		},
		{
			name: "two holders: a renewal keeps the lease certain",
			spec: fenced,
			ops: []Op{
				lockAcq(1, "A", 0, 5, "L", 7),
				lockOp(TypeRenew, 2, "A", 80, 85, "L", 7, OutcomeOK),
				lockAcq(3, "B", 150, 155, "L", 8),
			},
			want: Illegal, property: "one holder at a time", texts: []string{"B acquired lock L at 155.0 ms", "good until at least 178.0 ms"},
		},
		{
			name: "two holders of a lock that never expires",
			spec: LockSpec{Fencing: true},
			ops: []Op{
				lockAcq(1, "A", 0, 5, "L", 1),
				lockAcq(2, "B", 5000, 5005, "L", 2),
			},
			want: Illegal, property: "one holder at a time", texts: []string{"and had not released it"},
		},
		{
			name: "the fencing token went backwards",
			spec: fenced,
			ops: []Op{
				lockAcq(1, "A", 0, 5, "L", 5),
				lockOp(TypeRelease, 2, "A", 10, 12, "L", 5, OutcomeOK),
				lockAcq(3, "B", 20, 25, "L", 3),
			},
			want: Illegal, property: "fencing tokens increase", texts: []string{"fencing token went backwards: B acquired lock L with token 3 at 25.0 ms, after A had acquired it with token 5 at 5.0 ms"},
		},
		{
			name: "one token granted twice",
			spec: fenced,
			ops: []Op{
				lockAcq(1, "A", 0, 50, "L", 4),
				lockAcq(2, "B", 10, 40, "L", 4),
			},
			want: Illegal, property: "fencing tokens increase", texts: []string{"one token granted twice"},
		},
		{
			name: "acted after another holder acquired",
			spec: fenced,
			ops: []Op{
				lockAcq(1, "A", 0, 5, "L", 7),
				lockAcq(2, "B", 150, 155, "L", 8),
				lockOp(TypeAct, 3, "A", 200, 202, "L", 7, OutcomeOK),
			},
			want: Illegal, property: "a lost lease is noticed before acting",
			texts: []string{"acted after loss: A acted on lock L under token 7 at 200.0 ms, after B had acquired it (token 8) at 155.0 ms"},
		},
		{
			name: "acted after being told the lease was lost",
			spec: fenced,
			ops: []Op{
				lockAcq(1, "A", 0, 5, "L", 7),
				lockOp(TypeRenew, 2, "A", 120, 122, "L", 7, OutcomeFenced),
				lockOp(TypeAct, 3, "A", 130, 132, "L", 7, OutcomeOK),
			},
			want: Illegal, property: "a lost lease is noticed before acting", texts: []string{"after it had been told at 122.0 ms that the lease was lost (renew answered fenced)"},
		},
		{
			name: "acted after releasing",
			spec: fenced,
			ops: []Op{
				lockAcq(1, "A", 0, 5, "L", 7),
				lockOp(TypeRelease, 2, "A", 10, 12, "L", 7, OutcomeOK),
				lockOp(TypeAct, 3, "A", 20, 22, "L", 7, OutcomeOK),
			},
			want: Illegal, property: "a lost lease is noticed before acting", texts: []string{"after it had released it at 12.0 ms"},
		},
		{
			name: "acted past the lease's last possible expiry, every renewal recorded",
			spec: LockSpec{TTL: 100 * time.Millisecond, Fencing: true, RecordsRenewals: true},
			ops: []Op{
				lockAcq(1, "A", 0, 5, "L", 7),
				lockOp(TypeRenew, 2, "A", 50, 55, "L", 7, OutcomeOK),
				lockOp(TypeAct, 3, "A", 300, 302, "L", 7, OutcomeOK),
			},
			want: Illegal, property: "a lost lease is noticed before acting", texts: []string{"after its lease had run out by 155.0 ms at the latest"},
		},
		{
			name: "the same act is legal when renewals are hidden from the history",
			spec: fenced,
			ops: []Op{
				lockAcq(1, "A", 0, 5, "L", 7),
				lockOp(TypeAct, 3, "A", 300, 302, "L", 7, OutcomeOK),
			},
			want: Ok,
		},
		{
			name: "a renewal whose answer was lost may have extended the lease",
			spec: LockSpec{TTL: 100 * time.Millisecond, Fencing: true, RecordsRenewals: true},
			ops: []Op{
				lockAcq(1, "A", 0, 5, "L", 7),
				ambiguous(lockOp(TypeRenew, 2, "A", 50, 90, "L", 7, OutcomeOK)),
				lockOp(TypeAct, 3, "A", 180, 182, "L", 7, OutcomeOK),
			},
			want: Ok,
		},
		{
			name: "an abandoned lock refused past its TTL and the bound",
			spec: LockSpec{TTL: 100 * time.Millisecond, Fencing: true, Reacquire: 200 * time.Millisecond},
			ops: []Op{
				lockAcq(1, "A", 0, 5, "L", 7),
				lockOp(TypeAct, 2, "A", 10, 12, "L", 7, OutcomeOK),
				lockBusy(3, "B", 150, 155, "L"),
				lockBusy(4, "B", 500, 505, "L"),
			},
			want: Illegal, property: "an abandoned lock is acquirable again",
			texts: []string{"abandoned lock not acquirable: B was told lock L is busy at 500.0 ms, 488.0 ms after the last sign of life of any holder (A, act op 2, at 12.0 ms)"},
		},
		{
			name: "busy while the lock was free",
			spec: fenced,
			ops: []Op{
				lockAcq(1, "A", 0, 5, "L", 1),
				lockOp(TypeRelease, 2, "A", 10, 12, "L", 1, OutcomeOK),
				lockBusy(3, "B", 20, 22, "L"),
			},
			want: Illegal, property: "linearizable", texts: []string{"not linearizable", "cannot place op 3", "free (last token 1)"},
		},
		{
			name: "a renew answered ok after the service said fenced",
			spec: fenced,
			ops: []Op{
				lockAcq(1, "A", 0, 5, "L", 1),
				lockOp(TypeRenew, 2, "A", 10, 12, "L", 1, OutcomeFenced),
				lockOp(TypeRenew, 3, "A", 20, 22, "L", 1, OutcomeOK),
			},
			want: Illegal, property: "a lost lease is noticed before acting", texts: []string{"A renewed lock L under token 1 at 20.0 ms, after it had been told"},
		},
		{
			name: "a lock without tokens: the holder acts after another took it",
			spec: LockSpec{TTL: 100 * time.Millisecond},
			ops: []Op{
				mkOp(1, "A", ms(0), ms(5), TypeAcquire, "L", LockRef{Holder: "A"}, OutcomeOK),
				mkOp(2, "B", ms(150), ms(155), TypeAcquire, "L", LockRef{Holder: "B"}, OutcomeOK),
				mkOp(3, "A", ms(200), ms(202), TypeAct, "L", LockRef{Holder: "A"}, OutcomeOK),
			},
			want: Illegal, property: "a lost lease is noticed before acting", texts: []string{"A acted on lock L under no token at 200.0 ms, after B had acquired it (no token)"},
		},
		{
			name: "locks are independent",
			spec: fenced,
			ops: []Op{
				lockAcq(1, "A", 0, 5, "L", 1),
				lockAcq(2, "B", 1, 6, "M", 1),
				lockOp(TypeAct, 3, "A", 10, 12, "L", 1, OutcomeOK),
				lockOp(TypeAct, 4, "B", 10, 12, "M", 1, OutcomeOK),
			},
			want: Ok,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := checkModel(t, NewLock(tt.spec), tt.ops)
			wantVerdict(t, res, tt.want, tt.property, tt.texts...)
		})
	}
}

func TestLockRefusesWhatItCannotRead(t *testing.T) {
	tests := []struct {
		name string
		op   Op
	}{
		{"no lock name", mkOp(1, "A", 0, 1, TypeAcquire, "", LockRef{Holder: "A"}, Granted{Token: 1})},
		{"no holder", mkOp(1, "A", 0, 1, TypeAcquire, "L", LockRef{}, Granted{Token: 1})},
		{"a token that is not positive", mkOp(1, "A", 0, 1, TypeAcquire, "L", LockRef{Holder: "A"}, Granted{Token: 0})},
		{"an act answered with a word it does not know", mkOp(1, "A", 0, 1, TypeAct, "L", LockRef{Holder: "A", Token: 1}, "maybe")},
		{"a type it does not know", mkOp(1, "A", 0, 1, TypeTransfer, "L", LockRef{Holder: "A"}, OutcomeOK)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Check(t.Context(), NewLock(LockSpec{Fencing: true}), []Op{tt.op}, Options{}); !isInvalid(err) {
				t.Fatalf("Check: %v, want ErrInvalidHistory", err)
			}
		})
	}
}

// TestAnomaliesAreDrawn: the visualization of an illegal lock history carries the anomaly
// on a row of its own, with its text.
func TestAnomaliesAreDrawn(t *testing.T) {
	ops := []Op{lockAcq(1, "A", 0, 5, "L", 7), lockAcq(2, "B", 50, 55, "L", 8)}
	res, err := Check(t.Context(), NewLock(LockSpec{TTL: 100 * time.Millisecond, Fencing: true}), ops, Options{VisualizeDir: t.TempDir(), Name: "two-holders"})
	if err != nil || res.Verdict != Illegal {
		t.Fatalf("Check: %v, %s", err, res)
	}
	b := readFile(t, res.Visualization)
	for _, want := range []string{`"Tag":"anomaly: one holder at a time"`, "two holders: B acquired lock L"} {
		if !strings.Contains(b, want) {
			t.Errorf("visualization lacks %q", want)
		}
	}
	if !strings.Contains(res.String(), "two holders") {
		t.Errorf("the one-line evidence does not name the anomaly: %s", res)
	}
}
