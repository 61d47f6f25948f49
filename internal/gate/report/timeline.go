package report

import (
	"fmt"
	"html"
	"html/template"
	"slices"
	"strings"
	"time"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/seed"
)

// Timeline draws the run's fault windows on one time axis as an inline
// SVG (no script): per record, a bar from its armed_at to its fired_at (a
// sliver at armed_at for a fault that never fired), titled with its test
// name, then its leg, its schedule's summary and the operations its
// oracles checked. Records are drawn in the order armed; none draws
// nothing.
func Timeline(recs []faultrecord.Record) template.HTML {
	var rs []faultrecord.Record
	for _, r := range recs {
		if !r.ArmedAt.IsZero() {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		return ""
	}
	slices.SortStableFunc(rs, func(a, b faultrecord.Record) int { return a.ArmedAt.Compare(b.ArmedAt) })
	start, end := rs[0].ArmedAt, rs[0].ArmedAt
	for _, r := range rs {
		if t := windowEnd(r); t.After(end) {
			end = t
		}
	}
	span := end.Sub(start)
	if span <= 0 {
		span = time.Millisecond
	}
	const left, width, row, top = 260, 600, 16, 24
	x := func(t time.Time) float64 { return left + float64(width)*float64(t.Sub(start))/float64(span) }
	height := top + len(rs)*row + 10
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="%d fault windows over %s">`,
		left+width+20, height, len(rs), span.Round(time.Millisecond))
	fmt.Fprintf(&b, `<text x="%d" y="12" font-family="monospace" font-size="10">0</text><text x="%d" y="12" font-family="monospace" font-size="10" text-anchor="end">+%s</text>`,
		left, left+width, span.Round(time.Millisecond))
	fmt.Fprintf(&b, `<line x1="%d" y1="16" x2="%d" y2="16" stroke="#8c959f"/>`, left, left+width)
	for i, r := range rs {
		y := top + i*row
		fmt.Fprintf(&b, `<text x="0" y="%d" font-family="monospace" font-size="10">%s</text>`, y+10, html.EscapeString(clipLabel(r.Test+" "+r.Leg, 40)))
		x0, x1 := x(r.ArmedAt), x(windowEnd(r))
		class, fill := "window fired", "#cf222e"
		if !r.Fired || r.FiredAt.IsZero() {
			class, fill = "window unfired", "#8c959f"
		}
		fmt.Fprintf(&b, `<rect class="%s" x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>%s</title></rect>`,
			class, x0, y, max(x1-x0, 2), row-4, fill, html.EscapeString(windowTitle(r, start)))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// windowEnd is when a record's window ends on the axis: when it fired,
// or when it was armed for one that never fired.
func windowEnd(r faultrecord.Record) time.Time {
	if r.Fired && r.FiredAt.After(r.ArmedAt) {
		return r.FiredAt
	}
	return r.ArmedAt
}

// windowTitle is a bar's title: the test name first, then what the
// window was and what it hit.
func windowTitle(r faultrecord.Record, start time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\nleg %s (%s), %s; armed +%s", r.Test, r.Leg, r.Class, seed.Seed(r.Seed).Say(), r.ArmedAt.Sub(start).Round(time.Millisecond))
	if r.Fired && !r.FiredAt.IsZero() {
		fmt.Fprintf(&b, ", fired +%s", r.FiredAt.Sub(start).Round(time.Millisecond))
	} else {
		b.WriteString(", never fired")
	}
	if s := r.Schedule; s != nil && s.Summary != "" {
		fmt.Fprintf(&b, "\nschedule: %s", s.Summary)
	}
	for _, o := range r.Oracles {
		fmt.Fprintf(&b, "\noracle %s %s: %d of %d operations checked", o.Name, o.Result, o.OpsChecked, o.OpsProduced)
	}
	return b.String()
}

func clipLabel(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}
