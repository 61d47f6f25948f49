package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/gate/ladder"
	"github.com/contested/contested/internal/rundir"
)

// JUnit is the battery as JUnit XML, in the shape CI systems (GitHub,
// GitLab, Jenkins) read: one suite per package, one case per test
// (subtests included), failures with their output. A package that failed
// without a failing test (a build error) becomes a failed case of its own,
// so it is not lost. Under a CI (Page.CI) each failure Page.Plain lists
// carries its owner, action, verdict and replay command: as properties of
// its test case (contested.owner, contested.action, contested.verdict,
// contested.replay) and at the head of its failure's message and text,
// where a CI's test report (GitLab's, among others) shows them.
type JUnit struct{}

// JUnitFile is the JUnit's name in the battery directory.
const JUnitFile = "junit.xml"

// Path is the JUnit's path under the results directory.
func (JUnit) Path() string { return filepath.Join(rundir.BatteryDir, JUnitFile) }

// Write writes p's battery; a page without one is ErrNothingToShow.
func (JUnit) Write(w io.Writer, p Page) error {
	if p.Battery == nil {
		return ErrNothingToShow
	}
	var owners []ladder.Plain
	if p.CI {
		owners = p.Plain
	}
	return writeJUnit(w, p.Battery, owners)
}

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

// junitOwners are the failures' owners, by package and test ("" for the
// package).
type junitOwners map[string]ladder.Plain

// own adds the owner of the failure of test in pkg to c, if one is known.
func (o junitOwners) own(c *junitCase, pkg, test string) {
	f, ok := o[pkg+"\x00"+test]
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

func writeJUnit(w io.Writer, r *battery.Result, failures []ladder.Plain) error {
	o := junitOwners{}
	for _, f := range failures {
		o[f.Package+"\x00"+f.Test] = f
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
