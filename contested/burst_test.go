package contested

import (
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestPlanIsAFunctionOfTheSeed(t *testing.T) {
	a1 := Plan(42, 100, BurstPlan{})
	a2 := Plan(42, 100, BurstPlan{})
	b := Plan(43, 100, BurstPlan{})
	if !reflect.DeepEqual(a1, a2) {
		t.Fatal("the same seed gave two different bursts")
	}
	if reflect.DeepEqual(a1, b) {
		t.Fatal("seeds 42 and 43 gave the same burst")
	}
	for _, d := range [][]Delivery{a1, b} {
		seen := map[int]int{}
		for _, x := range d {
			seen[x.Index]++
		}
		for i := range 100 {
			if seen[i] == 0 {
				t.Fatalf("message %d was never delivered", i)
			}
		}
		if dups, re := burstStats(d); dups == 0 || re == 0 {
			t.Errorf("burst has %d duplicates and %d reordered deliveries; want both", dups, re)
		}
	}
}

func TestPlanKinds(t *testing.T) {
	d := Plan(7, 50, BurstPlan{DuplicateRate: 0.5})
	first := map[int]bool{}
	maxSeen := -1
	for _, x := range d {
		switch {
		case first[x.Index] && x.Kind != Duplicate:
			t.Errorf("second delivery of %d is %s, want duplicate", x.Index, x.Kind)
		case !first[x.Index] && x.Index < maxSeen && x.Kind != Reordered:
			t.Errorf("late first delivery of %d is %s, want reordered", x.Index, x.Kind)
		case !first[x.Index] && x.Index > maxSeen && x.Kind != Original:
			t.Errorf("in-order delivery of %d is %s, want original", x.Index, x.Kind)
		}
		first[x.Index] = true
		maxSeen = max(maxSeen, x.Index)
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want Signal
	}{
		{"nil", nil, ""},
		{"reset", fmt.Errorf("read: %w", syscall.ECONNRESET), SigReset},
		{"refused", &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}, SigRefused},
		{"eof", fmt.Errorf("receive message: %w", io.ErrUnexpectedEOF), SigEOF},
		{"broken pipe", fmt.Errorf("write: %w", syscall.EPIPE), SigBrokenPipe},
		{"deadline", fmt.Errorf("query: %w", os.ErrDeadlineExceeded), SigTimeout},
		{"too many connections", &pgconn.PgError{Code: "53300", Message: "too many connections for database"}, SigTooMany},
		{"backend terminated", &pgconn.PgError{Code: "57P01"}, SigAdminStop},
		{"a unique violation is the application's own", &pgconn.PgError{Code: "23505"}, ""},
		{"an unrelated error", errors.New("syntax error at or near"), ""},
		{"text only: reset", errors.New("failed to receive message: read tcp: connection reset by peer"), SigReset},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Classify(tt.err); got != tt.want {
				t.Errorf("Classify(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

func TestRunPattern(t *testing.T) {
	for in, want := range map[string]string{
		"TestA":       "^TestA$",
		"TestA/reset": "^TestA$/^reset$",
		"TestA/x.y":   `^TestA$/^x\.y$`,
	} {
		if got := RunPattern(in); got != want {
			t.Errorf("RunPattern(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReplayCommand(t *testing.T) {
	got := ReplayCommand(42, "./store", "TestStoreContract/reset.1")
	want := `CONTESTED_SEED=42 go test ./store -run '^TestStoreContract$/^reset\.1$' -count=1`
	if got != want {
		t.Errorf("ReplayCommand = %s, want %s", got, want)
	}
}
