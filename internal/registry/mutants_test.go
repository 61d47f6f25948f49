package registry

import (
	"fmt"
	"slices"
	"testing"
)

func TestLoadRejectsABadMutantsTable(t *testing.T) {
	path := "testdata/bad-mutants.toml"
	reg, err := Load(path)
	if reg != nil {
		t.Errorf("Load returned a registry along with errors")
	}
	assertProblems(t, path, err, []problem{
		{"13:13", "[mutants] threshold 101 is not a percentage; write a number from 0 to 100"},
		{"14:25", `[mutants] packages: "ledger" is not a package of this module as go test takes it`},
		{"14:35", `[mutants] packages: "./../x" is not a package of this module`},
		{"14:45", `[mutants] packages lists package "./ledger" twice`},
		{"15:1", `unknown key "workers" in [mutants] (known keys: accepted, packages, threshold)`},
		{"19:8", "[[mutants.accepted]] #1: line must be a whole number from 1 (the mutant's line, as mutants prints it), not 0"},
		{"20:12", `[[mutants.accepted]] #1: mutation "CONDITIONAL_NEGATION" is not a mutation type (types: ARITHMETIC_BASE,`},
		{"21:10", `[[mutants.accepted]] #1: reason "TBD" is a placeholder`},
		{"23:1", "[[mutants.accepted]] #2 names no mutant: add line = <line> or mutation"},
		{"24:8", `[[mutants.accepted]] #2: file "/abs/store_test.go" must be a Go source file (not a test) named from the module root`},
		{"25:10", "[[mutants.accepted]] #2: column needs a line"},
		{"28:1", "[[mutants.accepted]] #3 names no mutant"},
		{"37:1", "[[mutants.accepted]] #5 accepts ledger/store.go:12, as the entry at line 32 already does; remove one"},
		{"41:1", `unknown key "linee" in [[mutants.accepted]] (known keys: column, file, line, mutation, reason); did you mean "line"?`},
	})
}

func TestMutantsTableTypes(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []problem
	}{
		{"threshold as a string", "[mutants]\nthreshold = \"90\"\n", []problem{{"2:13", "[mutants] threshold must be a number from 0 to 100 (the lowest kill rate, in percent, of covered mutants), not a string"}}},
		{"threshold below zero", "[mutants]\nthreshold = -1\n", []problem{{"2:13", "[mutants] threshold -1 is not a percentage"}}},
		{"threshold nan", "[mutants]\nthreshold = nan\n", []problem{{"2:13", "[mutants] threshold nan is not a percentage"}}},
		{"empty packages", "[mutants]\npackages = []\n", []problem{{"2:1", "[mutants] packages is empty, so nothing would be mutated"}}},
		{"packages as a string", "[mutants]\npackages = \"./x\"\n", []problem{{"2:12", `[mutants] packages must be an array of strings, not a string; write packages = ["./x"]`}}},
		{"accepted as a table", "[mutants]\naccepted = { file = \"a.go\" }\n", []problem{{"2:12", "[mutants] accepted must be an array of tables, written [[mutants.accepted]]"}}},
		{"accepted without file or reason", "[[mutants.accepted]]\nline = 3\n", []problem{
			{"1:1", "[[mutants.accepted]] #1 has no file"},
			{"1:1", "[[mutants.accepted]] #1 has no reason"},
		}},
		{"line as a string", "[[mutants.accepted]]\nfile = \"a.go\"\nline = \"3\"\nreason = \"r\"\n", []problem{{"3:8", "[[mutants.accepted]] #1: line must be a whole number from 1 (the mutant's line, as mutants prints it), not a string"}}},
		{"empty reason", "[[mutants.accepted]]\nfile = \"a.go\"\nline = 3\nreason = \" \"\n", []problem{{"4:10", "[[mutants.accepted]] #1: reason is empty"}}},
		{"a file above the module", "[[mutants.accepted]]\nfile = \"../a.go\"\nline = 3\nreason = \"r\"\n", []problem{{"2:8", `file "../a.go" must be a Go source file`}}},
		{"not a go file", "[[mutants.accepted]]\nfile = \"a.txt\"\nline = 3\nreason = \"r\"\n", []problem{{"2:8", `file "a.txt" must be a Go source file`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The table goes after the surface, so positions count from
			// the end of minimalDoc.
			doc := minimalDoc + tt.doc
			reg, err := Parse("m.toml", []byte(doc))
			if reg != nil {
				t.Errorf("Parse returned a registry along with errors")
			}
			want := make([]problem, len(tt.want))
			for i, p := range tt.want {
				want[i] = problem{shift(p.at, minimalDocLines), p.msg}
			}
			assertProblems(t, "m.toml", err, want)
		})
	}
}

func TestMutantsTableLoads(t *testing.T) {
	reg, err := Parse("m.toml", []byte(minimalDoc+`
[mutants]
threshold = 92.5
packages = [".", "./internal/faultlayer/lease", "./internal/..."]

[[mutants.accepted]]
file = "internal/contract/battery.go"
line = 12
column = 7
mutation = "CONDITIONALS_NEGATION"
reason = "  both branches count the same leg  "

[[mutants.accepted]]
file = "faultrecord/verify.go"
mutation = "INCREMENT_DECREMENT"
reason = "the counter is only compared with zero"
`))
	if err != nil {
		t.Fatal(err)
	}
	m := reg.Mutants
	if m.Threshold != 92.5 || !slices.Equal(m.Packages, []string{".", "./internal/faultlayer/lease", "./internal/..."}) || m.Line != minimalDocLines+2 {
		t.Errorf("threshold %v, packages %v, line %d", m.Threshold, m.Packages, m.Line)
	}
	want := []AcceptedMutant{
		{File: "internal/contract/battery.go", Line: 12, Column: 7, Mutation: "CONDITIONALS_NEGATION", Reason: "both branches count the same leg", At: minimalDocLines + 6},
		{File: "faultrecord/verify.go", Mutation: "INCREMENT_DECREMENT", Reason: "the counter is only compared with zero", At: minimalDocLines + 13},
	}
	if !slices.Equal(m.Accepted, want) {
		t.Errorf("accepted:\n got  %+v\n want %+v", m.Accepted, want)
	}
	if _, err := Parse("m.toml", []byte("schema = 1\nmutants = 90\n"+minimal)); err == nil || err.Error() != "m.toml:2:1: [mutants] must be a table, not an integer" {
		t.Errorf("mutants = 90: %v, want [mutants] must be a table at 2:1", err)
	}
	if none, err := Parse("m.toml", []byte(minimalDoc)); err != nil || none.Mutants.Threshold != 0 || none.Mutants.Packages != nil || none.Mutants.Line != 0 {
		t.Errorf("no [mutants] table: %+v, %v; want the zero table", none.Mutants, err)
	}
}

func TestAcceptedMutantMatches(t *testing.T) {
	const file, typ = "internal/contract/battery.go", "CONDITIONALS_NEGATION"
	tests := []struct {
		name     string
		a        AcceptedMutant
		file     string
		line     int
		col      int
		mutation string
		want     bool
	}{
		{"file, line, column and type", AcceptedMutant{File: file, Line: 12, Column: 7, Mutation: typ}, file, 12, 7, typ, true},
		{"another column", AcceptedMutant{File: file, Line: 12, Column: 7, Mutation: typ}, file, 12, 8, typ, false},
		{"another line", AcceptedMutant{File: file, Line: 12, Mutation: typ}, file, 13, 7, typ, false},
		{"another type", AcceptedMutant{File: file, Line: 12, Mutation: typ}, file, 12, 7, "CONDITIONALS_BOUNDARY", false},
		{"another file", AcceptedMutant{File: file, Line: 12}, "internal/contract/judge.go", 12, 7, typ, false},
		{"any type on the line", AcceptedMutant{File: file, Line: 12}, file, 12, 30, "ARITHMETIC_BASE", true},
		{"a type on any line", AcceptedMutant{File: file, Mutation: typ}, file, 99, 1, typ, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.a.Matches(tt.file, tt.line, tt.col, tt.mutation); got != tt.want {
				t.Errorf("Matches = %v, want %v", got, tt.want)
			}
		})
	}
	if got := (AcceptedMutant{File: file, Line: 12, Column: 7, Mutation: typ}).Where(); got != file+":12:7 "+typ {
		t.Errorf("Where = %q", got)
	}
}

// minimalDoc is a valid registry of minimalDocLines lines to which a test
// appends a [mutants] table.
const (
	minimalDoc      = "schema = 1\n" + minimal
	minimalDocLines = 10
)

// shift moves a "line:col" position down by n lines.
func shift(at string, n int) string {
	var line, col int
	if _, err := fmt.Sscanf(at, "%d:%d", &line, &col); err != nil {
		panic(err)
	}
	return fmt.Sprintf("%d:%d", line+n, col)
}

func TestMutantPackagesDefaultToTheSurfaces(t *testing.T) {
	surfaces := `schema = 1
[[surface]]
id = "a"
class = "store"
owner = "t"
behavior = "b"
oracle = "o"
legs = ["reset"]
tests = ["TestA"]
package = "./a"
[[surface]]
id = "b"
class = "store"
owner = "t"
behavior = "b"
oracle = "o"
legs = ["reset"]
tests = ["TestB"]
[[surface]]
id = "c"
class = "store"
owner = "t"
behavior = "b"
oracle = "o"
legs = ["reset"]
tests = ["TestC"]
package = "./a"
[[surface]]
id = "d"
class = "store"
owner = "t"
behavior = "b"
oracle = "o"
legs = ["reset"]
tests = ["TestD"]
package = "./d"
`
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{"the surfaces' packages, once each, in file order", surfaces, []string{"./a", "./d"}},
		{"the table's packages win", surfaces + "[mutants]\npackages = [\"./x\"]\n", []string{"./x"}},
		{"no surface names a package", minimalDoc, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg, err := Parse("m.toml", []byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			if got := reg.MutantPackages(); !slices.Equal(got, tt.want) {
				t.Errorf("MutantPackages = %v, want %v", got, tt.want)
			}
		})
	}
}
