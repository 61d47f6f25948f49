package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportLinksDegradedScreenshots: the last degraded stage's cells
// (degraded/cells.json under the results directory) show in the report
// with a link to each kept screenshot, relative to the fault directory the
// report is saved in.
func TestReportLinksDegradedScreenshots(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "degraded"), 0o755); err != nil {
		t.Fatal(err)
	}
	cells := `{"run_id":"r1","front":"./examples/ledger/cmd/ledger","bound":"2.5s","cells":[
 {"cell":"load/latency","leg":"confirm-timeout","passed":false,"fired":true,"problems":["HTTP 500: the user sees an error page"],"victim":"browser: HTTP 500","screenshot":"degraded/cell-load-latency.png"},
 {"cell":"submit/reset","leg":"reset","passed":true,"fired":true,"victim":"browser: HTTP 202"}]}`
	if err := os.WriteFile(filepath.Join(root, "degraded", "cells.json"), []byte(cells), 0o644); err != nil {
		t.Fatal(err)
	}
	st := Degraded(root)
	if st == nil || len(st.Cells) != 2 || st.Failed() != 1 {
		t.Fatalf("Degraded(root) = %+v", st)
	}
	var b strings.Builder
	if err := (HTML{}).Write(&b, Page{Title: "t", Degraded: st}); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{`id="degraded"`, `href="../degraded/cell-load-latency.png"`, "1 of 2 cells failed", "HTTP 500: the user sees an error page"} {
		if !strings.Contains(html, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if Degraded(t.TempDir()) != nil {
		t.Error("a results directory without a stage shows a degraded section")
	}
}
