package report

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/gate"
	"github.com/contested/contested/internal/gate/flakes"
)

// records is a fixture run: three windows that fired at their own times
// and one armed fault that never fired.
func records() []faultrecord.Record {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	return []faultrecord.Record{
		{Test: "TestStoreContract/burst", Leg: "burst", Class: "proxy", Seed: 7, Armed: true, ArmedAt: at(300), Fired: true, FiredAt: at(900),
			Schedule: &faultrecord.Schedule{Summary: "burst after op 12 for 400ms"}, Oracles: []faultrecord.OracleRun{{Name: "linearizable", Result: "held", OpsChecked: 40, OpsProduced: 40}}},
		{Test: "TestStoreContract/reset", Leg: "reset", Class: "proxy", Seed: 8, Armed: true, ArmedAt: at(0), Fired: true, FiredAt: at(100)},
		{Test: "TestLedger/kill", Leg: "kill", Class: "process", Seed: 9, Armed: true, ArmedAt: at(500), Fired: true, FiredAt: at(1500)},
		{Test: "TestJobs/timeout", Leg: "timeout", Class: "db", Seed: 10, Armed: true, ArmedAt: at(1000)},
	}
}

var bar = regexp.MustCompile(`<rect class="window (fired|unfired)" x="([0-9.]+)" y="[0-9]+" width="([0-9.]+)" height="[0-9]+" fill="[^"]+"><title>([^<]*)</title></rect>`)

func TestTimelineDrawsOneBarPerRecord(t *testing.T) {
	svg := string(Timeline(records()))
	bars := bar.FindAllStringSubmatch(svg, -1)
	if len(bars) != 4 {
		t.Fatalf("%d bars, want one per record (4):\n%s", len(bars), svg)
	}
	// Drawn in the order armed, each titled with its test name first.
	for i, want := range []struct {
		test, class string
		x, width    float64 // on the 600-wide axis from 260, 1500ms long
	}{
		{"TestStoreContract/reset", "fired", 260, 40},
		{"TestStoreContract/burst", "fired", 380, 240},
		{"TestLedger/kill", "fired", 460, 400},
		{"TestJobs/timeout", "unfired", 660, 2},
	} {
		b := bars[i]
		title := strings.SplitN(b[4], "\n", 2)[0]
		if title != want.test || b[1] != want.class || b[2] != fmt.Sprintf("%.1f", want.x) || b[3] != fmt.Sprintf("%.1f", want.width) {
			t.Errorf("bar %d: %s %s x=%s width=%s; want %s %s x=%.1f width=%.1f", i, title, b[1], b[2], b[3], want.test, want.class, want.x, want.width)
		}
	}
	for _, want := range []string{"schedule: burst after op 12 for 400ms", "oracle linearizable held: 40 of 40 operations checked", "never fired"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the timeline does not say %q", want)
		}
	}
	if strings.Contains(svg, "<script") {
		t.Error("the timeline holds a script")
	}
	if Timeline(nil) != "" {
		t.Error("no record draws a timeline")
	}
}

// TestPageDrawsTheTrendAndTheTimeline: the report draws, with the flake
// history's own SVG, the trend of a test that failed in its last runs,
// and the fault windows of its records; without them it draws neither.
func TestPageDrawsTheTrendAndTheTimeline(t *testing.T) {
	var outs []flakes.Outcome
	for i, v := range []string{"pass", "fail", "pass"} {
		outs = append(outs, flakes.Outcome{Schema: flakes.Schema, RunID: fmt.Sprint("run-", i), Commit: fmt.Sprintf("c%d", i), Command: "validate", Package: "example.com/m", Test: "TestLeg", Verdict: v},
			flakes.Outcome{Schema: flakes.Schema, RunID: fmt.Sprint("run-", i), Commit: fmt.Sprintf("c%d", i), Command: "validate", Package: "example.com/m", Test: "TestSteady", Verdict: "pass"})
	}
	p := Page{Title: "t", Gate: &gate.Report{}, History: outs, Records: records()}
	var b strings.Builder
	if err := (HTML{}).Write(&b, p); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	trend := flakes.Summarize(outs, "example.com/m.TestLeg", TrendRuns).SVG(outs)
	for _, want := range []string{`id="history"`, trend, `id="timeline"`, string(Timeline(p.Records))} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %.120s", want)
		}
	}
	if strings.Contains(html, "TestSteady:") || strings.Contains(html, "<script") {
		t.Error("the page draws a test that never failed, or holds a script")
	}
	b.Reset()
	if err := (HTML{}).Write(&b, Page{Title: "t", Gate: &gate.Report{}}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), `id="history"`) || strings.Contains(b.String(), `id="timeline"`) {
		t.Error("a page without history or records draws them")
	}
}
