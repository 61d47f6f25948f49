package shard

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/contested/contested/internal/gotest"
)

// Owned is one package's part of a shard: the package whole (go test runs
// it without -run), or some of its tests (go test -run '^(A|B)$').
type Owned struct {
	Package string   `json:"package"`
	Whole   bool     `json:"whole"`
	Tests   []string `json:"tests"`
}

// Plan is a battery split N ways. Every shard that computes it from the
// same inventory and timings gets the same plan, with the same digest.
type Plan struct {
	Total  int       `json:"total"`
	Shards [][]Owned `json:"shards"`
	// Digest is the sha256 of the assignment: shards that split the
	// battery differently (another commit, another timing file) differ
	// here, and the merge names them.
	Digest string `json:"digest"`
	// Balanced says whether durations from a timing file weighed the
	// tests; without one every test weighs the same.
	Balanced bool `json:"balanced"`
}

// Of returns the share of shard s; nil when s is outside the plan.
func (p Plan) Of(s Spec) []Owned {
	if s.Total != p.Total || s.Index < 1 || s.Index > len(p.Shards) {
		return nil
	}
	return p.Shards[s.Index-1]
}

// unit is what Split assigns: a whole package, or one test of a package
// too heavy for one shard.
type unit struct {
	pkg    string
	tests  []string
	whole  bool
	weight time.Duration
}

// defaultWeight is a test's weight when no timing says otherwise.
const defaultWeight = time.Second

// Split divides the inventory into total shards, stably: a package goes to
// one shard whole unless it weighs more than a shard's fair share (the
// total weight over N), when its tests are spread one by one. Units are
// placed heaviest first, each on the lightest shard so far (the lower
// index on a tie), names breaking ties between equal weights, so the plan
// depends only on the inventory, the timings and N. A test's weight is its
// duration in timings; a test timings does not know weighs the mean of
// those it knows, and without timings every test weighs the same.
func Split(inv []gotest.Package, total int, timings Timings) Plan {
	plan := Plan{Total: total, Shards: make([][]Owned, total), Balanced: len(timings) > 0}
	if total < 1 {
		return plan
	}
	weigh := timings.weigher()
	var units []unit
	var sum time.Duration
	for _, p := range inv {
		for _, t := range p.Tests {
			sum += weigh(p.ImportPath, t)
		}
	}
	share := sum / time.Duration(total)
	for _, p := range inv {
		var w time.Duration
		for _, t := range p.Tests {
			w += weigh(p.ImportPath, t)
		}
		if total == 1 || len(p.Tests) < 2 || w <= share {
			units = append(units, unit{pkg: p.ImportPath, tests: p.Tests, whole: true, weight: w})
			continue
		}
		for _, t := range p.Tests {
			units = append(units, unit{pkg: p.ImportPath, tests: []string{t}, weight: weigh(p.ImportPath, t)})
		}
	}
	slices.SortStableFunc(units, func(a, b unit) int {
		return cmp.Or(cmp.Compare(b.weight, a.weight), strings.Compare(a.pkg, b.pkg), slices.Compare(a.tests, b.tests))
	})
	loads := make([]time.Duration, total)
	parts := make([]map[string]*Owned, total)
	for i := range parts {
		parts[i] = map[string]*Owned{}
	}
	for _, u := range units {
		i := 0
		for j := range loads {
			if loads[j] < loads[i] {
				i = j
			}
		}
		loads[i] += u.weight
		o := parts[i][u.pkg]
		if o == nil {
			o = &Owned{Package: u.pkg, Whole: u.whole, Tests: []string{}}
			parts[i][u.pkg] = o
		}
		o.Tests = append(o.Tests, u.tests...)
	}
	for i, m := range parts {
		share := []Owned{}
		for _, o := range m {
			slices.Sort(o.Tests)
			share = append(share, *o)
		}
		slices.SortFunc(share, func(a, b Owned) int { return strings.Compare(a.Package, b.Package) })
		plan.Shards[i] = share
	}
	b, _ := json.Marshal(plan.Shards)
	sum256 := sha256.Sum256(b)
	plan.Digest = "sha256:" + hex.EncodeToString(sum256[:])
	return plan
}
