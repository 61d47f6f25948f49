package stages

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contested/contested/e2e/internal/e2etest"
	"github.com/contested/contested/internal/mutants"
)

// lowStock and lowStockTest add to the adopter a check whose test looks
// well below the limit only, so the boundary mutant (q <= 5) survives it.
const (
	lowStock = `package stock

// Low reports whether a stock of q needs reordering.
func Low(q int) bool { return q < 5 }
`
	lowStockTest = `package stock

import "testing"

func TestLow(t *testing.T) {
	if !Low(1) || Low(9) {
		t.Fatal("Low")
	}
}
`
)

// TestAdopterMutants runs go tool mage mutants on a copy of the adopter
// fixture, as an adopter would: gremlins pinned in its go.mod, its
// registry's [mutants] table. With threshold = 100 and a surviving mutant
// it exits 1 and mutants.json has the package's figures and the survivor;
// with that survivor accepted (and the package given on the command line)
// it exits 0.
func TestAdopterMutants(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(e2etest.RepoRoot(t), "testdata", "adopter", "contested-surfaces.toml"))
	if err != nil {
		t.Fatal(err)
	}
	reg := string(b)
	const threshold = "threshold = 80"
	if !strings.Contains(reg, threshold) {
		t.Fatalf("the adopter registry no longer has %q to raise", threshold)
	}
	impossible := strings.Replace(reg, threshold, "threshold = 100", 1)
	dir := e2etest.Adopter(t, map[string]string{"contested-surfaces.toml": impossible, "low.go": lowStock, "low_test.go": lowStockTest})

	out, code := e2etest.Mage(t, dir, nil, "mutants")
	if code != 1 || !strings.Contains(out, "below the threshold 100%") {
		t.Fatalf("mutants with threshold 100 and a survivor: exit %d, want 1:\n%s", code, out)
	}
	var rep mutantsJSON
	e2etest.ReadJSON(t, filepath.Join(dir, "test-results", "mutants", "mutants.json"), &rep)
	if rep.Module != "example.com/adopter" || rep.Passed || rep.Threshold != 100 || len(rep.Packages) != 1 {
		t.Fatalf("mutants.json: module %q, passed %v, threshold %v, %d packages; want example.com/adopter's one package, not passed", rep.Module, rep.Passed, rep.Threshold, len(rep.Packages))
	}
	p := rep.Packages[0]
	if p.Dir != "." || p.ImportPath != "example.com/adopter" || p.Error != "" {
		t.Fatalf("package %s (%s), error %q", p.Dir, p.ImportPath, p.Error)
	}
	c := p.Counts
	if c.Killed < 2 || c.Survived != 1 || c.Accepted != 0 || p.Rate == nil || *p.Rate >= 100 || rep.Rate == nil || *rep.Rate != *p.Rate {
		t.Errorf("figures %+v, rate %v (total %v); want the stock mutants killed and low.go's boundary survived", c, p.Rate, rep.Rate)
	}
	if len(p.Survivors) != 1 || p.Survivors[0].Where() != "low.go:4:33" || p.Survivors[0].Mutation != "CONDITIONALS_BOUNDARY" || p.Survivors[0].Change != "`<` → `<=`" {
		t.Fatalf("survivors %+v; want low.go:4:33 CONDITIONALS_BOUNDARY `<` → `<=`", p.Survivors)
	}
	if !strings.Contains(out, "survived low.go:4:33 CONDITIONALS_BOUNDARY") || !strings.Contains(out, "mutants: .: #") {
		t.Errorf("the output does not show progress and the survivor:\n%s", out)
	}

	accepted := impossible + `
[[mutants.accepted]]
file = "low.go"
line = 4
mutation = "CONDITIONALS_BOUNDARY"
reason = "the e2e fixture's test leaves the boundary open on purpose"
`
	dir = e2etest.Adopter(t, map[string]string{"contested-surfaces.toml": accepted, "low.go": lowStock, "low_test.go": lowStockTest})
	out, code = e2etest.Mage(t, dir, nil, "mutants", ".")
	if code != 0 {
		t.Fatalf("mutants . with the survivor accepted: exit %d, want 0:\n%s", code, out)
	}
	e2etest.ReadJSON(t, filepath.Join(dir, "test-results", "mutants", "mutants.json"), &rep)
	if c := rep.Totals; !rep.Passed || c.Survived != 0 || c.Accepted != 1 || len(rep.Packages[0].Accepted) != 1 || rep.Packages[0].Accepted[0].Reason == "" {
		t.Errorf("with the survivor accepted: passed %v, totals %+v, accepted %+v", rep.Passed, c, rep.Packages[0].Accepted)
	}
	if !strings.Contains(out, "accepted low.go:4:33") {
		t.Errorf("the output does not list the accepted survivor:\n%s", out)
	}
}

// mutantsJSON is the part of mutants.json these tests read.
type mutantsJSON struct {
	Module string `json:"module"`
	mutants.Report
}
