package registry

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/contested/contested/internal/capability"
)

// The keys each table accepts. Unknown keys are errors: a misspelt key
// ("legz") would otherwise be ignored and the surface would silently lose
// what the author meant to declare.
var (
	topKeys     = []string{"schema", "gate", "guard", "surface", "cluster", "mutants", "degraded", "battery", "reuse", "plan"}
	gateKeys    = []string{"recording_classes", "self_tests"}
	guardKeys   = []string{"canonical_databases"}
	surfaceKeys = []string{"id", "class", "owner", "behavior", "oracle", "package", "legs", "tests", "budget", "levels", "needs", "claims"}
)

// validID keeps surface ids usable as command-line arguments
// (`mage contested <id>`) and in file names without quoting.
var validID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// reservedID is the argument `mage contested all` uses for every surface.
const reservedID = "all"

// checker walks the tree, builds the Registry and collects every problem.
type checker struct {
	file string
	errs ErrorList
}

func (c *checker) errorf(at pos, format string, args ...any) {
	c.errs = append(c.errs, &Error{File: c.file, Line: at.line, Column: at.col, Msg: fmt.Sprintf(format, args...), Kind: ErrInvalid})
}

func (c *checker) registry(root *value) *Registry {
	r := &Registry{}
	c.knownKeys(root, topKeys, "at the top level")

	switch v := root.fields["schema"]; {
	case v == nil:
		c.errorf(pos{1, 1}, "schema is missing; add `schema = %d` at the top of the file, before any [table]", SchemaVersion)
	case v.kind != unstable.Integer:
		c.errorf(v.valueAt, "schema must be the integer %d, not %s", SchemaVersion, v.describe())
	default:
		n, err := strconv.ParseInt(v.text, 0, 64)
		if err != nil || n != SchemaVersion {
			c.errorf(v.valueAt, "schema %s is not supported; this version of contested reads schema %d", v.text, SchemaVersion)
		}
		r.Schema = int(n)
	}

	if g := c.table(root, "gate", "[gate]"); g != nil {
		c.knownKeys(g, gateKeys, "[gate]")
		r.Gate.RecordingClasses, r.Gate.recordingClassesAt = c.names(g, "recording_classes", "[gate] recording_classes", "class")
		r.Gate.SelfTests, r.Gate.selfTestsAt = c.names(g, "self_tests", "[gate] self_tests", "test")
	}
	if g := c.table(root, "guard", "[guard]"); g != nil {
		c.knownKeys(g, guardKeys, "[guard]")
		r.Guard.CanonicalDatabases, _ = c.names(g, "canonical_databases", "[guard] canonical_databases", "database")
	}

	r.Surfaces = c.surfaces(root)
	c.recordingClasses(r)
	r.Cluster = c.cluster(root)
	r.Mutants = c.mutants(root)
	r.Degraded = c.degraded(root)
	r.Battery = c.battery(root)
	r.Reuse = c.reuse(root)
	r.Plan = c.plan(root)
	return r
}

// recordingClasses checks that each recording class is the class of some
// surface: a class nothing records can never fire, so the gate could never
// certify a run.
func (c *checker) recordingClasses(r *Registry) {
	classes := r.Classes()
	for i, class := range r.Gate.RecordingClasses {
		if !slices.Contains(classes, class) {
			c.errorf(atOr(r.Gate.recordingClassesAt, i, pos{}), "recording class %q is not the class of any surface (classes: %s); fix the name or register a surface of that class%s",
				class, listOrNone(classes), suggest(class, classes))
		}
	}
}

func (c *checker) surfaces(root *value) []Surface {
	v := root.fields["surface"]
	if v == nil || v.kind == unstable.Array && len(v.items) == 0 {
		at := pos{1, 1}
		if v != nil {
			at = v.at
		}
		c.errorf(at, "no surfaces are declared; add at least one [[surface]] with id, class, owner, behavior, oracle, legs and tests")
		return nil
	}
	if !v.isTableArray() {
		c.errorf(v.at, "surface must be an array of tables, written [[surface]] (double brackets), not %s", v.describe())
		return nil
	}
	var surfaces []Surface
	firstID := map[string]pos{}      // id -> where first declared
	firstTest := map[string]string{} // tests entry -> surface id that lists it
	firstTestAt := map[string]pos{}
	for n, sv := range v.items {
		s := c.surface(sv, n+1)
		if s.ID != "" {
			idAt := sv.fields["id"].valueAt
			if prev, dup := firstID[s.ID]; dup {
				c.errorf(idAt, "duplicate surface id %q: already declared at %s:%d; ids must be unique because records and the ladder name surfaces by id",
					s.ID, c.file, prev.line)
			} else {
				firstID[s.ID] = idAt
			}
		}
		for i, t := range s.Tests {
			at := atOr(s.testsAt, i, sv.at)
			if other, dup := firstTest[t]; dup && other != s.ID {
				c.errorf(at, "test %q is listed by surface %q and already by surface %q at %s:%d; a failing test must map to one surface, so list a subtest path (\"%s/<name>\") in each instead",
					t, s.ID, other, c.file, firstTestAt[t].line, t)
			} else if !dup {
				firstTest[t], firstTestAt[t] = s.ID, at
			}
		}
		surfaces = append(surfaces, s)
	}
	return surfaces
}

// surface reads one [[surface]]; n is its 1-based index, for messages about
// a surface that has no usable id.
func (c *checker) surface(sv *value, n int) Surface {
	s := Surface{Line: sv.at.line}
	c.knownKeys(sv, surfaceKeys, "[[surface]]")

	id, idV := c.str(sv, "id", fmt.Sprintf("surface #%d", n))
	id = strings.TrimSpace(id)
	// label names the surface in every message about it, even when its id
	// is unusable.
	label := fmt.Sprintf("surface %q", id)
	if id == "" {
		label = fmt.Sprintf("surface #%d", n)
	}
	switch {
	case idV == nil:
		if sv.fields["id"] == nil {
			c.errorf(sv.at, "%s has no id; add id = \"<component>.<behaviour>\" (records, the ladder and `mage contested <id>` name surfaces by id)", label)
		}
	case id == "":
		c.errorf(idV.valueAt, "%s has an empty id; give it a name like \"ledger.store\"", label)
	case id == reservedID:
		c.errorf(idV.valueAt, "surface id %q is reserved (`mage contested all` runs every surface); choose another id", id)
	case !validID.MatchString(id):
		c.errorf(idV.valueAt, "surface id %q may contain only letters, digits, '.', '_' and '-', starting with a letter or digit (it is typed on the command line)", id)
	default:
		s.ID = id
	}

	s.Class = c.required(sv, "class", label)
	s.Owner = c.required(sv, "owner", label)
	s.Behavior = c.required(sv, "behavior", label)
	s.Oracle = c.required(sv, "oracle", label)
	c.missing(sv, label)

	if pkg, v := c.str(sv, "package", label); v != nil {
		pkg = strings.TrimSpace(pkg)
		if why := outsideModule(pkg, true); why != "" {
			c.errorf(v.valueAt, "%s: package %q must be a Go package path of this module as given to go test, e.g. \"./examples/ledger/store\": it %s", label, pkg, why)
		} else {
			s.Package = pkg
		}
	}

	var legsAt []pos
	s.Legs, legsAt = c.names(sv, "legs", label+" legs", "lever")
	if emptyList(sv, "legs") {
		c.errorf(c.keyAt(sv, "legs"), "%s has no legs; add legs = [...] with at least one lever (known levers: %s)", label, strings.Join(LeverNames(), ", "))
	}
	for i, leg := range s.Legs {
		if _, ok := LookupLever(leg); !ok {
			c.errorf(atOr(legsAt, i, sv.at), "%s: unknown lever %q (known levers: %s)%s", label, leg, strings.Join(LeverNames(), ", "), suggest(leg, LeverNames()))
		}
	}

	s.Tests, s.testsAt = c.names(sv, "tests", label+" tests", "test")
	if emptyList(sv, "tests") {
		c.errorf(c.keyAt(sv, "tests"), "%s has no tests; add tests = [\"TestName\"], the Go tests that run its legs (a surface no test exercises is a claim nobody checks)", label)
	}
	for i, t := range s.Tests {
		if strings.ContainsAny(t, " \t") || strings.HasPrefix(t, "/") || strings.HasSuffix(t, "/") || strings.Contains(t, "//") {
			c.errorf(atOr(s.testsAt, i, sv.at), "%s: %q is not a test name; write a Go test name (\"TestStoreContract\") or a subtest path (\"TestContracts/store\")", label, t)
		}
	}

	s.Budget = c.budget(sv, label)
	s.Levels = c.levels(sv, s, label)
	s.Needs = c.needs(sv, label)
	s.Claims = c.claims(sv, s, label)
	return s
}

// needs reads a surface's needs: the capabilities its legs need beyond the
// fault layer (which every leg needs), such as "chromium" for a stage that
// drives a browser. A run that lacks one names it, and the command that
// provides it, beside every leg it could not run.
func (c *checker) needs(sv *value, label string) []string {
	names, at := c.names(sv, "needs", label+" needs", "capability")
	known := make([]string, len(capability.Names))
	for i, n := range capability.Names {
		known[i] = string(n)
	}
	for i, n := range names {
		if !capability.Known(n) {
			c.errorf(atOr(at, i, sv.at), "%s: unknown capability %q in needs (known: %s)%s", label, n, strings.Join(known, ", "), suggest(n, known))
		}
	}
	return names
}

// requiredMeaning says, for each required string key, what to write there.
var requiredMeaning = map[string]string{
	"class":    "the recording class the gate counts it under, e.g. store, pool, mq-consumer, lease",
	"owner":    "the team that gets a RED verdict",
	"behavior": "the promise the component keeps, in one sentence",
	"oracle":   "the check that decides whether the promise held, e.g. " + strings.Join(oracleNames(), ", "),
}

// required reads a string field that must be present and non-blank. An
// absent key is reported by missing, together with the others.
func (c *checker) required(t *value, key, label string) string {
	s, v := c.str(t, key, label)
	s = strings.TrimSpace(s)
	if v != nil && s == "" {
		c.errorf(v.valueAt, "%s has an empty %s; write %s", label, key, requiredMeaning[key])
	}
	return s
}

// missing reports the required string keys a surface lacks in one message,
// so a half-written surface produces one line, not four.
func (c *checker) missing(t *value, label string) {
	var absent []string
	for _, key := range []string{"class", "owner", "behavior", "oracle"} {
		if t.fields[key] == nil {
			absent = append(absent, key)
		}
	}
	switch len(absent) {
	case 0:
	case 1:
		c.errorf(t.at, "%s has no %s; add %s = \"...\" (%s)", label, absent[0], absent[0], requiredMeaning[absent[0]])
	default:
		c.errorf(t.at, "%s has no %s; every surface needs id, class, owner, behavior, oracle, legs and tests",
			label, strings.Join(absent[:len(absent)-1], ", ")+" or "+absent[len(absent)-1])
	}
}

// emptyList is true when t[key] is absent or an empty array (a value of
// another type is reported by names).
func emptyList(t *value, key string) bool {
	v := t.fields[key]
	return v == nil || v.kind == unstable.Array && len(v.items) == 0
}

// keyAt is where key is written in t, or where t starts when it is absent.
func (c *checker) keyAt(t *value, key string) pos {
	if v := t.fields[key]; v != nil {
		return v.at
	}
	return t.at
}

// table returns t[key] when it is a table, nil when absent, and reports a
// value of another type.
func (c *checker) table(t *value, key, where string) *value {
	v := t.fields[key]
	if v == nil {
		return nil
	}
	if !v.isTable() {
		c.errorf(v.at, "%s must be a table, not %s", where, v.describe())
		return nil
	}
	return v
}

// str returns t[key] when it is a string; v is nil when the key is absent
// or has another type (which is reported, prefixed with where).
func (c *checker) str(t *value, key, where string) (string, *value) {
	v := t.fields[key]
	if v == nil {
		return "", nil
	}
	if v.kind != unstable.String {
		hint := "; write a single quoted string"
		if v.kind != unstable.Array && !v.isTable() {
			hint = "; quote it"
		}
		c.errorf(v.valueAt, "%s: %s must be a string, not %s%s", where, key, v.describe(), hint)
		return "", nil
	}
	return v.text, v
}

// names reads an optional array of non-empty, distinct strings and returns
// them with the position of each element. what names the elements in
// messages ("lever", "test").
func (c *checker) names(t *value, key, where, what string) ([]string, []pos) {
	v := t.fields[key]
	if v == nil {
		return nil, nil
	}
	if v.kind != unstable.Array {
		hint := ""
		if v.kind == unstable.String {
			hint = fmt.Sprintf("; write %s = [%q]", key, v.text)
		}
		c.errorf(v.valueAt, "%s must be an array of strings, not %s%s", where, v.describe(), hint)
		return nil, nil
	}
	var out []string
	var at []pos
	seen := map[string]pos{}
	for _, item := range v.items {
		if item.kind != unstable.String {
			c.errorf(item.valueAt, "%s must hold only strings; this element is %s", where, item.describe())
			continue
		}
		name := strings.TrimSpace(item.text)
		if name == "" {
			c.errorf(item.valueAt, "%s has an empty %s; remove it or fill it in", where, what)
			continue
		}
		if first, dup := seen[name]; dup {
			c.errorf(item.valueAt, "%s lists %s %q twice (first at %d:%d); remove one", where, what, name, first.line, first.col)
			continue
		}
		seen[name] = item.valueAt
		out = append(out, name)
		at = append(at, item.valueAt)
	}
	return out, at
}

// knownKeys reports every key of t that is not in known.
func (c *checker) knownKeys(t *value, known []string, where string) {
	sortedKnown := slices.Sorted(slices.Values(known))
	for _, k := range t.keys {
		if slices.Contains(known, k) {
			continue
		}
		hint := suggest(k, known)
		if k == "schema" && where != "at the top level" {
			hint = "; schema belongs at the top of the file, before any [table]"
		}
		if k == "not_provided" || k == "revisit_when" {
			hint = "; only the release tier can be not provided"
		}
		in := "in " + where
		if where == "at the top level" {
			in = where
		}
		c.errorf(t.fields[k].at, "unknown key %q %s (known keys: %s)%s", k, in, strings.Join(sortedKnown, ", "), hint)
	}
}

func oracleNames() []string {
	names := make([]string, len(oracles))
	for i, o := range oracles {
		names[i] = o.Name
	}
	return names
}

func listOrNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

// suggest returns "; did you mean "x"?" when a candidate is within a small
// edit distance of got, so a typo's fix is in the message.
func suggest(got string, candidates []string) string {
	best, bestD := "", 3
	for _, cand := range candidates {
		limit := min(2, max(1, len(cand)/4))
		if d := editDistance(got, cand); d <= limit && d < bestD {
			best, bestD = cand, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
