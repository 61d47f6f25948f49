// Package report renders a run in every format it is read in: a
// self-contained fault-report.html for people (html.go) and a JUnit XML of
// the battery for CI systems (junit.go), each a Format of its own.
package report

import (
	"errors"
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
	"github.com/contested/contested/internal/rundir"
)

// Format is one way a run is written down. A new report format is one
// file holding a type that implements it, and a line in Formats.
type Format interface {
	// Path is where the format's file lies, relative to the results
	// directory.
	Path() string
	// Write renders p to w. It returns ErrNothingToShow, having written
	// nothing, when p holds nothing the format shows (JUnit without a
	// battery).
	Write(w io.Writer, p Page) error
}

// ErrNothingToShow is what a Format returns for a page it has nothing to
// write for; the caller saves no file for it.
var ErrNothingToShow = errors.New("report: nothing to show in this format")

// Formats are the formats validate and program-gate write a run in, in
// the order they are saved and named.
var Formats = []Format{HTML{}, JUnit{}}

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
	// Plain are the battery's failures (validate.json's battery_failures:
	// a failing test, or a package that failed outside any test), each
	// with its owner and action; the ones that are not contract tests'
	// are listed, not arbitrated.
	Plain []ladder.Plain
	// CI says the run is under a CI system: the formats a CI reads
	// (JUnit) then carry each failure's owner and action from Plain.
	CI bool
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

// Visualizations lists the linearizability visualizations under root, as
// paths relative to the fault directory where the report lives: the
// regular *.html files of root/linearizability, which is never reached
// through a symbolic link (a link in it is not listed either).
func Visualizations(root string) []string {
	r, err := atomicfile.OpenRoot(root)
	if err != nil {
		return nil
	}
	d, err := r.OpenDir(rundir.Linearizable)
	if err != nil {
		return nil
	}
	defer d.Close()
	entries, _ := d.ReadDir(-1)
	var out []string
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".html") {
			out = append(out, "../"+rundir.Linearizable+"/"+e.Name())
		}
	}
	sort.Strings(out)
	return out
}
