package registry

import (
	"slices"
	"strings"
	"testing"
)

// TestClaimsLoad: a surface's [[surface.claims]] load in file order with
// their text, category and legs; a surface without them makes its
// behavior its one claim, C1, with a category inferred from its words.
func TestClaimsLoad(t *testing.T) {
	reg := parseTable(t, `
[[surface.claims]]
id = "C1"
text = "  a delivery is applied once  "
category = "idempotency"
not_applicable = { "gap-between-commits" = "a delivery is one transaction" }

[[surface.claims]]
id = "C2"
text = "an acknowledged delivery is never lost"
category = "durability"
legs = ["reset"]

[[surface.claims]]
id = "C3"
text = "a delivery is applied within a second of its enqueue"
category = "liveness"
legs = []

[[surface]]
id = "b.c"
class = "store"
owner = "team"
behavior = "each request is applied exactly once"
oracle = "exactly-once"
legs = ["reset", "disconnect"]
tests = ["TestB"]
`, nil)
	a := reg.Surfaces[0]
	if len(a.Claims) != 3 {
		t.Fatalf("claims of a.b: %+v", a.Claims)
	}
	if c := a.Claims[0]; c.ID != "C1" || c.Text != "a delivery is applied once" || c.Category != Idempotency || c.Implicit || c.Legs != nil {
		t.Errorf("C1 = %+v", c)
	}
	if got := a.Claims[0].NotApplicable["gap-between-commits"]; got != "a delivery is one transaction" {
		t.Errorf("C1 rules out gap-between-commits because %q", got)
	}
	if got := a.Claims[1].ContestedBy(a); !slices.Equal(got, []string{"reset"}) {
		t.Errorf("C2 is contested by %v, want its own legs", got)
	}
	if got := a.Claims[2].ContestedBy(a); got == nil || len(got) != 0 {
		t.Errorf("C3, with legs = [], is contested by %v, want no leg", got)
	}
	if got := a.Claims[0].ContestedBy(a); !slices.Equal(got, a.Legs) {
		t.Errorf("C1, without legs, is contested by %v, want every leg of the surface", got)
	}
	b := reg.Surfaces[1]
	if len(b.Claims) != 1 {
		t.Fatalf("claims of b.c: %+v", b.Claims)
	}
	if c := b.Claims[0]; c.ID != "C1" || c.Text != b.Behavior || !c.Implicit || c.Category != Idempotency || !strings.Contains(c.Inferred, `"exactly once"`) || c.Line != b.Line {
		t.Errorf("the implicit claim = %+v", c)
	}
}

// TestInferCategory: an implicit claim's category is one of the serious
// ones its words name, looked for in the behavior before the oracle, and
// safety when none is named, never a category that asks less evidence.
func TestInferCategory(t *testing.T) {
	tests := []struct {
		name, behavior, oracle string
		want                   Category
	}{
		{"exactly once is idempotency", "a delivery is applied exactly once", "", Idempotency},
		{"a durable answer is durability", "an answered transfer is durable", "", Durability},
		{"order is ordering", "a batch is applied in order", "", Ordering},
		{"the behavior wins over the oracle", "never hands one port to two holders", "exactly-once", Idempotency},
		{"the oracle speaks when the behavior does not", "keeps its promise", "no-lost-ack", Durability},
		{"a lock is safety", "one holder at a time", "lock model", Safety},
		{"a liveness-sounding promise is still safety", "the queue drains within 15s", "drain progress", Safety},
		{"nothing named is safety", "keeps its promise", "mine", Safety},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := InferCategory(tt.behavior, tt.oracle)
			if got != tt.want || why == "" {
				t.Errorf("InferCategory(%q, %q) = %s (%s), want %s", tt.behavior, tt.oracle, got, why, tt.want)
			}
			if !got.Serious() {
				t.Errorf("an inferred category must be serious, got %s", got)
			}
		})
	}
}

// TestBadClaimsAreErrorsNamingFileAndLine: every way a claim can be
// wrong is an error at its place, saying what to write.
func TestBadClaimsAreErrorsNamingFileAndLine(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []problem
	}{
		{"an unknown key", `
[[surface.claims]]
id = "C1"
text = "applied once"
category = "idempotency"
severity = "P0"
`, []problem{{"6:1", `unknown key "severity" in [[surface.claims]] (known keys: category, id, legs, not_applicable, text)`}}},
		{"an unknown category, with the near one", `
[[surface.claims]]
id = "C1"
text = "applied once"
category = "idempotence"
`, []problem{{"5:12", `surface "a.b" claim C1: unknown category "idempotence" (categories: safety, durability, idempotency, ordering, isolation, membership, liveness, boundary, fairness, performance, operational); did you mean "idempotency"?`}}},
		{"an id that is not C and a number", `
[[surface.claims]]
id = "c1"
text = "applied once"
category = "safety"
`, []problem{{"3:6", `claim id "c1" is not C followed by its number (C1, C2, ...); did you mean "C1"?`}}},
		{"a duplicate id names the first", `
[[surface.claims]]
id = "C1"
text = "applied once"
category = "safety"

[[surface.claims]]
id = "C1"
text = "never lost"
category = "durability"
`, []problem{{"8:6", `claim C1 is declared twice (first at m.toml:12)`}}},
		{"a gap in the numbers", `
[[surface.claims]]
id = "C1"
text = "applied once"
category = "safety"

[[surface.claims]]
id = "C3"
text = "never lost"
category = "durability"
`, []problem{{"8:6", "claim C3 is claim number 2 of the surface; number its claims C1, C2, ... in file order (this one is C2)"}}},
		{"missing text and category", `
[[surface.claims]]
id = "C1"
`, []problem{
			{"2:1", `surface "a.b" claim C1 has no text`},
			{"2:1", `surface "a.b" claim C1 has no category`},
		}},
		{"a placeholder text", `
[[surface.claims]]
id = "C1"
text = "TBD"
category = "safety"
`, []problem{{"4:8", `text "TBD" is a placeholder`}}},
		{"a leg the surface does not have", `
[[surface.claims]]
id = "C1"
text = "applied once"
category = "safety"
legs = ["disconnect"]
`, []problem{{"6:9", `leg "disconnect" is not one of the surface's legs (reset)`}}},
		{"a pitfall the catalog does not have", `
[[surface.claims]]
id = "C1"
text = "applied once"
category = "idempotency"
not_applicable = { "gap-between-comits" = "one transaction" }
`, []problem{{"6:20", `not_applicable names "gap-between-comits", which is no pitfall of the catalog`}}},
		{"a pitfall ruled out without a reason", `
[[surface.claims]]
id = "C1"
text = "applied once"
category = "idempotency"
not_applicable = { "gap-between-commits" = "n/a" }
`, []problem{{"6:44", `not_applicable gap-between-commits needs a reason, not "n/a"`}}},
		{"claims written as one table", `
[surface.claims]
id = "C1"
`, []problem{{"2:1", "claims must be an array of tables, written [[surface.claims]]"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("m.toml", []byte(minimalDoc+tt.doc))
			want := make([]problem, len(tt.want))
			for i, p := range tt.want {
				want[i] = problem{shift(p.at, minimalDocLines), p.msg}
			}
			assertProblems(t, "m.toml", err, want)
		})
	}
}

// TestPlanTable: [plan] sets the lease patterns and the spread, defaults
// stand in for a registry without it, and bad values are errors.
func TestPlanTable(t *testing.T) {
	reg := parseTable(t, "", nil)
	if !slices.Equal(reg.Plan.LeasePaths, DefaultLeasePaths) || reg.Plan.Spread != DefaultSpread {
		t.Errorf("default [plan] = %+v", reg.Plan)
	}
	reg = parseTable(t, "\n[plan]\nlease_paths = [\"internal/**/fence.go\"]\nspread = 5\n", nil)
	if !slices.Equal(reg.Plan.LeasePaths, []string{"internal/**/fence.go"}) || reg.Plan.Spread != 5 || reg.Plan.Line == 0 {
		t.Errorf("[plan] = %+v", reg.Plan)
	}
	parseTable(t, "\n[plan]\nspread = 1\n", &problem{"3:10", "[plan] spread must be a whole number from 2 to 1000"})
	parseTable(t, "\n[plan]\nlease_paths = [\"[lease\"]\n", &problem{"3:16", `"[lease" is not a path pattern`})
	parseTable(t, "\n[plan]\nleases = []\n", &problem{"3:1", `unknown key "leases" in [plan]`})
}

// TestLeaseCodeMatches: a name pattern matches any element of a path, a
// path pattern the whole path with ** for any elements.
func TestLeaseCodeMatches(t *testing.T) {
	tests := []struct {
		pattern, file string
		want          bool
	}{
		{"*lease*", "internal/faultlayer/lease/lease.go", true},
		{"*lock*", "examples/pglock/pglock.go", true},
		{"*fence*", "internal/gate/phases.go", false},
		{"*lease*", "docs/concepts/release.md", true},
		{"internal/**/fence.go", "internal/a/b/fence.go", true},
		{"internal/**/fence.go", "internal/fence.go", true},
		{"internal/**/fence.go", "cmd/internal/fence.go", false},
		{"store/*.go", "store/lease.go", true},
		{"store/*.go", "store/sub/lease.go", false},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+" "+tt.file, func(t *testing.T) {
			if got := MatchPath(tt.pattern, tt.file); got != tt.want {
				t.Errorf("MatchPath(%q, %q) = %v, want %v", tt.pattern, tt.file, got, tt.want)
			}
		})
	}
}
