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

// TestTheBoundTakesTheBrowsersShareFromAHealthyPage: a cell's bound on an
// answer is the front's promise (its timeout and a second) plus what the
// browser takes, measured on the healthy page before the fault: a busy
// machine's slow healthy page widens it by that much, never by more, so a
// front that overruns its timeout by more than that is still caught.
func TestTheBoundTakesTheBrowsersShareFromAHealthyPage(t *testing.T) {
	const timeout = time.Second
	tests := []struct {
		name     string
		baseline time.Duration // the healthy page before the fault
		answer   time.Duration // the page under the fault
		late     bool
	}{
		{"an idle machine, in time", 80 * time.Millisecond, 2400 * time.Millisecond, false},
		{"an idle machine, a front that waited for the backend", 80 * time.Millisecond, 2600 * time.Millisecond, true},
		{"a busy machine, in time", 1145 * time.Millisecond, 3000 * time.Millisecond, false},
		{"a busy machine, a front that waited twice its timeout and more", 1145 * time.Millisecond, 3300 * time.Millisecond, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &runner{bound: cellBound(timeout, tt.baseline)}
			r.cfg.Timeout = timeout
			got := strings.Join(r.answered(View{Status: 200, Banner: "slow", Elapsed: tt.answer}), "; ")
			if late := strings.Contains(got, "above the bound"); late != tt.late {
				t.Errorf("bound %s, answer in %s: %q; want late %v", r.bound, tt.answer, got, tt.late)
			}
		})
	}
}
