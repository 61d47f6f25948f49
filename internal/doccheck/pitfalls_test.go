package doccheck

import (
	"strings"
	"testing"

	"github.com/contested/contested/internal/pitfall"
)

// TestThePitfallTableIsTheCatalog: the concepts page's table of pitfalls
// has a row for each pitfall of the shipped catalog, naming every lever
// that can force it (or "none yet"), and no row for a pitfall the catalog
// lacks.
func TestThePitfallTableIsTheCatalog(t *testing.T) {
	const rel = "docs/concepts/claims-plans-findings.md"
	rows := map[string]string{}
	for _, line := range strings.Split(readPage(t, rel), "\n") {
		if id, rest, ok := strings.Cut(strings.TrimPrefix(line, "| `"), "` |"); ok && strings.HasPrefix(line, "| `") {
			rows[id] = rest
		}
	}
	for _, p := range pitfall.Catalog() {
		row, ok := rows[p.ID]
		if !ok {
			t.Errorf("%s has no row for pitfall %s", rel, p.ID)
			continue
		}
		delete(rows, p.ID)
		for _, l := range p.Levers {
			if !strings.Contains(row, l) {
				t.Errorf("%s: the row of %s does not name lever %s", rel, p.ID, l)
			}
		}
		if len(p.Levers) == 0 && !strings.Contains(row, "none yet") {
			t.Errorf("%s: the row of %s should say no lever forces it (none yet)", rel, p.ID)
		}
	}
	for id := range rows {
		t.Errorf("%s has a row for %s, which the catalog does not have", rel, id)
	}
}
