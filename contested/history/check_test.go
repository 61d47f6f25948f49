package history

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

func isInvalid(err error) bool { return errors.Is(err, ErrInvalidHistory) }

// hardHistory is illegal, but proving it takes porcupine time exponential in n: n writes of
// distinct values all overlap, and a read after them returns a value none of them wrote, so
// every order of every subset of the writes must be ruled out.
func hardHistory(n int) []Op {
	ops := make([]Op, 0, n+1)
	for i := range n {
		ops = append(ops, write(int64(i+1), "w"+string(rune('a'+i%26))+string(rune('a'+i/26)), 0, 1000, "x", int64(i+1)))
	}
	return append(ops, read(int64(n+1), "reader", 2000, 2001, "x", -1))
}

func TestUnknownIsNeverGreen(t *testing.T) {
	dir := t.TempDir()
	res, err := Check(t.Context(), NewAccounts(nil), hardHistory(40), Options{
		Timeout: 50 * time.Millisecond, VisualizeDir: dir, Name: "TestUnknownIsNeverGreen/hard",
	})
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if res.Verdict != Unknown {
		t.Fatalf("verdict %s, want Unknown (%s)", res.Verdict, res)
	}
	if res.Green() {
		t.Fatalf("an Unknown result is green: %s", res)
	}
	if want := filepath.Join(dir, "TestUnknownIsNeverGreen_hard.html"); res.Visualization != want {
		t.Fatalf("visualization %q, want %q", res.Visualization, want)
	}
	if _, err := os.Stat(res.Visualization); err != nil {
		t.Fatal(err)
	}
}

func TestCancelledCheckIsUnknown(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	res, err := Check(ctx, NewAccounts(nil), hardHistory(40), Options{Timeout: generous})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Check: %v, want context.Canceled", err)
	}
	if res.Verdict != Unknown || res.Green() {
		t.Fatalf("cancelled check: %s", res)
	}
}

func TestContextDeadlineBoundsTheCheck(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	res, _ := Check(ctx, NewAccounts(nil), hardHistory(40), Options{Timeout: time.Hour})
	if res.Verdict != Unknown || res.Green() {
		t.Fatalf("check past the context deadline: %s", res)
	}
}

func TestCountsCatchTruncation(t *testing.T) {
	ops := []Op{write(1, "p1", 0, 10, "a", 1), read(2, "p1", 20, 30, "a", 1)}

	t.Run("history shorter than the workload", func(t *testing.T) {
		res, err := Check(t.Context(), NewAccounts(nil), ops, Options{Expected: 3})
		if !errors.Is(err, ErrTruncated) || res.Green() {
			t.Fatalf("Check: %v, %s; want ErrTruncated and not green", err, res)
		}
	})
	t.Run("a partition function that loses ops", func(t *testing.T) {
		res, err := Check(t.Context(), lossyModel{NewAccounts(nil)}, ops, Options{})
		if !errors.Is(err, ErrTruncated) || res.Verdict != Unknown || res.Green() {
			t.Fatalf("Check: %v, %s; want ErrTruncated, Unknown", err, res)
		}
	})
	t.Run("empty history is Ok but not green", func(t *testing.T) {
		res, err := Check(t.Context(), NewAccounts(nil), nil, Options{})
		if err != nil || res.Verdict != Ok || res.Green() {
			t.Fatalf("Check: %v, %s; want Ok and not green", err, res)
		}
		if !strings.Contains(res.String(), "NOT green") {
			t.Errorf("String() does not say so: %s", res)
		}
	})
	t.Run("unanswered reads are checked and counted, never left out", func(t *testing.T) {
		h := append(ops, failed(read(3, "p2", 0, 5, "a", 0), "reset"), ambiguous(read(4, "p3", 0, 5, "a", 0)))
		res, err := Check(t.Context(), NewAccounts(nil), h, Options{Expected: 4})
		if err != nil || !res.Green() {
			t.Fatalf("Check: %v, %s", err, res)
		}
		if res.OpsProduced != 4 || res.OpsChecked != 4 || res.Unanswered != 2 {
			t.Errorf("counts: %s", res)
		}
	})
}

// lossyModel is Accounts with a partition function that forgets the last op.
type lossyModel struct{ *Accounts }

func (l lossyModel) Porcupine() porcupine.Model {
	pm := l.Accounts.Porcupine()
	pm.Partition = func(h []porcupine.Operation) [][]porcupine.Operation { return [][]porcupine.Operation{h[:len(h)-1]} }
	return pm
}

func TestInvalidHistoriesAreRefused(t *testing.T) {
	tests := []struct {
		name string
		ops  []Op
	}{
		{"duplicate op id", []Op{write(1, "p1", 0, 10, "a", 1), read(1, "p2", 0, 10, "a", 1)}},
		{"complete before invoke", []Op{write(1, "p1", 10, 5, "a", 1)}},
		{"no complete but not marked timeout", []Op{{ID: 1, Process: "p", Type: TypeWrite, Key: "a", Input: raw(1)}}},
		{"timeout with an output", []Op{func() Op { o := write(1, "p1", 0, 10, "a", 1); o.Timeout = true; return o }()}},
		{"a process with two ops in flight", []Op{write(1, "p1", 0, 10, "a", 1), write(2, "p1", 5, 15, "a", 2)}},
		{"no type", []Op{{ID: 1, Process: "p", Complete: At(1)}}},
		{"an op the model does not know", []Op{mkOp(1, "p", 0, 1, TypeAcquire, "", LeaseRef{Holder: "A"}, Acquired{Port: 1, Epoch: 1})}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Check(t.Context(), NewAccounts(nil), tt.ops, Options{})
			if !isInvalid(err) {
				t.Fatalf("Check: %v, want ErrInvalidHistory", err)
			}
			if res.Verdict != Unknown || res.Green() {
				t.Errorf("refused history: %s", res)
			}
		})
	}
}

func TestSequentialProcessMayReuseTheCompleteInstant(t *testing.T) {
	// [0,10] then [10,20]: porcupine's intervals are closed, so these are concurrent for the
	// checker, but for the process the second began as the first ended.
	ops := []Op{write(1, "p1", 0, 10, "a", 1), write(2, "p1", 10, 20, "a", 2), read(3, "p1", 20, 30, "a", 2)}
	if err := Validate(ops); err != nil {
		t.Fatal(err)
	}
}

func TestAmbiguousOpMovesItsProcessToANewClient(t *testing.T) {
	ops := []Op{
		write(1, "p1", 0, 10, "a", 1),
		ambiguous(write(2, "p1", 20, 30, "a", 2)),
		read(3, "p1", 40, 50, "a", 2),
		read(4, "p2", 60, 70, "a", 2),
	}
	res, err := Check(t.Context(), NewAccounts(nil), ops, Options{})
	if err != nil || !res.Green() {
		t.Fatalf("Check: %v, %s", err, res)
	}
	want := []string{"p1", "p1 (after op 2)", "p2"}
	if strings.Join(res.Clients, "|") != strings.Join(want, "|") {
		t.Errorf("clients %q, want %q", res.Clients, want)
	}
	if res.Ambiguous != 1 {
		t.Errorf("ambiguous %d, want 1", res.Ambiguous)
	}
}

func TestVisualization(t *testing.T) {
	illegal := []Op{
		write(1, "p1", 0, 10, "<acct>", 10),
		read(2, "p2", 20, 30, "<acct>", 0),
	}
	legal := illegal[:1]
	faults := []FaultWindow{
		{Epoch: "reset#1", Name: "reset", Start: 5, End: At(25)},
		{Epoch: "burst#2", Name: "burst", Start: 15}, // still open
	}
	tests := []struct {
		name   string
		ops    []Op
		always bool
		want   Verdict
		file   bool
	}{
		{"illegal writes the visualization", illegal, false, Illegal, true},
		{"ok writes nothing by default", legal, false, Ok, false},
		{"ok writes it when asked", legal, true, Ok, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "viz")
			res, err := Check(t.Context(), NewAccounts(nil), tt.ops, Options{
				VisualizeDir: dir, Name: "Test/" + tt.name, VisualizeAlways: tt.always, Faults: faults,
			})
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if res.Verdict != tt.want {
				t.Fatalf("verdict %s, want %s", res.Verdict, tt.want)
			}
			if !tt.file {
				if res.Visualization != "" {
					t.Fatalf("visualization written: %s", res.Visualization)
				}
				return
			}
			b, err := os.ReadFile(res.Visualization)
			if err != nil {
				t.Fatal(err)
			}
			html := string(b)
			for _, want := range []string{`"Tag":"fault:reset"`, `"Tag":"fault:burst"`, "reset#1", `\u0026lt;acct\u0026gt;`} {
				if !strings.Contains(html, want) {
					t.Errorf("visualization lacks %q", want)
				}
			}
			if strings.Contains(html, "write(<acct>") {
				t.Errorf("visualization holds an unescaped description")
			}
			if left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp")); len(left) > 0 {
				t.Errorf("temporary files left: %v", left)
			}
		})
	}
}

func TestVisualizationWriteFailureKeepsTheVerdict(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ops := []Op{write(1, "p1", 0, 10, "a", 10), read(2, "p2", 20, 30, "a", 0)}
	res, err := Check(t.Context(), NewAccounts(nil), ops, Options{VisualizeDir: filepath.Join(blocker, "sub")})
	if err == nil || res.Verdict != Illegal || res.Visualization != "" {
		t.Fatalf("Check: %v, %s; want an error and the Illegal verdict", err, res)
	}
}

func TestFileName(t *testing.T) {
	tests := []struct{ name, model, want string }{
		{"TestStoreContract/reset", "accounts", "TestStoreContract_reset.html"},
		{"", "lease", "lease.html"},
		{"../..", "lease", "_._.html"},
		{"..", "lease", "_.html"},
		{"a b:c", "x", "a_b_c.html"},
	}
	for _, tt := range tests {
		t.Run(tt.name+"→"+tt.want, func(t *testing.T) {
			if got := fileName(tt.name, tt.model); got != tt.want {
				t.Errorf("fileName(%q) = %q, want %q", tt.name, got, tt.want)
			}
		})
	}
}
