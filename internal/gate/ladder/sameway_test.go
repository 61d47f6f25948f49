package ladder

import "testing"

// TestAFailureIsTheSameWhateverItsFigures: the same oracle violated, or
// the same failure with other counts and times, is the same way to fail;
// another oracle, another message, or nothing to compare is not.
func TestAFailureIsTheSameWhateverItsFigures(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		same bool
	}{
		{"the same oracle with other details", "oracle exactly-once: VIOLATED: job 7 ran twice", "oracle exactly-once: VIOLATED: job 12 ran twice", true},
		{"another oracle", "oracle exactly-once: VIOLATED: job 7 ran twice", "oracle ordering: VIOLATED: 3 before 2", false},
		{"an oracle against a plain failure", "oracle exactly-once: VIOLATED: x", "stock_test.go:42: exactly-once violated: stock is 33", false},
		{"the same line with other figures", "stock_test.go:42: stock is 33 after 30 deliveries (1.5s)", "stock_test.go:42: stock is 31 after 30 deliveries (0.9s)", true},
		{"only the first line counts", "a.go:1: lost 3 jobs\nlog line 17", "a.go:1: lost 4 jobs\nanother log line", true},
		{"another message", "a.go:1: lost 3 jobs", "a.go:9: connection refused", false},
		{"nothing from the battery", "", "a.go:1: lost 3 jobs", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sameWay(tt.a, tt.b); got != tt.same {
				t.Errorf("sameWay(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.same)
			}
		})
	}
}
