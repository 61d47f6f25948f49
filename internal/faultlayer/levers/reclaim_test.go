package levers

import (
	"context"
	"os/exec"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/contested/contested/internal/faultlayer/faulttest"
	"github.com/contested/contested/internal/reap"
)

// TestVictimsOfAGoneProcessAreReclaimed: ReclaimVictims drops the victim
// databases and roles whose owner process is provably gone, and leaves
// those of a live process, of one it cannot see (another PID namespace)
// and of one no owner was recorded for.
func TestVictimsOfAGoneProcessAreReclaimed(t *testing.T) {
	l := faulttest.Layer(t)
	ctx := context.Background()
	a, err := NewPgFaultArmer(ctx, l.DB(), nil)
	if err != nil {
		t.Fatal(err)
	}
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	gone := reap.Self()
	gone.PID, gone.Start = exited.Process.Pid, 1
	elsewhere := reap.Self()
	elsewhere.PIDNS++
	tests := []struct {
		name    string
		owner   *string // nil: no owner recorded
		dropped bool
	}{
		{"its process is gone", ptr(gone.String()), true},
		{"its process runs", ptr(reap.Self().String()), false},
		{"its process runs in another PID namespace", ptr(elsewhere.String()), false},
		{"no owner was recorded", nil, false},
	}
	victims := make([]*Victim, len(tests))
	table := pgx.Identifier{harnessTable}.Sanitize()
	for i, tt := range tests {
		v, err := a.CreateVictim(ctx, t.Name())
		if err != nil {
			t.Fatal(err)
		}
		victims[i] = v
		t.Cleanup(func() { a.DropVictim(context.Background(), v) })
		if _, err := l.DB().Exec(ctx, `UPDATE `+table+` SET owner = $1 WHERE name = $2`, tt.owner, v.Database()); err != nil {
			t.Fatal(err)
		}
	}
	dropped, err := ReclaimVictims(ctx, l.DB(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, tt := range tests {
		v := victims[i]
		if got := slices.Contains(dropped, v.Database()); got != tt.dropped {
			t.Errorf("%s: dropped %v, want %v (dropped %v)", tt.name, got, tt.dropped, dropped)
		}
		var role bool
		if err := l.DB().QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)`, v.Role()).Scan(&role); err != nil {
			t.Fatal(err)
		}
		if databaseExists(t, l.DB(), v.Database()) == tt.dropped || role == tt.dropped {
			t.Errorf("%s: database there %v, role there %v; want both %v", tt.name, databaseExists(t, l.DB(), v.Database()), role, !tt.dropped)
		}
	}
}

func ptr(s string) *string { return &s }
