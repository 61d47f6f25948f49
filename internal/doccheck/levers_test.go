package doccheck

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/contested/contested/internal/faultlayer/levers"
)

// leverTable is a docs table with one row per lever, in the order of
// levers.All, each row written from the lever's own Doc: a lever's docs
// are written once, in its file, and the pages only hold them.
type leverTable struct {
	page   string // from the module root
	header string // the table's header line
	row    func(l levers.Lever) string
}

// leverTables are the docs' tables of levers.
var leverTables = []leverTable{
	{
		page:   "docs/concepts/levers.md",
		header: "| lever | arm | injector-side proof | victim-side proof |",
		row: func(l levers.Lever) string {
			d := l.Doc()
			return fmt.Sprintf("| `%s` | %s | %s | %s |", l.Name(), d.Arm, d.Injector, d.Victim)
		},
	},
	{
		page:   "docs/concepts/seeds-and-levels.md",
		header: "| lever | level 1 (sunny): 2 windows, each | level 2 (stormy) adds 2 windows that | level 3 (radioactive) adds, after every window, one that |",
		row: func(l levers.Lever) string {
			d := l.Doc()
			return fmt.Sprintf("| `%s` | %s | %s | %s |", l.Name(), d.Levels[0], d.Levels[1], d.Levels[2])
		},
	},
}

// rows returns the rows of the table on page: the lines under its header,
// the separator left out (nil when the page has no such table).
func (lt leverTable) rows(page string) []string {
	i := strings.Index(page, lt.header+"\n")
	if i < 0 {
		return nil
	}
	var rows []string
	for _, line := range strings.Split(page[i:], "\n")[2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		rows = append(rows, line)
	}
	return rows
}

// want is the whole table as the set writes it: what to paste when the
// page's differs.
func (lt leverTable) want() string {
	var b strings.Builder
	b.WriteString(lt.header + "\n|" + strings.Repeat(" --- |", strings.Count(lt.header, "|")-1) + "\n")
	for _, l := range levers.All() {
		b.WriteString(lt.row(l) + "\n")
	}
	return b.String()
}

// mismatches says how the table on page differs from the set's rows.
func (lt leverTable) mismatches(page string) []string {
	if !strings.Contains(page, lt.header+"\n") {
		return []string{fmt.Sprintf("no table with the header\n%s", lt.header)}
	}
	var bad []string
	rows := lt.rows(page)
	all := levers.All()
	for i, l := range all {
		want := lt.row(l)
		switch {
		case i >= len(rows):
			bad = append(bad, fmt.Sprintf("no row for lever %s; want\n%s", l.Name(), want))
		case rows[i] != want:
			bad = append(bad, fmt.Sprintf("row %d is\n%s\nwant (from the lever's Doc, in the order of levers.All)\n%s", i+1, rows[i], want))
		}
	}
	if len(rows) > len(all) {
		bad = append(bad, fmt.Sprintf("%d rows for %d levers: %q", len(rows), len(all), rows[len(all):]))
	}
	return bad
}

// TestTheLeversTablesAreTheSet: each docs table of levers has one row per
// lever of levers.All, in its order, each written from the lever's own
// Doc. On a difference it prints the whole table to paste.
func TestTheLeversTablesAreTheSet(t *testing.T) {
	for _, lt := range leverTables {
		bad := lt.mismatches(readPage(t, lt.page))
		for _, m := range bad {
			t.Errorf("%s: %s", lt.page, m)
		}
		if len(bad) > 0 {
			t.Errorf("%s: the table, from each lever's Doc in the order of levers.All, to paste:\n%s", lt.page, lt.want())
		}
	}
}

// leversTableAnchor is the levers page's table, where the other pages send
// a reader who wants the list of levers instead of listing them.
const leversTableAnchor = "docs/concepts/levers.md#what-each-lever-does-and-how-it-proves-it-fired"

// linksTo reports whether p has a link that resolves, from p's directory,
// to target (a path from the module root, with its anchor).
func linksTo(p *page, target string) bool {
	for _, l := range p.links {
		file, anchor, _ := strings.Cut(l.dest, "#")
		if file == "" || strings.Contains(file, "://") {
			continue
		}
		if p.resolve(file)+"#"+anchor == target {
			return true
		}
	}
	return false
}

// pagesThatPointToTheLevers are the pages that speak of the levers as a
// whole: they link to the table rather than list the levers, so that a new
// lever needs no edit of theirs.
var pagesThatPointToTheLevers = []string{"docs/reference/registry.md", "docs/concepts/surfaces-and-legs.md"}

// TestThePagesPointToTheLeversTable: the pages that speak of the levers as
// a whole link to the levers table.
func TestThePagesPointToTheLeversTable(t *testing.T) {
	for _, rel := range pagesThatPointToTheLevers {
		if !linksTo(parse(rel, []byte(readPage(t, rel))), leversTableAnchor) {
			t.Errorf("%s does not link to the levers table (%s); link to it instead of listing the levers", rel, leversTableAnchor)
		}
	}
}

// TestTheLeversChecksCanFail: a table that lacks a lever, holds a row the
// lever's Doc does not say, has its rows out of order or a row too many,
// or is missing is refused; and so is a page without the link.
func TestTheLeversChecksCanFail(t *testing.T) {
	type edit struct {
		name string
		edit func(page, reset, next string) string
	}
	edits := []edit{
		{"a lever's row missing", func(page, reset, _ string) string { return strings.Replace(page, reset+"\n", "", 1) }},
		{"a row edited", func(page, reset, _ string) string {
			return strings.Replace(page, reset, strings.Replace(reset, " |", " edited |", 2), 1)
		}},
		{"two rows swapped", func(page, reset, next string) string {
			return strings.Replace(page, reset+"\n"+next+"\n", next+"\n"+reset+"\n", 1)
		}},
		{"a row too many", func(page, reset, _ string) string {
			return strings.Replace(page, reset+"\n", reset+"\n| `latency` | a | b | c |\n", 1)
		}},
		{"no table", func(page, _, _ string) string { return strings.Replace(page, "| lever | ", "| levers | ", 1) }},
	}
	for _, lt := range leverTables {
		page := readPage(t, lt.page)
		if len(lt.mismatches(page)) != 0 {
			t.Fatalf("%s: the page's own table is refused; TestTheLeversTablesAreTheSet says why", lt.page)
		}
		rows := lt.rows(page) // the set's own, as the page passed
		reset, next := rows[1], rows[2]
		for _, e := range edits {
			t.Run(lt.page+"/"+e.name, func(t *testing.T) {
				broken := e.edit(page, reset, next)
				if broken == page {
					t.Fatal("the edit did not apply")
				}
				if len(lt.mismatches(broken)) == 0 {
					t.Error("the broken table passed")
				}
			})
		}
	}
	for _, rel := range pagesThatPointToTheLevers {
		t.Run(rel+"/no link", func(t *testing.T) {
			src := readPage(t, rel)
			anchor := "levers.md#what-each-lever-does-and-how-it-proves-it-fired"
			if !strings.Contains(src, anchor) {
				t.Fatal("the page has no link to break")
			}
			if linksTo(parse(rel, []byte(strings.ReplaceAll(src, anchor, "levers.md#per-client-faults"))), leversTableAnchor) {
				t.Error("a page without the link passed")
			}
		})
	}
}

// introPages open with the sentence that lists a contract's fault legs:
// the levers a surface's own legs can pull (the cluster's are the rig's).
var introPages = []string{"README.md", "docs/index.md"}

// introLead is what comes just before the intro's list of legs.
const introLead = "deterministic fault legs ("

// introLegs returns the lever names the intro sentence of page lists, in
// its order ("seeded burst" is the burst lever), or nil when the page has
// no such sentence.
func introLegs(page string) []string {
	_, rest, ok := strings.Cut(page, introLead)
	if !ok {
		return nil
	}
	list, _, ok := strings.Cut(rest, ")")
	if !ok {
		return nil
	}
	var names []string
	for _, item := range strings.Split(strings.Join(strings.Fields(list), " "), ",") {
		name := strings.TrimSpace(item)
		if name == "seeded "+levers.NameBurst {
			name = levers.NameBurst
		}
		names = append(names, name)
	}
	return names
}

// surfaceLevers are the names of the levers a surface's own legs pull, in
// the order of levers.All.
func surfaceLevers() []string {
	var names []string
	for _, l := range levers.All() {
		if !l.Cluster() {
			names = append(names, l.Name())
		}
	}
	return names
}

// TestTheIntroListsEveryLeg: the README's and the docs index's first
// sentence list the levers a surface's legs pull, each once, in the
// order of levers.All, so that a new lever cannot be left out of the
// first thing a reader sees.
func TestTheIntroListsEveryLeg(t *testing.T) {
	want := surfaceLevers()
	for _, rel := range introPages {
		if got := introLegs(readPage(t, rel)); !slices.Equal(got, want) {
			t.Errorf("%s lists the legs %q after %q; want %q (the levers that are not the cluster's, in the order of levers.All)", rel, got, introLead, want)
		}
	}
}

// TestTheIntroCheckCanFail: an intro that leaves a lever out, names one
// that does not exist, or lists them out of order is refused.
func TestTheIntroCheckCanFail(t *testing.T) {
	page := readPage(t, introPages[0])
	list := strings.Join(introLegs(page), ", ")
	tests := []struct{ name, old, new string }{
		{"a lever left out", levers.NameLatency, ""},
		{"a lever that does not exist", levers.NameIsolate, levers.NameIsolate + ", slowloris"},
		{"two levers swapped", levers.NameDisconnect + ", " + levers.NameReset, levers.NameReset + ", " + levers.NameDisconnect},
		{"no list", introLead, "fault legs ("},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			broken := strings.Replace(page, tt.old, tt.new, 1)
			if broken == page {
				t.Fatalf("%q is not in %s's intro (%s)", tt.old, introPages[0], list)
			}
			if slices.Equal(introLegs(broken), surfaceLevers()) {
				t.Error("the broken intro passed")
			}
		})
	}
}
