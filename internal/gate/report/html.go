package report

import (
	"embed"
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/gate"
	"github.com/contested/contested/internal/gate/flakes"
	"github.com/contested/contested/internal/rundir"
)

// HTML is the report for people: one self-contained page (armed and fired
// per class, the gate's phases, each surface's contract verdict and its
// legs', plain failures, ladder outcomes with owners, replay commands,
// links to linearizability visualizations), with its styles inline and no
// script, so it opens from a CI artifact store or a mail attachment.
type HTML struct {
	// File is the page's name in the fault directory; "" is
	// fault-report.html.
	File string
}

// HTMLFile is the default page's name in the fault directory.
const HTMLFile = "fault-report.html"

// Path is the page's path under the results directory.
func (h HTML) Path() string {
	if h.File == "" {
		return filepath.Join(rundir.FaultDir, HTMLFile)
	}
	return filepath.Join(rundir.FaultDir, h.File)
}

// Write renders the page; every page has something to show.
func (HTML) Write(w io.Writer, p Page) error {
	if p.Title == "" {
		p.Title = "contested fault report"
	}
	if p.Generated.IsZero() {
		p.Generated = time.Now()
	}
	return page.Execute(w, p)
}

// TrendRuns is how many of each test's last runs the report's trends show.
const TrendRuns = 20

// Trend is one test's trend in the report.
type Trend struct {
	Test string
	SVG  template.HTML
}

// Trends draws the trend of every test that failed in its last
// TrendRuns runs of the history with the flake history's own drawing
// (flakes.Summary.SVG), and says how many tests the history holds.
func Trends(outs []flakes.Outcome) (trends []Trend, tests int) {
	sums, tests := flakes.Failing(outs, TrendRuns)
	for _, s := range sums {
		trends = append(trends, Trend{Test: s.Package + "." + s.Test, SVG: template.HTML(s.SVG(outs))})
	}
	return trends, tests
}

//go:embed page.html.tmpl
var files embed.FS

var page = template.Must(template.New("page.html.tmpl").Funcs(template.FuncMap{
	"classes": classes,
	"failed":  func(r *battery.Result) []battery.Test { return r.Failed() },
	"pkgs":    func(r *battery.Result) []battery.Package { return r.FailedPackages() },
	"dur":     func(d time.Duration) string { return d.Round(10 * time.Millisecond).String() },
	"verdictClass": func(v string) string {
		switch {
		case strings.HasPrefix(v, "PASS"), v == "GREEN", v == "CERTIFIED":
			return "ok"
		case strings.HasPrefix(v, "FAIL"), v == "RED", v == "REFUSED":
			return "bad"
		}
		return "warn"
	},
	"str": func(v any) string { return fmt.Sprint(v) },
	"oracle": func(o faultrecord.OracleRun) string {
		return fmt.Sprintf("%s %s (%d/%d ops)", o.Name, o.Result, o.OpsChecked, o.OpsProduced)
	},
	"mul100":       func(f float64) float64 { return f * 100 },
	"trends":       func(outs []flakes.Outcome) []Trend { t, _ := Trends(outs); return t },
	"historyTests": func(outs []flakes.Outcome) int { _, n := Trends(outs); return n },
	"timeline":     Timeline,
	"trendRuns":    func() int { return TrendRuns },
}).ParseFS(files, "page.html.tmpl"))

// ClassRow is one class's armed and fired counts.
type ClassRow struct {
	Class     string
	Armed     int
	Fired     int
	Recording bool
}

func classes(r *gate.Report) []ClassRow {
	rec := map[string]bool{}
	for _, c := range r.RecordingClasses {
		rec[c] = true
	}
	var out []ClassRow
	for c, n := range r.ByClass {
		out = append(out, ClassRow{Class: c, Armed: n.Armed, Fired: n.Fired, Recording: rec[c]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Class < out[j].Class })
	return out
}
