package mutants

import "strconv"

// Types are the mutation types of go-gremlins/gremlins v0.6.0, as it names
// them; Mutations are the ones mutants enables.
var Types = []string{
	"ARITHMETIC_BASE", "CONDITIONALS_BOUNDARY", "CONDITIONALS_NEGATION",
	"INCREMENT_DECREMENT", "INVERT_ASSIGNMENTS", "INVERT_BITWISE",
	"INVERT_BWASSIGN", "INVERT_LOGICAL", "INVERT_LOOPCTRL", "INVERT_NEGATIVES",
	"REMOVE_SELF_ASSIGNMENTS",
}

// Accepted names one surviving mutant (or several, when it leaves line or
// mutation out) that no test can tell from the original code, and says
// why: an entry of the registry's [[mutants.accepted]].
type Accepted struct {
	// File is the mutated file, relative to the module root, with forward
	// slashes: "internal/gate/contract/battery.go".
	File string `json:"file"`
	// Line is the mutant's line; 0 matches any line of File.
	Line int `json:"line,omitempty"`
	// Column is the mutant's column; 0 matches any column. It needs Line.
	Column int `json:"column,omitempty"`
	// Mutation is the mutation type (Types); "" matches any type.
	Mutation string `json:"mutation,omitempty"`
	// Reason says why no test can tell the mutant from the original.
	Reason string `json:"reason"`
	// At is the line of the entry in the registry file.
	At int `json:"registry_line"`
}

// Matches reports whether the mutant of type mutation at file:line:column
// is the one this entry accepts.
func (a Accepted) Matches(file string, line, column int, mutation string) bool {
	return a.File == file &&
		(a.Line == 0 || a.Line == line) &&
		(a.Column == 0 || a.Column == column) &&
		(a.Mutation == "" || a.Mutation == mutation)
}

// Where names the entry as file:line:column with its mutation, leaving out
// what it leaves out.
func (a Accepted) Where() string {
	s := a.File
	if a.Line > 0 {
		s += ":" + strconv.Itoa(a.Line)
	}
	if a.Column > 0 {
		s += ":" + strconv.Itoa(a.Column)
	}
	if a.Mutation != "" {
		s += " " + a.Mutation
	}
	return s
}
