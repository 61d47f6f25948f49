package flakes

import (
	"fmt"
	"html"
	"strings"
)

// Cell marks of a trend: a run passed, failed, or both (flaky: the test
// or leg failed and passed within one run, such as a shard's rerun).
const (
	markPass  = "pass"
	markFail  = "fail"
	markFlaky = "flaky"
)

// trendRows is the test's row, then one per leg: for each run, its mark
// ("" when the row did not run then).
func trendRows(outs []Outcome, s Summary) (labels []string, rows [][]string) {
	col := map[string]int{}
	for i, r := range s.Runs {
		col[r.RunID] = i
	}
	index := map[string]int{"": 0}
	labels = []string{s.Test}
	rows = [][]string{make([]string, len(s.Runs))}
	for _, l := range s.Legs {
		index[l.Test] = len(rows)
		labels = append(labels, "leg "+l.name(s.Test))
		rows = append(rows, make([]string, len(s.Runs)))
	}
	mark := func(row, c int, failed bool) {
		m := markPass
		if failed {
			m = markFail
		}
		switch cur := rows[row][c]; {
		case cur == "":
			rows[row][c] = m
		case cur != m:
			rows[row][c] = markFlaky
		}
	}
	for _, o := range outs {
		c, ok := col[o.RunID]
		if !Within(o.Test, s.Test) || (s.Package != "" && o.Package != s.Package) || !ok || o.Verdict == "skip" {
			continue
		}
		if o.Test == s.Test {
			mark(0, c, o.Failed())
		}
		if r, ok := index[o.Test]; ok && o.Leg != "" {
			mark(r, c, o.Failed())
		}
	}
	return labels, rows
}

// SVG draws the summary's trend from outs (the outcomes it was made from):
// one column per run, oldest first, a row for the test and one per leg,
// each cell green (passed), red (failed) or amber (flaky within the run),
// and the run's commit under its column. Inline SVG, no script.
func (s Summary) SVG(outs []Outcome) string {
	labels, rows := trendRows(outs, s)
	const cell, gap, left, top = 14, 2, 170, 22
	width := left + len(s.Runs)*(cell+gap) + 10
	height := top + len(rows)*(cell+gap) + 70
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="%s">`, width, height,
		html.EscapeString(fmt.Sprintf("%s: failed %d of the last %d runs", s.Test, s.Failed, len(s.Runs))))
	fmt.Fprintf(&b, `<text x="0" y="14" font-family="monospace" font-size="12">%s: failed %d of %d runs</text>`, html.EscapeString(s.Test), s.Failed, len(s.Runs))
	colors := map[string]string{markPass: "#2e7d32", markFail: "#c62828", markFlaky: "#f9a825", "": "#e0e0e0"}
	for r, row := range rows {
		y := top + r*(cell+gap)
		fmt.Fprintf(&b, `<text x="0" y="%d" font-family="monospace" font-size="11">%s</text>`, y+cell-3, html.EscapeString(labels[r]))
		for c, m := range row {
			title := s.Runs[c].RunID + ": " + m
			if m == "" {
				title = s.Runs[c].RunID + ": did not run"
			}
			fmt.Fprintf(&b, `<rect class="%s" x="%d" y="%d" width="%d" height="%d" fill="%s"><title>%s</title></rect>`,
				orNone(m), left+c*(cell+gap), y, cell, cell, colors[m], html.EscapeString(title))
		}
	}
	y := top + len(rows)*(cell+gap) + 4
	for c, r := range s.Runs {
		x := left + c*(cell+gap) + cell/2
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-family="monospace" font-size="9" transform="rotate(90 %d %d)">%s</text>`,
			x-3, y, x-3, y, html.EscapeString(orUnknown(shortCommit(r.Commit))))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

func shortCommit(c string) string {
	if len(c) > 7 {
		return c[:7]
	}
	return c
}

func orNone(m string) string {
	if m == "" {
		return "none"
	}
	return m
}

// HTML is a page of the summaries' trends, self-contained (inline SVG, no
// script).
func HTML(title string, outs []Outcome, sums []Summary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>%s</title></head><body style=\"font-family:sans-serif\">\n<h1>%s</h1>\n", html.EscapeString(title), html.EscapeString(title))
	b.WriteString("<p>One column per run, oldest first: green passed, red failed, amber flaky within the run, grey did not run; the commit under each column.</p>\n")
	for _, s := range sums {
		fmt.Fprintf(&b, "<h2>%s</h2>\n%s\n", html.EscapeString(s.Test), s.SVG(outs))
	}
	b.WriteString("</body></html>\n")
	return b.String()
}
