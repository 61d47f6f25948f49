package levers

import (
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
