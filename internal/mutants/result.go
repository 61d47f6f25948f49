package mutants

import (
	"cmp"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
)

// Status is a mutant's outcome, as gremlins names it.
type Status string

// The outcomes of a mutant.
const (
	// Killed: a test failed with the mutation in place.
	Killed Status = "KILLED"
	// Lived: every test passed with the mutation in place: it survived.
	Lived Status = "LIVED"
	// TimedOut: the tests did not finish within the mutant's time bound
	// (the coverage run's time times the timeout coefficient).
	TimedOut Status = "TIMED OUT"
	// NotCovered: no test runs the mutated line; the mutant is not tried.
	NotCovered Status = "NOT COVERED"
	// NotViable: the mutation does not compile; it is no mutant at all.
	NotViable Status = "NOT VIABLE"
	// Skipped and Runnable come only from gremlins' diff and dry-run
	// modes, which mutants never uses; a result that has them is refused.
	skipped  Status = "SKIPPED"
	runnable Status = "RUNNABLE"
)

// Mutant is one mutation and its outcome.
type Mutant struct {
	// File is the mutated file from the module root, with forward slashes.
	File     string `json:"file"`
	Line     int    `json:"line"`
	Column   int    `json:"column"`
	Mutation string `json:"mutation"` // the mutation type, one of Types
	Status   Status `json:"status"`
	// Change is the mutation as a token swap, "`==` → `!=`"; empty when the
	// source no longer has the token at that place.
	Change string `json:"change,omitempty"`
	// Code is the mutated line of source, trimmed.
	Code string `json:"code,omitempty"`
	// Reason is why the registry accepts this survivor as equivalent.
	Reason string `json:"reason,omitempty"`
	// RegistryLine is the line of the accepting [[mutants.accepted]].
	RegistryLine int `json:"registry_line,omitempty"`
}

// Where is the mutant's file:line:column.
func (m Mutant) Where() string { return fmt.Sprintf("%s:%d:%d", m.File, m.Line, m.Column) }

// gremlinsOutput is the file gremlins unleash --output writes (v0.6.0).
type gremlinsOutput struct {
	GoModule string `json:"go_module"`
	Files    []struct {
		Name      string `json:"file_name"`
		Mutations []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
			Line   int    `json:"line"`
			Column int    `json:"column"`
		} `json:"mutations"`
	} `json:"files"`
}

// ParseOutput reads gremlins' --output file for the package in pkgDir
// ("./internal/faultlayer/lease", or "."), whose file names are relative to that
// directory, and returns its mutants with file names from the module root,
// sorted by place. Anything this version of gremlins would not write (an
// unknown status or type, a file outside the package, a position below 1)
// is an error: a misread result would misstate the kill rate.
func ParseOutput(data []byte, pkgDir string) ([]Mutant, error) {
	var out gremlinsOutput
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("read gremlins' output: %w", err)
	}
	base := path.Clean(strings.TrimPrefix(pkgDir, "./"))
	var ms []Mutant
	for _, f := range out.Files {
		name := path.Clean(f.Name)
		if f.Name == "" || path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") || !strings.HasSuffix(name, ".go") {
			return nil, fmt.Errorf("read gremlins' output: file %q is not a Go file of %s", f.Name, pkgDir)
		}
		file := path.Join(base, name)
		for _, m := range f.Mutations {
			st := Status(m.Status)
			switch {
			case !slices.Contains([]Status{Killed, Lived, TimedOut, NotCovered, NotViable}, st):
				return nil, fmt.Errorf("read gremlins' output: %s:%d:%d has status %q, which mutants does not know (gremlins v0.6.0 is the version it reads)", file, m.Line, m.Column, m.Status)
			case !slices.Contains(Types, m.Type):
				return nil, fmt.Errorf("read gremlins' output: %s:%d:%d has mutation type %q, which mutants does not know", file, m.Line, m.Column, m.Type)
			case m.Line < 1 || m.Column < 1:
				return nil, fmt.Errorf("read gremlins' output: %s has a mutant at line %d, column %d", file, m.Line, m.Column)
			}
			ms = append(ms, Mutant{File: file, Line: m.Line, Column: m.Column, Mutation: m.Type, Status: st})
		}
	}
	sortMutants(ms)
	return ms, nil
}

func sortMutants(ms []Mutant) {
	slices.SortStableFunc(ms, func(a, b Mutant) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column), cmp.Compare(a.Mutation, b.Mutation))
	})
}

// Counts are a package's (or a run's) mutants by outcome. A survivor the
// registry accepts counts as Accepted, not as Survived.
type Counts struct {
	Killed     int `json:"killed"`
	Survived   int `json:"survived"`
	TimedOut   int `json:"timed_out"`
	NotCovered int `json:"not_covered"`
	NotViable  int `json:"not_viable"`
	Accepted   int `json:"accepted"`
}

// Tried is the number of covered mutants the rate is taken over: killed,
// survived and timed out. Accepted survivors, not-covered and not-viable
// mutants are left out.
func (c Counts) Tried() int { return c.Killed + c.Survived + c.TimedOut }

// Rate is the kill rate of covered mutants in percent: killed and timed
// out over killed + survived + timed out. A mutant whose tests do not
// finish within their bound counts as caught: in CI go test's own -timeout
// would fail it; the timed-out mutants are listed for a look all the same.
// ok is false when no covered mutant was tried.
func (c Counts) Rate() (rate float64, ok bool) {
	if c.Tried() == 0 {
		return 0, false
	}
	return 100 * float64(c.Killed+c.TimedOut) / float64(c.Tried()), true
}

func (c *Counts) add(o Counts) {
	c.Killed += o.Killed
	c.Survived += o.Survived
	c.TimedOut += o.TimedOut
	c.NotCovered += o.NotCovered
	c.NotViable += o.NotViable
	c.Accepted += o.Accepted
}

// Summary is one package's mutants, counted and judged against the
// registry's accepted survivors.
type Summary struct {
	Counts    Counts   `json:"counts"`
	Survivors []Mutant `json:"survivors"`
	TimedOut  []Mutant `json:"timed_out,omitempty"`
	Accepted  []Mutant `json:"accepted,omitempty"`
	// used marks, by index into the accepted entries given, those that
	// matched a survivor.
	used []bool
}

// Summarize counts ms and moves each survivor an accepted entry matches
// out of the survivors, with the entry's reason.
func Summarize(ms []Mutant, accepted []Accepted) Summary {
	s := Summary{Survivors: []Mutant{}, used: make([]bool, len(accepted))}
	for _, m := range ms {
		switch m.Status {
		case Killed:
			s.Counts.Killed++
		case TimedOut:
			s.Counts.TimedOut++
			s.TimedOut = append(s.TimedOut, m)
		case NotCovered:
			s.Counts.NotCovered++
		case NotViable:
			s.Counts.NotViable++
		case Lived:
			i := slices.IndexFunc(accepted, func(a Accepted) bool { return a.Matches(m.File, m.Line, m.Column, m.Mutation) })
			if i < 0 {
				s.Counts.Survived++
				s.Survivors = append(s.Survivors, m)
				continue
			}
			s.used[i] = true
			m.Reason, m.RegistryLine = accepted[i].Reason, accepted[i].At
			s.Counts.Accepted++
			s.Accepted = append(s.Accepted, m)
		}
	}
	return s
}
