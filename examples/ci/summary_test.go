package ci

import (
	"bytes"
	"html"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	gmhtml "github.com/yuin/goldmark/renderer/html"

	"github.com/contested/contested/internal/capability"
	"github.com/contested/contested/internal/gate"
	"github.com/contested/contested/internal/gate/cisummary"
	"github.com/contested/contested/internal/gate/ladder"
	"github.com/contested/contested/internal/gate/verdict"
)

// The job summary validate and program-gate -merge append under GitHub
// Actions (internal/gate/cisummary), rendered as GitHub renders it and read. These
// tests live here, beside the CI files, so that the renderer they use is
// no requirement of the packages an adopter's module builds.

// hostile is text a run may read from disk (a test's name, its failure
// message, a record's reason) that would be markup, a link, HTML, math, a
// table cell or a second line if it were written as it is.
const hostile = "a|b `c` <script>alert(1)</script> *em* _u_ [l](https://x.example) ![i](https://y.example) $x$ &amp; ~~s~~ \\ line1\nline2\r%0A::warning::x"

// shown is hostile as a reader must see it: every character as written,
// the control characters as Go escapes.
var shown = strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(hostile)

// summaryRun is a RED validate: two surfaces (one named hostile), a
// failing subtest walked by the ladder and a package that does not build,
// a missing capability, and hostile text wherever a run's text goes.
func summaryRun() cisummary.Run {
	return cisummary.Run{
		Command: "validate",
		RunID:   "gh-12-1",
		Layer:   "containers",
		Took:    3*time.Minute + 400*time.Millisecond,
		Reasons: []string{"battery failed (2 tests in 1 package)", "surface " + hostile + " is RED"},
		Surfaces: []gate.SurfaceVerdict{
			{ID: "ledger.store", Verdict: "RED", Legs: []verdict.Leg{{Lever: "reset", Verdict: "FAIL-reproducible"}, {Lever: "confirm-timeout", Verdict: "PASS-smoke"}}},
			{ID: hostile, Verdict: "GREEN", Legs: []verdict.Leg{{Lever: hostile, Verdict: "PASS-smoke"}}},
		},
		Failures: []ladder.Plain{
			{Package: "example.com/tiny/a", Test: "TestAlpha/reset", FirstLine: "a_test.go:9: " + hostile, Owner: "component (ledger-team)",
				Action: "fix: " + hostile, Verdict: "FAIL-reproducible", Replay: "CONTESTED_SEED=42 go test ./a -run '^TestAlpha$/^reset$' `x` " + hostile},
			{Package: "example.com/tiny/b", What: ladder.NotBuilt, FirstLine: "b/b.go:3:2: undefined: y", Owner: ladder.PlainOwner, Action: "fix the compile error"},
		},
		Ladder: []*ladder.Outcome{{Package: "example.com/tiny/a", Test: "TestAlpha/reset", Evidence: []string{"reruns: 2 of 2 failed"}}},
		Capabilities: capability.Matrix{
			{Name: capability.Chromium, NeededBy: []string{"ledger.web/latency", hostile}, Provide: "apt-get install chromium"},
			{Name: capability.Docker, Present: true, NeededBy: []string{"ledger.store/reset"}},
			{Name: capability.Cores, NeededBy: nil},
		},
	}
}

// render is what GitHub shows of md: GFM rendered to HTML, raw HTML let
// through, so that an escape that failed shows as a tag.
func render(t *testing.T, md string) string {
	t.Helper()
	var b bytes.Buffer
	gm := goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(gmhtml.WithUnsafe()))
	if err := gm.Convert([]byte(md), &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

var tag = regexp.MustCompile(`<[^>]*>`)

// text is what a reader sees of rendered HTML: its text, entities decoded.
func text(h string) string { return html.UnescapeString(tag.ReplaceAllString(h, "")) }

// TestMarkdownShowsTheVerdictAndEscapesTextFromDisk renders the summary as
// GitHub does: the verdict, the reasons, one table row per surface with
// its legs' verdicts, each failure with owner, action and replay, the
// missing capability; and text from disk, however hostile, shows as
// written and opens no tag, link, emphasis, code, math or table cell of
// its own.
func TestMarkdownShowsTheVerdictAndEscapesTextFromDisk(t *testing.T) {
	var md strings.Builder
	if err := cisummary.WriteMarkdown(&md, summaryRun()); err != nil {
		t.Fatal(err)
	}
	h := render(t, md.String())
	seen := text(h)
	for _, want := range []string{
		"contested validate: RED", "run gh-12-1", "layer containers", "took 3m0s",
		"battery failed (2 tests in 1 package)", "surface " + shown + " is RED",
		"reset: FAIL-reproducible", "confirm-timeout: PASS-smoke",
		"example.com/tiny/a TestAlpha/reset", "owner component (ledger-team)", "failure: a_test.go:9: " + shown,
		"action: fix: " + shown, "replay: CONTESTED_SEED=42 go test ./a -run '^TestAlpha$/^reset$' `x` " + shown,
		"evidence: reruns: 2 of 2 failed",
		"package example.com/tiny/b does not build", "owner " + ladder.PlainOwner,
		"Missing capabilities", "chromium", "ledger.web/latency, " + shown, "apt-get install chromium",
	} {
		if !strings.Contains(seen, want) {
			t.Errorf("the rendered summary does not show %q:\n%s\n\nMarkdown:\n%s", want, seen, md.String())
		}
	}
	for _, markup := range []string{"<script", "<a ", "<img", "<em>", "<strong>u", "<del>", "<code>c</code>"} {
		if strings.Contains(h, markup) {
			t.Errorf("text from disk became markup %q:\n%s", markup, h)
		}
	}
	if strings.Contains(seen, "docker") || strings.Contains(seen, "cores") {
		t.Errorf("a present or unneeded capability is listed as missing:\n%s", seen)
	}
	rows := regexp.MustCompile(`(?s)<tr>.*?</tr>`).FindAllString(h, -1)
	if len(rows) != 3+2 { // two tables: surfaces (header and 2 rows), capabilities (header and 1 row)
		t.Fatalf("the tables have %d rows, want 5:\n%s", len(rows), h)
	}
	for _, r := range rows {
		if n := strings.Count(r, "<td") + strings.Count(r, "<th"); n != 3 {
			t.Errorf("a row has %d cells, want 3 (a pipe from disk split it): %s", n, r)
		}
	}
}

// TestMarkdownOfAGreenRun: a GREEN run says so and lists no reasons and no
// failures.
func TestMarkdownOfAGreenRun(t *testing.T) {
	run := cisummary.Run{Command: "program-gate -merge", Green: true, Surfaces: summaryRun().Surfaces[:1]}
	var md strings.Builder
	if err := cisummary.WriteMarkdown(&md, run); err != nil {
		t.Fatal(err)
	}
	seen := text(render(t, md.String()))
	if !strings.Contains(seen, "contested program-gate -merge: GREEN") || strings.Contains(seen, "Not GREEN") || strings.Contains(seen, "Failing") {
		t.Errorf("a GREEN summary:\n%s", seen)
	}
}

// TestMarkdownIsBounded: ten thousand failures make a summary GitHub keeps
// (under its 1 MiB a step), which says how many it left out.
func TestMarkdownIsBounded(t *testing.T) {
	run := cisummary.Run{Command: "validate"}
	long := strings.Repeat("x|", 5000)
	for range 10000 {
		run.Failures = append(run.Failures, ladder.Plain{Package: "p", Test: "TestX", FirstLine: long, Action: long, Owner: "o"})
		run.Reasons = append(run.Reasons, long)
	}
	var md strings.Builder
	if err := cisummary.WriteMarkdown(&md, run); err != nil {
		t.Fatal(err)
	}
	if md.Len() > 512<<10 {
		t.Errorf("the summary is %d bytes", md.Len())
	}
	seen := text(render(t, md.String()))
	if !strings.Contains(seen, "and 9950 more: validate.json battery_failures") || !strings.Contains(seen, "and 9950 more reasons") {
		t.Errorf("the summary does not say what it left out")
	}
}
