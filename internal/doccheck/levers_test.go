package doccheck

import (
	"fmt"
	"strings"
	"testing"

	"github.com/contested/contested/internal/faultlayer/levers"
)

// leverRow is a lever's row of the levers page's table, as its Doc gives it.
func leverRow(l levers.Lever) string {
	d := l.Doc()
	return fmt.Sprintf("| `%s` | %s | %s | %s |", l.Name(), d.Arm, d.Injector, d.Victim)
}

// leverTable returns the rows of the levers page's table: the lines of
// the table under its header, the separator left out.
func leverTable(page string) []string {
	const header = "| lever | arm | injector-side proof | victim-side proof |"
	i := strings.Index(page, header)
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

// tableMismatches says how the page's table differs from the set's rows.
func tableMismatches(page string) []string {
	var bad []string
	rows := leverTable(page)
	all := levers.All()
	for i, l := range all {
		want := leverRow(l)
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

// TestTheLeversTableIsTheSet: the levers page's table has one row per
// lever of levers.All, in its order, each the lever's own Doc; and every
// page that lists the levers names each of them.
func TestTheLeversTableIsTheSet(t *testing.T) {
	page := readPage(t, "docs/concepts/levers.md")
	for _, m := range tableMismatches(page) {
		t.Errorf("docs/concepts/levers.md: %s", m)
	}
	for _, p := range []string{"docs/reference/registry.md", "docs/concepts/surfaces-and-legs.md"} {
		page := readPage(t, p)
		for _, name := range levers.Names() {
			if !strings.Contains(page, "`"+name+"`") {
				t.Errorf("%s lists the levers without `%s`", p, name)
			}
		}
	}
}

// TestTheLeversCheckCanFail: a table that lacks a lever, holds a row the
// lever's Doc does not say, or has a row too many is refused.
func TestTheLeversCheckCanFail(t *testing.T) {
	page := readPage(t, "docs/concepts/levers.md")
	reset := leverRow(levers.Reset)
	tests := []struct {
		name string
		page string
	}{
		{"a lever's row missing", strings.Replace(page, reset+"\n", "", 1)},
		{"a row edited", strings.Replace(page, reset, strings.Replace(reset, "reset", "rest", 2), 1)},
		{"a row too many", strings.Replace(page, reset+"\n", reset+"\n| `latency` | a | b | c |\n", 1)},
		{"no table", strings.Replace(page, "| lever | arm |", "| lever | how |", 1)},
	}
	if len(tableMismatches(page)) != 0 {
		t.Fatal("the page's own table is refused; TestTheLeversTableIsTheSet says why")
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.page == page {
				t.Fatal("the edit did not apply")
			}
			if len(tableMismatches(tt.page)) == 0 {
				t.Error("the broken table passed")
			}
		})
	}
}
