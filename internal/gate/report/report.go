// Package report renders a run for people and for CI systems: a
// self-contained fault-report.html (armed and fired per class, the gate's
// phases, each surface's contract verdict and its legs', plain failures,
// ladder outcomes with owners, replay commands, links to linearizability
// visualizations) and a JUnit XML of the battery.
package report

import (
	"embed"
	"encoding/xml"
	"fmt"
	"html/template"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/capacity"
	"github.com/contested/contested/internal/gate"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gate/flakes"
	"github.com/contested/contested/internal/gate/ladder"
)

// Page is everything one report shows. Any part may be missing: a
// standalone program-gate has no battery, a green run no ladder.
type Page struct {
	Title     string
	RunID     string
	Layer     string
	Generated time.Time
	Green     bool
	Reasons   []string
	Gate      *gate.Report
	Battery   *battery.Result
	Ladder    []*ladder.Outcome
	// Surfaces are the registered surfaces' contract verdicts from this
	// battery (contract.JudgeBattery), at Level.
	Surfaces []*contract.Result
	Level    int
	// Plain are failures that are not contract tests': listed, not
	// arbitrated.
	Plain []ladder.Plain
	// Contracts are contracts the ladder ran in isolation over their seed
	// budget.
	Contracts []*contract.Result
	Capacity  *capacity.Report
	// Visualizations are linearizability visualizations, as paths
	// relative to the report's directory.
	Visualizations []string
	// Records are the run's fault records, drawn as a timeline of its
	// fault windows (see Timeline).
	Records []faultrecord.Record
	// History is the flake history (this run's outcomes included), drawn
	// as the trend of every test that failed in its last runs (see
	// Trends); nil draws none.
	History []flakes.Outcome
	// Degraded is the last degraded-UX stage's cells, with links to their
	// screenshots (see Degraded); nil shows none.
	Degraded *DegradedStage
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

// WriteHTML renders the page: one file, with its styles inline and no
// script, so it opens from a CI artifact store or a mail attachment.
func WriteHTML(w io.Writer, p Page) error {
	if p.Title == "" {
		p.Title = "contested fault report"
	}
	if p.Generated.IsZero() {
		p.Generated = time.Now()
	}
	return page.Execute(w, p)
}

// JUnit XML, in the shape CI systems (GitHub, GitLab, Jenkins) read.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Tests   int          `xml:"tests,attr"`
	Fails   int          `xml:"failures,attr"`
	Time    string       `xml:"time,attr"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name    string      `xml:"name,attr"`
	Tests   int         `xml:"tests,attr"`
	Fails   int         `xml:"failures,attr"`
	Skipped int         `xml:"skipped,attr"`
	Time    string      `xml:"time,attr"`
	Cases   []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name       string          `xml:"name,attr"`
	Classname  string          `xml:"classname,attr"`
	Time       string          `xml:"time,attr"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Failure    *junitFailure   `xml:"failure,omitempty"`
	Skipped    *struct{}       `xml:"skipped,omitempty"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Body    string `xml:",chardata"`
}

func secs(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// JUnitOption changes what WriteJUnit writes.
type JUnitOption func(*junitOptions)

type junitOptions struct {
	owners map[string]ladder.Plain // by package and test ("" for the package)
}

// WithOwners gives each failure of the battery that failures lists
// (validate.json's battery_failures: a failing test, or a package that
// failed outside any test) its owner, action, verdict and replay command:
// as properties of its test case (contested.owner, contested.action,
// contested.verdict, contested.replay) and at the head of its failure's
// message and text, where a CI's test report (GitLab's, among others)
// shows them.
func WithOwners(failures []ladder.Plain) JUnitOption {
	return func(o *junitOptions) {
		o.owners = map[string]ladder.Plain{}
		for _, f := range failures {
			o.owners[f.Package+"\x00"+f.Test] = f
		}
	}
}

// own adds the owner of the failure of test in pkg to c, if one is known.
func (o junitOptions) own(c *junitCase, pkg, test string) {
	f, ok := o.owners[pkg+"\x00"+test]
	if !ok || c.Failure == nil {
		return
	}
	props := [][2]string{{"owner", f.Owner}, {"action", f.Action}, {"verdict", f.Verdict}, {"replay", f.Replay}}
	var head []string
	for _, p := range props {
		if p[1] == "" {
			continue
		}
		c.Properties = append(c.Properties, junitProperty{Name: "contested." + p[0], Value: p[1]})
		head = append(head, p[0]+": "+p[1])
	}
	c.Failure.Message += " (owner " + f.Owner + "; action: " + f.Action + ")"
	c.Failure.Body = strings.Join(head, "\n") + "\n\n" + c.Failure.Body
}

// WriteJUnit writes the battery as JUnit XML: one suite per package, one
// case per test (subtests included), failures with their output. A
// package that failed without a failing test (a build error) becomes a
// failed case of its own, so it is not lost.
func WriteJUnit(w io.Writer, r *battery.Result, opts ...JUnitOption) error {
	var o junitOptions
	for _, opt := range opts {
		opt(&o)
	}
	suites := map[string]*junitSuite{}
	suite := func(pkg string) *junitSuite {
		s, ok := suites[pkg]
		if !ok {
			s = &junitSuite{Name: pkg}
			suites[pkg] = s
		}
		return s
	}
	for _, p := range r.Packages {
		suite(p.Name).Time = secs(p.Elapsed)
	}
	for _, t := range r.Tests {
		s := suite(t.Package)
		c := junitCase{Name: t.Name, Classname: t.Package, Time: secs(t.Elapsed)}
		switch t.Action {
		case "fail":
			c.Failure = &junitFailure{Message: "FAIL " + t.Name, Body: t.Output}
			o.own(&c, t.Package, t.Name)
			s.Fails++
		case "skip":
			c.Skipped = &struct{}{}
			s.Skipped++
		}
		s.Tests++
		s.Cases = append(s.Cases, c)
	}
	for _, p := range r.FailedPackages() {
		s := suite(p.Name)
		c := junitCase{Name: "(package)", Classname: p.Name, Time: secs(p.Elapsed),
			Failure: &junitFailure{Message: "package failed", Body: p.Output}}
		o.own(&c, p.Name, "")
		s.Cases = append(s.Cases, c)
		s.Tests++
		s.Fails++
	}
	out := junitSuites{Time: secs(r.Elapsed)}
	var names []string
	for n := range suites {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s := suites[n]
		out.Tests += s.Tests
		out.Fails += s.Fails
		out.Suites = append(out.Suites, *s)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// Visualizations lists the linearizability visualizations under root, as
// paths relative to the fault directory where the report lives: the
// regular *.html files of root/linearizability, which is never reached
// through a symbolic link (a link in it is not listed either).
func Visualizations(root string) []string {
	r, err := atomicfile.OpenRoot(root)
	if err != nil {
		return nil
	}
	d, err := r.OpenDir(visualizationDir)
	if err != nil {
		return nil
	}
	defer d.Close()
	entries, _ := d.ReadDir(-1)
	var out []string
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".html") {
			out = append(out, "../"+visualizationDir+"/"+e.Name())
		}
	}
	sort.Strings(out)
	return out
}

// visualizationDir is where contested/history saves visualizations, under
// the results directory.
const visualizationDir = "linearizability"
