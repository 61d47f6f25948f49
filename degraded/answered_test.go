package degraded

import (
	"strings"
	"testing"
	"time"
)

// TestTheOne5xxAUserMaySeeIsARefusedSubmission: a 503 is an error page
// unless it is the outcome page of a refused submission; any other 5xx, a
// 503 without an outcome or with another, no answer and a late one are
// problems.
func TestTheOne5xxAUserMaySeeIsARefusedSubmission(t *testing.T) {
	r := &runner{bound: 2 * time.Second}
	tests := []struct {
		name string
		v    View
		want string // "" for none
	}{
		{"a page with a banner", View{Status: 200, Banner: "unreachable"}, ""},
		{"a refused submission", View{Status: 503, Outcome: "refused"}, ""},
		{"a 503 without an outcome", View{Status: 503}, "HTTP 503: the user sees an error page"},
		{"a pending 503", View{Status: 503, Outcome: "pending"}, "HTTP 503: the user sees an error page"},
		{"a refused 500", View{Status: 500, Outcome: "refused"}, "HTTP 500: the user sees an error page"},
		{"no answer", View{Err: "net::ERR_CONNECTION_REFUSED"}, "no answer the user could read"},
		{"too late", View{Status: 200, Elapsed: 3 * time.Second}, "above the bound"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.Join(r.answered(tt.v), "; ")
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("answered(%+v) = %q, want %q", tt.v, got, tt.want)
			}
		})
	}
}
