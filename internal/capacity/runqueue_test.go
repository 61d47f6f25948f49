package capacity

import (
	"testing"
	"time"
)

// TestBetweenAveragesTheCountsOfAWindow: the counts inside the window
// are averaged; a window between two counts takes the nearest; a queue
// that counted nothing says so.
func TestBetweenAveragesTheCountsOfAWindow(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	q := &RunQueue{}
	for i, n := range []float64{1, 2, 9, 11, 3} {
		q.kept = append(q.kept, stamped{t0.Add(time.Duration(i) * Every), n})
	}
	tests := []struct {
		name     string
		from, to time.Time
		mean     float64
		n        int
	}{
		{"the whole run", t0, t0.Add(4 * Every), 26.0 / 5, 5},
		{"the middle two", t0.Add(2 * Every), t0.Add(3 * Every), 10, 2},
		{"between two counts", t0.Add(Every + Every/10), t0.Add(Every + Every/5), 2, 1},
		{"after the last", t0.Add(time.Hour), t0.Add(2 * time.Hour), 3, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mean, n := q.Between(tt.from, tt.to)
			if mean != tt.mean || n != tt.n {
				t.Errorf("Between: %v over %d counts, want %v over %d", mean, n, tt.mean, tt.n)
			}
		})
	}
	if mean, n := (&RunQueue{}).Between(t0, t0.Add(time.Second)); mean != 0 || n != 0 {
		t.Errorf("an empty queue: %v over %d counts, want 0 over 0", mean, n)
	}
}
