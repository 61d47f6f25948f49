package registry

import (
	"fmt"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/contested/contested/internal/mutants"
)

// Mutants is the optional [mutants] table: what `mage mutants` mutates and
// the kill rate it insists on.
type Mutants struct {
	// Threshold is the lowest kill rate of covered mutants, in percent
	// (0 to 100), below which `mage mutants` exits 1. 0 when the table does
	// not set it: mutants then reports and exits 0.
	Threshold float64
	// Packages are the package patterns to mutate, relative to the module
	// root ("./internal/faultlayer/lease"); empty means the packages the surfaces
	// name.
	Packages []string
	// Accepted are surviving mutants judged equivalent to the code they
	// mutate: listed, never counted against the kill rate.
	Accepted []AcceptedMutant
	// Line is the line of the [mutants] header; 0 when there is none.
	Line int

	packagesAt []pos
}

// AcceptedMutant names one surviving mutant (or several, when it leaves
// line or mutation out) and says why it is equivalent; mutants.Accepted
// has its fields and its matching.
type AcceptedMutant = mutants.Accepted

// MutationTypes are the mutation types an accepted entry may name: those of
// go-gremlins/gremlins, the tool `mage mutants` runs (mutants.Types).
var MutationTypes = mutants.Types

var (
	mutantsKeys  = []string{"threshold", "packages", "accepted"}
	acceptedKeys = []string{"file", "line", "column", "mutation", "reason"}
)

// mutants reads the optional [mutants] table:
//
//	[mutants]
//	threshold = 90
//	packages = ["./internal/faultlayer/lease"]
//	[[mutants.accepted]]
//	file = "internal/contract/battery.go"
//	line = 42
//	mutation = "CONDITIONALS_NEGATION"
//	reason = "..."
func (c *checker) mutants(root *value) Mutants {
	t := c.table(root, "mutants", "[mutants]")
	if t == nil {
		return Mutants{}
	}
	m := Mutants{Line: t.at.line}
	c.knownKeys(t, mutantsKeys, "[mutants]")
	m.Threshold = c.threshold(t)
	m.Packages, m.packagesAt = c.names(t, "packages", "[mutants] packages", "package")
	for i, p := range m.Packages {
		if !relativePattern(p) {
			c.errorf(atOr(m.packagesAt, i, t.at), "[mutants] packages: %q is not a package of this module as go test takes it; write \".\" or a path from the module root such as \"./internal/faultlayer/lease\" (\"/...\" for the tree below it)", p)
		}
	}
	if v := t.fields["packages"]; v != nil && v.kind == unstable.Array && len(v.items) == 0 {
		c.errorf(v.at, "[mutants] packages is empty, so nothing would be mutated; list packages, or remove the key to mutate the packages the surfaces name")
	}
	m.Accepted = c.accepted(t)
	return m
}

// threshold reads [mutants] threshold: a percentage from 0 to 100.
func (c *checker) threshold(t *value) float64 {
	v := t.fields["threshold"]
	if v == nil {
		return 0
	}
	if v.kind != unstable.Integer && v.kind != unstable.Float {
		c.errorf(v.valueAt, "[mutants] threshold must be a number from 0 to 100 (the lowest kill rate, in percent, of covered mutants), not %s", v.describe())
		return 0
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(v.text, "_", ""), 64)
	if v.kind == unstable.Integer {
		var n int64
		n, err = strconv.ParseInt(v.text, 0, 64)
		f = float64(n)
	}
	if err != nil || math.IsNaN(f) || f < 0 || f > 100 {
		c.errorf(v.valueAt, "[mutants] threshold %s is not a percentage; write a number from 0 to 100, e.g. threshold = 90", v.text)
		return 0
	}
	return f
}

// relativePattern is true for "." and "./dir" patterns, with an optional
// "/..." suffix, that stay inside the module.
func relativePattern(p string) bool {
	if strings.ContainsAny(p, " \t\\") {
		return false
	}
	if p == "." || p == "./..." {
		return true
	}
	rest, ok := strings.CutPrefix(p, "./")
	if !ok || rest == "" {
		return false
	}
	rest = strings.TrimSuffix(rest, "/...")
	return path.Clean(rest) == rest && !slices.Contains(strings.Split(rest, "/"), "..")
}

// accepted reads [[mutants.accepted]].
func (c *checker) accepted(t *value) []AcceptedMutant {
	v := t.fields["accepted"]
	if v == nil || v.kind == unstable.Array && len(v.items) == 0 {
		return nil
	}
	if !v.isTableArray() {
		c.errorf(v.valueAt, "[mutants] accepted must be an array of tables, written [[mutants.accepted]] with file, line or mutation, and reason; not %s", v.describe())
		return nil
	}
	var out []AcceptedMutant
	first := map[string]int{}
	for n, it := range v.items {
		a, ok := c.acceptedEntry(it, n+1)
		if !ok {
			continue
		}
		key := a.Where()
		if prev, dup := first[key]; dup {
			c.errorf(it.at, "[[mutants.accepted]] #%d accepts %s, as the entry at line %d already does; remove one", n+1, key, prev)
			continue
		}
		first[key] = a.At
		out = append(out, a)
	}
	return out
}

// acceptedEntry reads one [[mutants.accepted]]; n is its 1-based index.
func (c *checker) acceptedEntry(t *value, n int) (AcceptedMutant, bool) {
	label := fmt.Sprintf("[[mutants.accepted]] #%d", n)
	c.knownKeys(t, acceptedKeys, "[[mutants.accepted]]")
	a := AcceptedMutant{At: t.at.line}
	ok := true
	file, fv := c.str(t, "file", label)
	file = strings.TrimSpace(file)
	switch {
	case fv == nil && t.fields["file"] == nil:
		c.errorf(t.at, "%s has no file; add file = \"<path from the module root>.go\", the file the surviving mutant is in", label)
		ok = false
	case fv == nil:
		ok = false
	case !strings.HasSuffix(file, ".go") || strings.HasSuffix(file, "_test.go") || strings.HasPrefix(file, "/") || !relativePattern("./"+file):
		c.errorf(fv.valueAt, "%s: file %q must be a Go source file (not a test) named from the module root with forward slashes, e.g. \"internal/contract/battery.go\"", label, file)
		ok = false
	default:
		a.File = file
	}
	var lineOK, colOK bool
	a.Line, lineOK = c.position(t, "line", label)
	a.Column, colOK = c.position(t, "column", label)
	ok = ok && lineOK && colOK
	if a.Column > 0 && a.Line == 0 && t.fields["line"] == nil {
		c.errorf(t.fields["column"].valueAt, "%s: column needs a line; add line = <the mutant's line>", label)
		ok = false
	}
	if mut, mv := c.str(t, "mutation", label); mv != nil {
		mut = strings.TrimSpace(mut)
		if !slices.Contains(MutationTypes, mut) {
			c.errorf(mv.valueAt, "%s: mutation %q is not a mutation type (types: %s)%s", label, mut, strings.Join(MutationTypes, ", "), suggest(mut, MutationTypes))
			ok = false
		}
		a.Mutation = mut
	}
	if t.fields["line"] == nil && t.fields["mutation"] == nil {
		c.errorf(t.at, "%s names no mutant: add line = <line> or mutation = \"<type>\" (or both), so it does not accept every survivor in %s", label, listOrNone([]string{a.File}))
		ok = false
	}
	a.Reason = c.reason(t, label)
	return a, ok && a.Reason != ""
}

// position reads an accepted entry's optional line or column: a whole
// number from 1. ok is false when it is written but unusable.
func (c *checker) position(t *value, key, label string) (n int, ok bool) {
	v := t.fields[key]
	if v == nil {
		return 0, true
	}
	if v.kind != unstable.Integer {
		c.errorf(v.valueAt, "%s: %s must be a whole number from 1 (the mutant's %s, as mutants prints it), not %s", label, key, key, v.describe())
		return 0, false
	}
	i, err := strconv.ParseInt(v.text, 0, 64)
	if err != nil || i < 1 || i > math.MaxInt32 {
		c.errorf(v.valueAt, "%s: %s must be a whole number from 1 (the mutant's %s, as mutants prints it), not %s", label, key, key, v.text)
		return 0, false
	}
	return int(i), true
}

// reason reads an accepted entry's reason: required, stated, and no
// placeholder, because it is the only record of why a survivor is fine.
func (c *checker) reason(t *value, label string) string {
	text, v := c.str(t, "reason", label)
	if v == nil {
		if t.fields["reason"] == nil {
			c.errorf(t.at, "%s has no reason; add reason = \"...\": why no test can tell this mutant from the original code", label)
		}
		return ""
	}
	trimmed := strings.TrimSpace(text)
	switch {
	case trimmed == "":
		c.errorf(v.valueAt, "%s: reason is empty; say why no test can tell this mutant from the original code", label)
		return ""
	case placeholders[strings.ToLower(strings.TrimRight(trimmed, "."))]:
		c.errorf(v.valueAt, "%s: reason %q is a placeholder; say why no test can tell this mutant from the original code", label, text)
		return ""
	}
	return trimmed
}

// MutantPackages returns the package patterns `mage mutants` mutates by
// default: [mutants] packages when the table lists them, otherwise the
// distinct package keys of the surfaces, in file order (a surface without
// one adds nothing). Empty when neither names a package.
func (r *Registry) MutantPackages() []string {
	if len(r.Mutants.Packages) > 0 {
		return slices.Clone(r.Mutants.Packages)
	}
	var out []string
	for _, s := range r.Surfaces {
		if s.Package != "" && !slices.Contains(out, s.Package) {
			out = append(out, s.Package)
		}
	}
	return out
}
