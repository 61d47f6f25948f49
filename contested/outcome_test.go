package contested

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/contested/contested/contested/history"
)

// errLibrary is a library's own error type, which hides what caused it:
// the chain says nothing of whether the op took effect.
type errLibrary struct{ msg string }

func (e *errLibrary) Error() string { return e.msg }

// TestAMarkDecidesTheOutcomeWhateverTheChainSays: an error marked
// Ambiguous is an unknown outcome even when its chain holds a Postgres
// error (definite on its own), one marked NoEffect is definite even when
// it holds a reset (ambiguous on its own), the outermost mark decides, an
// unmarked error is read from its chain as before, and the mark hides
// nothing from errors.Is, errors.As and the observer.
func TestAMarkDecidesTheOutcomeWhateverTheChainSays(t *testing.T) {
	pgErr := &pgconn.PgError{Code: "23505", Message: "duplicate key"}
	reset := fmt.Errorf("read: %w", syscall.ECONNRESET)
	for _, tc := range []struct {
		name     string
		err      error
		definite bool
	}{
		{"a Postgres error", pgErr, true},
		{"a reset", reset, false},
		{"a library's own error", &errLibrary{"workflow step failed"}, false},
		{"a Postgres error marked ambiguous", Ambiguous(pgErr), false},
		{"a reset marked as no effect", NoEffect(reset), true},
		{"a library's error marked as no effect", NoEffect(&errLibrary{"rolled back"}), true},
		{"a mark wrapped in a message", fmt.Errorf("enqueue: %w", Ambiguous(pgErr)), false},
		{"the outermost mark", NoEffect(Ambiguous(reset)), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Definite(tc.err); got != tc.definite {
				t.Errorf("Definite(%v) = %v, want %v", tc.err, got, tc.definite)
			}
		})
	}
	marked := Ambiguous(reset)
	if !errors.Is(marked, syscall.ECONNRESET) || Classify(marked) != SigReset || marked.Error() != reset.Error() {
		t.Errorf("the mark hides the chain: Is %v, Classify %q, %q", errors.Is(marked, syscall.ECONNRESET), Classify(marked), marked.Error())
	}
	var pe *pgconn.PgError
	if !errors.As(NoEffect(pgErr), &pe) || pe.Code != "23505" {
		t.Errorf("errors.As does not see the Postgres error through the mark")
	}
	if Ambiguous(nil) != nil || NoEffect(nil) != nil {
		t.Errorf("a mark of nil is not nil")
	}
}

// TestModelsTreatAMarkedOutcomeAsItSays: a write whose error is marked
// Ambiguous may have happened, so a later read of its value is legal; the
// same write marked NoEffect certainly did not, so that read is a
// violation, which the KV model finds. Unmarked, a library's own error
// says nothing of the op, so it is ambiguous.
func TestModelsTreatAMarkedOutcomeAsItSays(t *testing.T) {
	ctx := context.Background()
	kv, err := history.NewKV(nil)
	if err != nil {
		t.Fatal(err)
	}
	lost := &errLibrary{"commit: connection lost"}
	for _, tc := range []struct {
		name string
		err  error
		want history.Verdict
	}{
		{"marked ambiguous, the write may have happened", Ambiguous(lost), history.Ok},
		{"unmarked, the chain cannot tell, so it is ambiguous", lost, history.Ok},
		{"marked as no effect, the read saw what never happened", NoEffect(lost), history.Illegal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := history.NewRecorder(time.Time{})
			w, _ := rec.Invoke("client-0", history.TypeWrite, "x", 1)
			if err := record(rec, w, nil, tc.err); err != nil {
				t.Fatal(err)
			}
			r, _ := rec.Invoke("client-1", history.TypeRead, "x", nil)
			if err := record(rec, r, 1, nil); err != nil {
				t.Fatal(err)
			}
			res, err := history.Check(ctx, kv, rec.Ops(), history.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict != tc.want {
				t.Errorf("verdict %s, want %s: %s", res.Verdict, tc.want, res)
			}
		})
	}
}
