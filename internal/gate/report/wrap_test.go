package report

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/contested/contested/internal/capability"
	"github.com/contested/contested/internal/gate"
	"github.com/contested/contested/internal/gate/ladder"
	"github.com/contested/contested/internal/gate/verdict"
)

// longPage is the sample page with cells no line can hold: a test name
// and a replay command of a few hundred characters without a space, and a
// failure line as long.
func longPage() Page {
	p := samplePage()
	name := "TestConsumerContract/" + strings.Repeat("a_subtest_name_without_any_space_", 12) + "burst"
	replay := "CONTESTED_SEED=42 go test ./examples/ledger -run '^" + strings.Repeat("TestConsumerContractWithAVeryLongName", 8) + "$/^burst$' -count=1"
	p.Gate.Unfired = append(p.Gate.Unfired, gate.Unfired{Test: name, Surface: "ledger.consumer", Leg: "burst", Replay: replay})
	p.Plain = append(p.Plain, ladder.Plain{Package: "example.com/m/" + strings.Repeat("deep/", 30) + "pkg", Test: name,
		FirstLine: "x_test.go:1: " + strings.Repeat("want-a-value-without-spaces-", 15), Replay: replay, Owner: ladder.PlainOwner, Action: "run it alone: " + replay})
	p.Contracts[0].Legs = append(p.Contracts[0].Legs, verdict.Leg{Lever: "burst", Verdict: verdict.FailReproducible, Reason: strings.Repeat("reason-without-spaces-", 20), Replay: replay})
	return p
}

// TestTheReportsCSSWrapsLongCells: the page's style lets a table cell
// break a word that has no space (overflow-wrap: anywhere, which also
// lets the table shrink to its page) and keeps a code span's spaces, so a
// long test name or replay command wraps instead of widening its table
// past the page. The fast tier's check; the browser's is below.
func TestTheReportsCSSWrapsLongCells(t *testing.T) {
	var b strings.Builder
	if err := (HTML{}).Write(&b, longPage()); err != nil {
		t.Fatal(err)
	}
	style, _, _ := strings.Cut(b.String(), "</style>")
	for _, rule := range []string{"th, td { overflow-wrap: anywhere; }", "td code { white-space: pre-wrap; }"} {
		if !strings.Contains(style, rule) {
			t.Errorf("the report's style lacks %q", rule)
		}
	}
}

// TestNoTableRunsOffAWindow1400PixelsWide opens the report with long cells
// in headless Chromium, 1400 pixels wide, and measures it: no table and
// no cell reaches past the page's body, and the page does not scroll
// sideways.
func TestNoTableRunsOffAWindow1400PixelsWide(t *testing.T) {
	browser := capability.Require(t, capability.Chromium).Source
	dir := t.TempDir()
	path := filepath.Join(dir, "fault-report.html")
	var b strings.Builder
	if err := (HTML{}).Write(&b, longPage()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.UserDataDir(filepath.Join(dir, "profile")),
		chromedp.Flag("disable-gpu", true), chromedp.NoSandbox, chromedp.WindowSize(1400, 900))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	if _, err := chromedp.Run(bctx, chromedp.NavigateResponse("file://"+path)); err != nil {
		t.Fatalf("chromium: open the report: %v", err)
	}
	width, err := chromedp.Run(bctx, chromedp.Evaluate[int](`window.innerWidth`))
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	over, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`(() => {
		const right = document.body.getBoundingClientRect().right + 1, over = [];
		for (const el of document.querySelectorAll('table, td, th')) {
			if (el.getBoundingClientRect().right > right || el.scrollWidth > el.clientWidth + 1) {
				over.push(el.tagName + ': ' + el.textContent.slice(0, 60));
			}
		}
		if (document.documentElement.scrollWidth > window.innerWidth) over.push('the page scrolls sideways: ' + document.documentElement.scrollWidth + 'px');
		return over;
	})()`))
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	if width < 1300 || width > 1400 {
		t.Fatalf("the window is %dpx wide, want about 1400", width)
	}
	for _, o := range over {
		t.Errorf("runs off the page at 1400px: %s", o)
	}
}
