package command

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestClusterTestsReadsOnlyItsOwnLegs: a legs.json left by an earlier run
// is never taken for this run's, so a rig that did not get as far as its
// replicas cannot pass for green.
func TestClusterTestsReadsOnlyItsOwnLegs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "legs.json")
	if err := os.WriteFile(path, []byte(`{"service": "ledger", "green": true, "legs": [{"name": "kill-one", "fired": true}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	written := time.Now()
	tests := []struct {
		name  string
		start time.Time
		fresh bool
	}{
		{"written by this run", written.Add(-time.Minute), true},
		{"left by an earlier run", written.Add(time.Minute), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, fresh := readLegs(path, tt.start)
			if fresh != tt.fresh || fresh && (rep.Service != "ledger" || !rep.Green || len(rep.Legs) != 1) {
				t.Fatalf("readLegs = %+v, %v; want fresh %v", rep, fresh, tt.fresh)
			}
		})
	}
	if _, fresh := readLegs(filepath.Join(t.TempDir(), "none.json"), time.Time{}); fresh {
		t.Error("a missing legs.json reads as fresh")
	}
}
