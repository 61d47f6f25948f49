package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/contested/contested/internal/gate/flakes"
	"github.com/contested/contested/internal/pitfall"
	"github.com/contested/contested/internal/registry"
)

// claimsAtRisk are the claims of the surfaces the change reaches, in
// registry order, each with the legs that contest it at level.
func claimsAtRisk(reg *registry.Registry, r Radius, level int) []ClaimAtRisk {
	out := []ClaimAtRisk{}
	for _, sr := range r.Surfaces {
		s, ok := reg.Surface(sr.ID)
		if !ok {
			continue
		}
		out = append(out, surfaceClaims(s, level, sr.Why)...)
	}
	return out
}

// surfaceClaims are a surface's claims as a plan holds them.
func surfaceClaims(s registry.Surface, level int, why []string) []ClaimAtRisk {
	var out []ClaimAtRisk
	for _, c := range s.Claims {
		a := ClaimAtRisk{Key: s.ID + "/" + c.ID, Surface: s.ID, ID: c.ID, Text: c.Text, Category: c.Category, Serious: c.Category.Serious(),
			Implicit: c.Implicit, Inferred: c.Inferred, Class: s.Class, Owner: s.Owner, Oracle: s.Oracle,
			Legs: []string{}, Tests: slices.Clone(s.Tests), Why: orEmpty(why), Line: c.Line}
		if c.Implicit {
			a.Split = registry.SplitHint(s.ID)
		}
		for _, leg := range c.ContestedBy(s) {
			if s.RunsAt(leg, level) {
				a.Legs = append(a.Legs, leg)
			} else {
				a.NotAtLevel = append(a.NotAtLevel, leg)
			}
		}
		out = append(out, a)
	}
	return out
}

// hypotheses walks the catalog for every claim: each pitfall that applies
// is a hypothesis against it, numbered H1, H2, ... in claim order; every
// other one is not applicable, with the catalog's or the registry's
// reason.
func hypotheses(reg *registry.Registry, claims []ClaimAtRisk) ([]Hypothesis, []NotApplicable) {
	hs, nas := []Hypothesis{}, []NotApplicable{}
	for _, c := range claims {
		var ruledOut map[string]string
		if s, ok := reg.Surface(c.Surface); ok {
			for _, rc := range s.Claims {
				if rc.ID == c.ID {
					ruledOut = rc.NotApplicable
				}
			}
		}
		for _, p := range pitfall.Catalog() {
			if ok, why := p.Applies(string(c.Category), c.Class); !ok {
				by := "class"
				if !slices.Contains(p.Categories, string(c.Category)) {
					by = "category"
				}
				nas = append(nas, NotApplicable{Claim: c.Key, Pitfall: p.ID, Title: p.Title, Reason: why, By: by})
				continue
			}
			if why, ok := ruledOut[p.ID]; ok {
				nas = append(nas, NotApplicable{Claim: c.Key, Pitfall: p.ID, Title: p.Title, Reason: why, By: "registry"})
				continue
			}
			hs = append(hs, Hypothesis{ID: fmt.Sprintf("H%d", len(hs)+1), Claim: c.Key, Pitfall: p.ID, Title: p.Title,
				Text:   fmt.Sprintf("%s %s could break: %s", c.Surface, c.ID, p.Hypothesis),
				Levers: orEmpty(p.Levers), How: p.How, Models: orEmpty(p.Models), Checker: p.Checker})
		}
	}
	return hs, nas
}

// coverage is the matrix: for each hypothesis, the claim's legs that can
// force it, their tests, their last verdict in the flake history and the
// gap, the first that applies of: no test (no leg contests the claim), no
// fault variant (none of its legs can force the hypothesis at this
// level), oracle too weak (the surface's oracle names no check that sees
// it), smoke only (no run in the history passed a forcing leg over its
// hardening seeds).
func coverage(reg *registry.Registry, claims []ClaimAtRisk, hs []Hypothesis, history []flakes.Outcome, level int) []Row {
	rows := []Row{}
	for _, h := range hs {
		c, ok := claimOf(claims, h.Claim)
		if !ok {
			continue
		}
		s, _ := reg.Surface(c.Surface)
		p, _ := pitfall.Lookup(h.Pitfall)
		row := Row{Claim: c.Key, Hypothesis: h.ID, Legs: orEmpty(p.Forces(c.Legs)), Tests: orEmpty(c.Tests)}
		row.Last = lastVerdict(history, c.Surface, orAll(row.Legs, c.Legs))
		switch {
		case len(c.Legs) == 0 && len(c.NotAtLevel) == 0:
			row.Gap, row.Why = GapNoTest, fmt.Sprintf("no leg contests %s (its legs in the registry are none)", c.ID)
		case len(row.Legs) == 0:
			row.Gap = GapNoFault
			row.Why = noFaultWhy(c, p, level)
		case !p.Sees(s.Oracle):
			row.Gap = GapOracleWeak
			row.Why = fmt.Sprintf("%s can force it, but the oracle (%s) names no check of %s", strings.Join(row.Legs, ", "), clipText(s.Oracle, 80), p.Checker)
		default:
			hardened := hardenedRun(history, c.Surface, row.Legs, s.Budget.Hardening.Seeds)
			if hardened == "" {
				row.Gap = GapSmokeOnly
				row.Why = fmt.Sprintf("no run in the flake history passed %s over its %d hardening seeds", strings.Join(row.Legs, " or "), s.Budget.Hardening.Seeds)
			} else {
				row.Why = fmt.Sprintf("%s forces it and the oracle sees it; %s", strings.Join(row.Legs, ", "), hardened)
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// noFaultWhy says why none of a claim's legs can force a pitfall.
func noFaultWhy(c ClaimAtRisk, p pitfall.Pitfall, level int) string {
	if len(p.Levers) == 0 {
		return "no lever of contested forces it: " + p.How
	}
	var b strings.Builder
	switch {
	case len(c.Legs) == 0:
		fmt.Fprintf(&b, "no leg of %s runs at level %d", c.ID, level)
	default:
		fmt.Fprintf(&b, "%s cannot force it", orJoin(c.Legs))
	}
	if forcing := p.Forces(c.NotAtLevel); len(forcing) > 0 {
		fmt.Fprintf(&b, " (%s would, but does not run at level %d)", strings.Join(forcing, ", "), level)
	}
	fmt.Fprintf(&b, "; it takes %s: %s", orJoin(p.Levers), p.How)
	return b.String()
}

// lastVerdict is the newest outcome in the history of any of the legs of
// the surface: "pass" or "fail", the run and when; "no run recorded" when
// the history has none.
func lastVerdict(history []flakes.Outcome, surface string, legs []string) string {
	for i := len(history) - 1; i >= 0; i-- {
		o := history[i]
		if o.Surface != surface || !slices.Contains(legs, o.Leg) || o.Verdict == "skip" {
			continue
		}
		return fmt.Sprintf("%s (%s, %s, %s)", o.Verdict, o.Leg, o.RunID, o.Time.UTC().Format("2006-01-02"))
	}
	return "no run recorded"
}

// hardenedRun names a run of the history in which one of the legs passed
// over at least seeds distinct seeds and failed on none, "" when there is
// none: the history's evidence that the leg went past smoke.
func hardenedRun(history []flakes.Outcome, surface string, legs []string, seeds int) string {
	type key struct{ run, leg string }
	passed := map[key]map[int64]bool{}
	failed := map[key]bool{}
	var order []key
	for _, o := range history {
		if o.Surface != surface || !slices.Contains(legs, o.Leg) {
			continue
		}
		k := key{o.RunID, o.Leg}
		if passed[k] == nil {
			passed[k] = map[int64]bool{}
			order = append(order, k)
		}
		switch o.Verdict {
		case "pass":
			passed[k][o.Seed] = true
		case "fail":
			failed[k] = true
		}
	}
	for i := len(order) - 1; i >= 0; i-- {
		k := order[i]
		if !failed[k] && len(passed[k]) >= max(seeds, 1) {
			return fmt.Sprintf("run %s passed %s over %d seeds", k.run, k.leg, len(passed[k]))
		}
	}
	return ""
}

// missingClaims are behaviours a surface's oracles check that no claim of
// it states: a word of the registry's oracle (or of an oracle a run
// reported, in ran) that names a category none of its claims has.
func missingClaims(reg *registry.Registry, claims []ClaimAtRisk, ran map[string][]string) []MissingClaim {
	out := []MissingClaim{}
	var surfaces []string
	for _, c := range claims {
		if !slices.Contains(surfaces, c.Surface) {
			surfaces = append(surfaces, c.Surface)
		}
	}
	for _, id := range surfaces {
		s, ok := reg.Surface(id)
		if !ok {
			continue
		}
		have := map[registry.Category]bool{}
		for _, c := range s.Claims {
			have[c.Category] = true
		}
		seen := map[registry.Category]bool{}
		check := func(text, where string) {
			for _, w := range oracleWords {
				if !strings.Contains(strings.ToLower(text), w.word) || have[w.category] || seen[w.category] {
					continue
				}
				seen[w.category] = true
				out = append(out, MissingClaim{Surface: id, Category: w.category,
					Evidence: fmt.Sprintf("%s checks %q, %s %s promise, and no claim of %s is one", where, w.word, article(string(w.category)), w.category, id)})
			}
		}
		check(s.Oracle, "its oracle ("+clipText(s.Oracle, 80)+")")
		for _, name := range ran[id] {
			check(name, "a run's oracle "+name)
		}
	}
	return out
}

// article is "a" or "an" before word.
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}

// MissingClaims is missingClaims for the findings: the registry's
// surfaces that ran, with the oracles each reported.
func MissingClaims(reg *registry.Registry, ran map[string][]string) []MissingClaim {
	var claims []ClaimAtRisk
	for _, s := range reg.Surfaces {
		if _, ok := ran[s.ID]; ok {
			claims = append(claims, ClaimAtRisk{Surface: s.ID})
		}
	}
	return missingClaims(reg, claims, ran)
}

// oracleWords map the words of an oracle to the category of promise the
// check holds a history to.
var oracleWords = []struct {
	word     string
	category registry.Category
}{
	{"exactly-once", registry.Idempotency}, {"exactly once", registry.Idempotency}, {"idempoten", registry.Idempotency},
	{"at most once", registry.Idempotency}, {"applied once", registry.Idempotency},
	{"no-lost-ack", registry.Durability}, {"at-least-once", registry.Durability}, {"durab", registry.Durability},
	{"batch-order", registry.Ordering}, {"fifo", registry.Ordering}, {"in order", registry.Ordering},
	{"conservation", registry.Safety}, {"linearizab", registry.Safety}, {"mutual-exclusion", registry.Safety},
	{"one holder", registry.Safety}, {"fencing", registry.Safety}, {"no negative", registry.Safety},
	{"progress", registry.Liveness}, {"drain", registry.Liveness},
	{"user-sees", registry.Operational}, {"banner", registry.Operational},
	{"membership", registry.Membership}, {"serializab", registry.Isolation},
}

// Coverage is the matrix of a project-wide plan of the registry, at
// level: every claim, its hypotheses and their gaps. The findings read
// it for the registry's surfaces when validate runs without a plan.
func Coverage(reg *registry.Registry, history []flakes.Outcome, level int) ([]ClaimAtRisk, []Hypothesis, []Row) {
	var claims []ClaimAtRisk
	for _, s := range reg.Surfaces {
		claims = append(claims, surfaceClaims(s, level, []string{"the registry is the project-wide plan"})...)
	}
	hs, _ := hypotheses(reg, claims)
	return claims, hs, coverage(reg, claims, hs, history, level)
}

func claimOf(claims []ClaimAtRisk, key string) (ClaimAtRisk, bool) {
	for _, c := range claims {
		if c.Key == key {
			return c, true
		}
	}
	return ClaimAtRisk{}, false
}

func orAll(some, all []string) []string {
	if len(some) > 0 {
		return some
	}
	return all
}

// orJoin joins words as "a, b or c".
func orJoin(words []string) string {
	switch len(words) {
	case 0:
		return "no lever"
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// clipText cuts s to n bytes for a sentence.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
