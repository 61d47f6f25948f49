package registry

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/contested/contested/internal/pitfall"
)

// Claim is one numbered promise of a surface: what a test plan tries to
// falsify and what a findings report gives a verdict on.
//
//	[[surface.claims]]
//	id = "C1"                          # C1, C2, ... in file order
//	text = "a deposit is applied once, however often it is retried"
//	category = "idempotency"           # one of Categories
//	legs = ["reset"]                   # optional: the legs that contest it (default every leg; [] none yet)
//	not_applicable = { "gap-between-commits" = "a deposit commits once" }   # optional: pitfalls ruled out, with why
//
// A surface without [[surface.claims]] makes one claim, C1, its behavior
// (Implicit), whose category is inferred from its words (InferCategory).
type Claim struct {
	ID       string   `json:"id"`
	Text     string   `json:"text"`
	Category Category `json:"category"`
	// Legs are the surface's legs that contest the claim. Nil means every
	// leg of the surface; an empty, non-nil list means none does yet (a
	// claim stated before its test is written).
	Legs []string `json:"legs,omitempty"`
	// NotApplicable are the pitfalls of the catalog (internal/pitfall) the
	// team rules out for this claim, each with its reason: a plan lists
	// them as not applicable instead of as hypotheses.
	NotApplicable map[string]string `json:"not_applicable,omitempty"`
	// Implicit says the claim is the surface's behavior, because the
	// surface declares no [[surface.claims]].
	Implicit bool `json:"implicit,omitempty"`
	// Inferred says how an implicit claim's category was found: the words
	// of the behavior or oracle it rests on, or that none matched.
	Inferred string `json:"inferred,omitempty"`
	// Line is where the claim is declared (the surface's line for an
	// implicit one).
	Line int `json:"-"`
}

// ContestedBy returns the legs of s that contest c.
func (c Claim) ContestedBy(s Surface) []string {
	if c.Legs == nil {
		return slices.Clone(s.Legs)
	}
	return slices.Clone(c.Legs)
}

// Category is the kind of promise a claim makes.
type Category string

// The claim categories.
const (
	Safety      Category = "safety"
	Liveness    Category = "liveness"
	Durability  Category = "durability"
	Idempotency Category = "idempotency"
	Ordering    Category = "ordering"
	Isolation   Category = "isolation"
	Membership  Category = "membership"
	Boundary    Category = "boundary"
	Fairness    Category = "fairness"
	Performance Category = "performance"
	Operational Category = "operational"
)

// Categories lists every category, the serious ones first.
var Categories = []Category{Safety, Durability, Idempotency, Ordering, Isolation, Membership, Liveness, Boundary, Fairness, Performance, Operational}

// Serious reports whether a claim of this category is judged only on a
// history a checker consumed: safety, durability, idempotency, isolation,
// ordering and membership. A findings report gives every serious claim its
// evidence chain.
func (c Category) Serious() bool {
	switch c {
	case Safety, Durability, Idempotency, Isolation, Ordering, Membership:
		return true
	}
	return false
}

// claimKeys are the keys a [[surface.claims]] table accepts.
var claimKeys = []string{"id", "text", "category", "legs", "not_applicable"}

// claimID is a claim's id: C and its number, from 1.
var claimID = regexp.MustCompile(`^C([1-9][0-9]*)$`)

// inference is the order in which an implicit claim's category is looked
// for in its surface's behavior and oracle. Only the serious categories are
// inferred, safety when no word matches: an inferred category must never
// ask for less evidence than the promise may need. A team that means
// liveness or performance says so in [[surface.claims]].
var inference = []struct {
	category Category
	words    []string
}{
	{Idempotency, []string{"exactly once", "exactly-once", "at most once", "at-most-once", "applied once", "idempoten", "duplicate", "twice"}},
	{Durability, []string{"durable", "durability", "no-lost-ack", "never lost", "lose no", "survives"}},
	{Ordering, []string{"in order", "fifo", "ordering", "order"}},
	{Membership, []string{"membership", "member"}},
	{Isolation, []string{"isolation", "serializab", "snapshot"}},
}

// InferCategory infers the category of a promise from its words (a
// surface's behavior, then its oracle): the first category of a fixed
// order (idempotency, durability, ordering, membership, isolation) one of
// whose words it holds, else safety. It returns the category and says why.
func InferCategory(behavior, oracle string) (Category, string) {
	for _, text := range []struct{ what, s string }{{"behavior", behavior}, {"oracle", oracle}} {
		low := strings.ToLower(text.s)
		for _, in := range inference {
			for _, w := range in.words {
				if strings.Contains(low, w) {
					return in.category, fmt.Sprintf("inferred from %q in its %s", w, text.what)
				}
			}
		}
	}
	return Safety, "safety by default: no word of its behavior or oracle names a category, and safety asks the most evidence"
}

// implicitClaim is the one claim of a surface that declares none.
func implicitClaim(s Surface) Claim {
	cat, why := InferCategory(s.Behavior, s.Oracle)
	return Claim{ID: "C1", Text: s.Behavior, Category: cat, Implicit: true, Inferred: why, Line: s.Line}
}

// SplitHint says how to split a surface's implicit claim into its own
// claims, for the reports that show one.
func SplitHint(surface string) string {
	return fmt.Sprintf("surface %s states one claim, its behavior; split it into [[surface.claims]] tables (id, text, category), one per promise, so that each is planned and judged on its own", surface)
}

// claims reads a surface's [[surface.claims]], or makes its behavior its
// one claim when it has none.
func (c *checker) claims(sv *value, s Surface, label string) []Claim {
	v := sv.fields["claims"]
	if v == nil {
		if s.Behavior == "" {
			return nil
		}
		return []Claim{implicitClaim(s)}
	}
	if !v.isTableArray() {
		c.errorf(v.at, "%s: claims must be an array of tables, written [[surface.claims]] under the surface, each with id, text and category, not %s", label, v.describe())
		return nil
	}
	var out []Claim
	first := map[string]int{}
	next := 1
	for _, cv := range v.items {
		cl, ok := c.claim(cv, s, label)
		if !ok {
			next++
			continue
		}
		if line, dup := first[cl.ID]; dup {
			c.errorf(cv.fields["id"].valueAt, "%s: claim %s is declared twice (first at %s:%d); give each claim its own number", label, cl.ID, c.file, line)
			continue
		}
		first[cl.ID] = cl.Line
		if n, _ := strconv.Atoi(cl.ID[1:]); n != next {
			c.errorf(cv.fields["id"].valueAt, "%s: claim %s is claim number %d of the surface; number its claims C1, C2, ... in file order (this one is C%d)", label, cl.ID, next, next)
		}
		next++
		out = append(out, cl)
	}
	return out
}

// claim reads one [[surface.claims]] table; ok is false when its id is
// unusable (reported).
func (c *checker) claim(cv *value, s Surface, label string) (Claim, bool) {
	cl := Claim{Line: cv.at.line}
	if !cv.isTable() {
		c.errorf(cv.at, "%s: each claim must be a table with id, text and category, not %s", label, cv.describe())
		return cl, false
	}
	c.knownKeys(cv, claimKeys, "[[surface.claims]]")
	id, idV := c.str(cv, "id", label+" claim")
	id = strings.TrimSpace(id)
	ok := true
	switch {
	case cv.fields["id"] == nil:
		c.errorf(cv.at, "%s: a claim has no id; add id = \"C1\" (C and its number, in file order)", label)
		ok = false
	case idV == nil:
		ok = false
	case !claimID.MatchString(id):
		c.errorf(idV.valueAt, "%s: claim id %q is not C followed by its number (C1, C2, ...)%s", label, id, suggestClaimID(id))
		ok = false
	}
	cl.ID = id
	what := fmt.Sprintf("%s claim %s", label, id)
	text, textV := c.str(cv, "text", what)
	text = strings.TrimSpace(text)
	switch {
	case cv.fields["text"] == nil:
		c.errorf(cv.at, "%s has no text; write text = \"...\", the promise in one sentence", what)
	case textV == nil:
	case text == "":
		c.errorf(textV.valueAt, "%s has an empty text; write the promise in one sentence", what)
	case placeholders[strings.ToLower(strings.TrimRight(text, "."))]:
		c.errorf(textV.valueAt, "%s text %q is a placeholder; write the promise in one sentence (plans and findings quote it)", what, text)
	}
	cl.Text = text
	cat, catV := c.str(cv, "category", what)
	cat = strings.TrimSpace(cat)
	names := make([]string, len(Categories))
	for i, k := range Categories {
		names[i] = string(k)
	}
	switch {
	case cv.fields["category"] == nil:
		c.errorf(cv.at, "%s has no category; add category = \"...\" (one of %s)", what, strings.Join(names, ", "))
	case catV == nil:
	case !slices.Contains(names, cat):
		c.errorf(catV.valueAt, "%s: unknown category %q (categories: %s)%s", what, cat, strings.Join(names, ", "), suggest(cat, names))
	default:
		cl.Category = Category(cat)
	}
	if lv := cv.fields["legs"]; lv != nil {
		legs, at := c.names(cv, "legs", what+" legs", "lever")
		for i, leg := range legs {
			if !slices.Contains(s.Legs, leg) {
				c.errorf(atOr(at, i, cv.at), "%s: leg %q is not one of the surface's legs (%s); a claim is contested by the surface's own legs", what, leg, strings.Join(s.Legs, ", "))
			}
		}
		if lv.kind == unstable.Array {
			cl.Legs = append([]string{}, legs...)
		}
	}
	cl.NotApplicable = c.notApplicable(cv, what)
	return cl, ok
}

// notApplicable reads a claim's not_applicable table: pitfall id = the
// reason it cannot break this claim.
func (c *checker) notApplicable(cv *value, what string) map[string]string {
	v := cv.fields["not_applicable"]
	if v == nil {
		return nil
	}
	if !v.isTable() {
		c.errorf(v.valueAt, "%s: not_applicable must be a table of pitfall = \"why it cannot break this claim\", e.g. not_applicable = { \"gap-between-commits\" = \"a deposit commits once\" }, not %s", what, v.describe())
		return nil
	}
	ids := pitfall.IDs()
	out := map[string]string{}
	for _, id := range v.keys {
		rv := v.fields[id]
		if _, ok := pitfall.Lookup(id); !ok {
			c.errorf(rv.at, "%s: not_applicable names %q, which is no pitfall of the catalog (pitfalls: %s)%s", what, id, strings.Join(ids, ", "), suggest(id, ids))
			continue
		}
		reason, r := c.str(v, id, what+" not_applicable")
		reason = strings.TrimSpace(reason)
		switch {
		case r == nil:
		case reason == "" || placeholders[strings.ToLower(strings.TrimRight(reason, "."))]:
			c.errorf(rv.valueAt, "%s: not_applicable %s needs a reason, not %q: say why this pitfall cannot break the claim (plans quote it)", what, id, reason)
		default:
			out[id] = reason
		}
	}
	return out
}

// suggestClaimID suggests the spelling of a claim id that is almost one:
// "c1", "C 1", "C01".
func suggestClaimID(id string) string {
	digits := strings.TrimLeft(strings.TrimLeft(strings.ToUpper(strings.ReplaceAll(id, " ", "")), "C"), "0")
	if n, err := strconv.Atoi(digits); err == nil && n > 0 {
		return fmt.Sprintf("; did you mean \"C%d\"?", n)
	}
	return ""
}
