package flakes

import (
	"strings"
	"testing"
)

func TestSVGDrawsOneColumnPerRun(t *testing.T) {
	outs := runs(5, 1, 3)
	// Run 4 ran TestC twice (a rerun): once failed, once passed.
	outs = append(outs, Outcome{Schema: Schema, RunID: "run-04", Commit: "c04", Package: "m", Test: "TestC", Verdict: "fail"})
	s := Summarize(outs, "TestC", 0)
	svg := s.SVG(outs)
	for _, tc := range []struct {
		what string
		n    int
	}{
		{`class="pass"`, 2 + 3 + 5}, // TestC passed runs 0 and 2 (4 is flaky); burst 0, 2, 4; reset every run
		{`class="fail"`, 2 + 2},     // TestC and burst failed in runs 1 and 3
		{`class="flaky"`, 1},        // TestC in run 4
		{`>c03</text>`, 1},          // the commit under its column
	} {
		if got := strings.Count(svg, tc.what); got != tc.n {
			t.Errorf("%s: %d, want %d", tc.what, got, tc.n)
		}
	}
	if strings.Contains(svg, "<script") || !strings.HasPrefix(svg, "<svg") {
		t.Errorf("not an inline SVG without script: %.80s", svg)
	}
	if page := HTML("history", outs, []Summary{s}); !strings.Contains(page, svg) {
		t.Error("the page does not hold the trend")
	}
}
