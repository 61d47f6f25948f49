// Package pitfall is the catalog of failure modes a test plan walks for
// every claim at risk: the pitfalls that recur in public analyses of
// distributed systems, each with the claim categories it can falsify, the
// levers that can force it and the models that can check it. The catalog
// is data shipped with the tool (pitfalls.toml, embedded), read once.
package pitfall

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	toml "github.com/pelletier/go-toml/v2"
)

// Pitfall is one failure mode (see pitfalls.toml for what each field
// holds).
type Pitfall struct {
	ID          string   `toml:"id" json:"id"`
	Title       string   `toml:"title" json:"title"`
	Hypothesis  string   `toml:"hypothesis" json:"hypothesis"`
	Categories  []string `toml:"categories" json:"categories"`
	Classes     []string `toml:"classes" json:"classes,omitempty"`
	ClassReason string   `toml:"class_reason" json:"class_reason,omitempty"`
	Levers      []string `toml:"levers" json:"levers"`
	How         string   `toml:"how" json:"how"`
	Models      []string `toml:"models" json:"models"`
	Checker     string   `toml:"checker" json:"checker"`
	OracleWords []string `toml:"oracle_words" json:"oracle_words"`
	Workload    string   `toml:"workload" json:"workload"`
	Ambiguity   string   `toml:"ambiguity" json:"ambiguity"`
}

//go:embed pitfalls.toml
var data []byte

var load = sync.OnceValues(func() ([]Pitfall, error) { return Parse(data) })

// Catalog returns the shipped catalog, in file order. The slice is a copy.
// The catalog is checked by this package's tests, so a binary whose
// catalog does not load was never released: Catalog panics then.
func Catalog() []Pitfall {
	ps, err := load()
	if err != nil {
		panic(err)
	}
	return slices.Clone(ps)
}

// Lookup returns the pitfall with that id.
func Lookup(id string) (Pitfall, bool) {
	for _, p := range Catalog() {
		if p.ID == id {
			return p, true
		}
	}
	return Pitfall{}, false
}

// IDs returns the catalog's ids in file order.
func IDs() []string {
	var ids []string
	for _, p := range Catalog() {
		ids = append(ids, p.ID)
	}
	return ids
}

// Parse reads a catalog strictly: an unknown key, a pitfall without an id,
// hypothesis, categories or checker, or an id given twice is an error.
func Parse(b []byte) ([]Pitfall, error) {
	var doc struct {
		Pitfall []Pitfall `toml:"pitfall"`
	}
	dec := toml.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		var strict *toml.StrictMissingError
		if errors.As(err, &strict) {
			var keys []string
			for _, e := range strict.Errors {
				row, col := e.Position()
				keys = append(keys, fmt.Sprintf("%s at %d:%d", strings.Join(e.Key(), "."), row, col))
			}
			return nil, fmt.Errorf("read the pitfall catalog: unknown keys: %s", strings.Join(keys, ", "))
		}
		return nil, fmt.Errorf("read the pitfall catalog: %w", err)
	}
	seen := map[string]bool{}
	for i, p := range doc.Pitfall {
		switch {
		case p.ID == "" || strings.ContainsAny(p.ID, " \t/") || strings.ToLower(p.ID) != p.ID:
			return nil, fmt.Errorf("pitfall #%d: id %q is not a lower-case slug", i+1, p.ID)
		case seen[p.ID]:
			return nil, fmt.Errorf("pitfall %s is in the catalog twice", p.ID)
		case p.Title == "" || p.Hypothesis == "" || p.Checker == "" || p.How == "" || p.Workload == "" || p.Ambiguity == "":
			return nil, fmt.Errorf("pitfall %s lacks a title, hypothesis, checker, how, workload or ambiguity", p.ID)
		case len(p.Categories) == 0:
			return nil, fmt.Errorf("pitfall %s names no category it can falsify", p.ID)
		case len(p.Classes) > 0 && p.ClassReason == "":
			return nil, fmt.Errorf("pitfall %s limits its classes without a class_reason", p.ID)
		}
		seen[p.ID] = true
	}
	return doc.Pitfall, nil
}

// Applies reports whether p is a hypothesis against a claim of category
// on a surface of class, and, when it is not, why not.
func (p Pitfall) Applies(category, class string) (bool, string) {
	if !slices.Contains(p.Categories, category) {
		return false, fmt.Sprintf("it falsifies %s claims, and this one is %s %s claim", orList(p.Categories), article(category), category)
	}
	if len(p.Classes) > 0 && !slices.Contains(p.Classes, class) {
		return false, p.ClassReason + " (class " + class + ")"
	}
	return true, ""
}

// Sees reports whether an oracle, as the registry describes it, holds one
// of the words that show it checks what p breaks.
func (p Pitfall) Sees(oracle string) bool {
	low := strings.ToLower(oracle)
	for _, w := range p.OracleWords {
		if strings.Contains(low, w) {
			return true
		}
	}
	return false
}

// Forces returns the levers among legs that can force p, in the order of
// legs.
func (p Pitfall) Forces(legs []string) []string {
	var out []string
	for _, l := range legs {
		if slices.Contains(p.Levers, l) {
			out = append(out, l)
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

// orList joins words as "a, b or c".
func orList(words []string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}
