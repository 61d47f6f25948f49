package levers

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestMassRestart: every replica of a working cluster is killed at once
// (each exit status read back) and, healed, all work again: with work
// still to come it fired; with none to come the kill did not land
// mid-stream and it did not fire.
func TestMassRestart(t *testing.T) {
	c := newTestCluster(t, 3)
	tests := []struct {
		name    string
		pending int
		want    error
	}{
		{"mid-stream", 100, nil},
		{"nothing still to come", 0, ErrUnseen},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := range c.names {
				c.waitAcking(t, i, time.Now().Add(-time.Second))
			}
			f := arm(t, MassRestart, Target{Cluster: c, Pending: tt.pending})
			in, what := f.Injector()
			if !in || strings.Count(what, "SIGKILL: ") != 3 {
				t.Fatalf("injector: %v %q", in, what)
			}
			for i, w := range c.workers {
				if w.Running() {
					t.Fatalf("%s still runs after the mass kill", c.names[i])
				}
			}
			time.Sleep(300 * time.Millisecond)
			victim, err := judge(t, MassRestart, c, f)
			if !errors.Is(err, tt.want) || (err == nil) != (tt.want == nil) {
				t.Fatalf("Fired = %v, want %v (%s)", err, tt.want, victim)
			}
		})
	}
}

// ackedCluster answers Acked with a fixed count: the victim side of a kill
// as the rule reads it.
type ackedCluster struct {
	Cluster
	acked int
}

func (c ackedCluster) Names() []string                                      { return []string{"replica-1"} }
func (c ackedCluster) Acked(context.Context, int, time.Time, time.Time) int { return c.acked }

// TestAKillDuringRecoveryNeedsNoBusyVictim: a kill must land on a working
// victim, one that acknowledged work in the second before, except in a
// schedule's recovery window, whose victim was restarted just now; either
// way the victim must take work again after its restart.
func TestAKillDuringRecoveryNeedsNoBusyVictim(t *testing.T) {
	tests := []struct {
		name        string
		busy, after int
		kind        Kind
		want        bool
	}{
		{"idle victim", 0, 5, Base, false},
		{"busy victim", 3, 5, Base, true},
		{"idle victim while recovering", 0, 5, Recovery, true},
		{"recovering victim that never resumed", 0, 0, Recovery, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &killFault{c: ackedCluster{acked: tt.after}, victims: []int{0}, pending: 10, busy: map[int]int{0: tt.busy},
				healing: time.Now(), recovering: tt.kind == Recovery}
			if got, what := f.Victim(context.Background()); got != tt.want {
				t.Errorf("landed %v, want %v (%s)", got, tt.want, what)
			}
		})
	}
}
