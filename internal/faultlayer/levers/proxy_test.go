package levers

import "testing"

// TestAToxicIsDescribedAlikeEveryTime: the injector's evidence names a
// toxic's attributes in one order, so two runs of one seed say the same.
func TestAToxicIsDescribedAlikeEveryTime(t *testing.T) {
	tests := []struct {
		name  string
		attrs map[string]any
		want  string
	}{
		{"none", nil, ""},
		{"a zero timeout is left out", map[string]any{"timeout": 0}, ""},
		{"sorted by name", map[string]any{"latency": 287, "jitter": 17, "timeout": 5}, " (jitter=17, latency=287, timeout=5)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 20 {
				if got := attrText(tt.attrs); got != tt.want {
					t.Fatalf("attrText = %q, want %q", got, tt.want)
				}
			}
		})
	}
}
