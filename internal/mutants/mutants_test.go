package mutants

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestParseOutputReadsGremlins reads two files gremlins v0.6.0 wrote: one
// of the fixture module in testdata/fx (every outcome but not viable, a
// subdirectory), one of this repository's contested/verdict.
func TestParseOutputReadsGremlins(t *testing.T) {
	ms, err := ParseOutput(readTestdata(t, "gremlins-fx.json"), "./x/fx")
	if err != nil {
		t.Fatal(err)
	}
	want := []Mutant{
		{File: "x/fx/fx.go", Line: 7, Column: 7, Mutation: "CONDITIONALS_BOUNDARY", Status: Lived},
		{File: "x/fx/fx.go", Line: 7, Column: 7, Mutation: "CONDITIONALS_NEGATION", Status: Killed},
		{File: "x/fx/fx.go", Line: 10, Column: 7, Mutation: "CONDITIONALS_BOUNDARY", Status: Lived},
		{File: "x/fx/fx.go", Line: 10, Column: 7, Mutation: "CONDITIONALS_NEGATION", Status: Killed},
		{File: "x/fx/fx.go", Line: 17, Column: 39, Mutation: "ARITHMETIC_BASE", Status: Killed},
		{File: "x/fx/fx.go", Line: 17, Column: 45, Mutation: "ARITHMETIC_BASE", Status: Killed},
		{File: "x/fx/fx.go", Line: 22, Column: 16, Mutation: "CONDITIONALS_NEGATION", Status: Killed},
		{File: "x/fx/fx.go", Line: 22, Column: 23, Mutation: "INCREMENT_DECREMENT", Status: TimedOut},
		{File: "x/fx/fx.go", Line: 28, Column: 38, Mutation: "CONDITIONALS_BOUNDARY", Status: NotCovered},
		{File: "x/fx/fx.go", Line: 28, Column: 38, Mutation: "CONDITIONALS_NEGATION", Status: NotCovered},
		{File: "x/fx/sub/sub.go", Line: 3, Column: 30, Mutation: "ARITHMETIC_BASE", Status: NotCovered},
		{File: "x/fx/sub/sub.go", Line: 3, Column: 30, Mutation: "INVERT_NEGATIVES", Status: NotCovered},
	}
	if d := cmp.Diff(want, ms); d != "" {
		t.Errorf("fixture (-want +got):\n%s", d)
	}

	ms, err = ParseOutput(readTestdata(t, "gremlins-verdict.json"), "./contested/verdict")
	if err != nil {
		t.Fatal(err)
	}
	s := Summarize(ms, nil)
	if s.Counts != (Counts{Killed: 22, NotCovered: 1}) || ms[0].File != "contested/verdict/verdict.go" {
		t.Errorf("verdict: %+v, first %+v; want 22 killed, 1 not covered in contested/verdict/verdict.go", s.Counts, ms[0])
	}
	if root, err := ParseOutput([]byte(`{"files":[{"file_name":"stock.go","mutations":[{"type":"ARITHMETIC_BASE","status":"LIVED","line":3,"column":4}]}]}`), "."); err != nil || root[0].File != "stock.go" {
		t.Errorf("the module root's package: %+v, %v; want stock.go", root, err)
	}
}

func TestParseOutputRefusesWhatItCannotRead(t *testing.T) {
	mutation := func(file, typ, status string, line int) string {
		return `{"files":[{"file_name":"` + file + `","mutations":[{"type":"` + typ + `","status":"` + status + `","line":` + strconv.Itoa(line) + `,"column":3}]}]}`
	}
	tests := []struct {
		name, data, want string
	}{
		{"not JSON", `{"files":`, "read gremlins' output: unexpected end of JSON input"},
		{"a dry run's status", mutation("a.go", "ARITHMETIC_BASE", "RUNNABLE", 3), `a.go:3:3 has status "RUNNABLE", which mutants does not know`},
		{"a diff run's status", mutation("a.go", "ARITHMETIC_BASE", "SKIPPED", 3), `has status "SKIPPED"`},
		{"an unknown type", mutation("a.go", "SWAP_EVERYTHING", "KILLED", 3), `has mutation type "SWAP_EVERYTHING"`},
		{"line 0", mutation("a.go", "ARITHMETIC_BASE", "KILLED", 0), "has a mutant at line 0, column 3"},
		{"a file above the package", mutation("../a.go", "ARITHMETIC_BASE", "KILLED", 3), `file "../a.go" is not a Go file of ./p`},
		{"an absolute file", mutation("/etc/a.go", "ARITHMETIC_BASE", "KILLED", 3), `file "/etc/a.go" is not a Go file`},
		{"not a Go file", mutation("a.txt", "ARITHMETIC_BASE", "KILLED", 3), `file "a.txt" is not a Go file`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := ParseOutput([]byte(tt.data), "./p")
			if err == nil || !strings.Contains(err.Error(), tt.want) || ms != nil {
				t.Errorf("ParseOutput = %v, %v; want an error containing %q", ms, err, tt.want)
			}
		})
	}
}

func TestCountsRate(t *testing.T) {
	tests := []struct {
		name   string
		c      Counts
		want   float64
		wantOK bool
	}{
		{"nothing tried", Counts{NotCovered: 4, NotViable: 2, Accepted: 1}, 0, false},
		{"all killed", Counts{Killed: 7}, 100, true},
		{"one survivor in ten", Counts{Killed: 9, Survived: 1}, 90, true},
		{"a time-out is caught", Counts{Killed: 8, TimedOut: 1, Survived: 1}, 90, true},
		{"accepted, not covered and not viable are left out", Counts{Killed: 3, Survived: 1, Accepted: 5, NotCovered: 9, NotViable: 2}, 75, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.c.Rate()
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("Rate() = %v, %v; want %v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestSummarizeAcceptsOnlyTheSurvivorsTheRegistryNames(t *testing.T) {
	ms, err := ParseOutput(readTestdata(t, "gremlins-fx.json"), ".")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		accepted  []Accepted
		counts    Counts
		survivors []string
		accepts   []string
		used      []bool
	}{
		{"none accepted", nil,
			Counts{Killed: 5, Survived: 2, TimedOut: 1, NotCovered: 4},
			[]string{"fx.go:7:7", "fx.go:10:7"}, nil, []bool{}},
		{"one by line and type", []Accepted{{File: "fx.go", Line: 10, Mutation: "CONDITIONALS_BOUNDARY", Reason: "v == hi returns hi either way", At: 40}},
			Counts{Killed: 5, Survived: 1, TimedOut: 1, NotCovered: 4, Accepted: 1},
			[]string{"fx.go:7:7"}, []string{"fx.go:10:7"}, []bool{true}},
		{"a killed mutant is never accepted", []Accepted{{File: "fx.go", Line: 22, Reason: "r"}},
			Counts{Killed: 5, Survived: 2, TimedOut: 1, NotCovered: 4},
			[]string{"fx.go:7:7", "fx.go:10:7"}, nil, []bool{false}},
		{"another file's line", []Accepted{{File: "sub/sub.go", Line: 7, Reason: "r"}},
			Counts{Killed: 5, Survived: 2, TimedOut: 1, NotCovered: 4},
			[]string{"fx.go:7:7", "fx.go:10:7"}, nil, []bool{false}},
		{"a type on any line", []Accepted{{File: "fx.go", Mutation: "CONDITIONALS_BOUNDARY", Reason: "r"}},
			Counts{Killed: 5, TimedOut: 1, NotCovered: 4, Accepted: 2},
			nil, []string{"fx.go:7:7", "fx.go:10:7"}, []bool{true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Summarize(ms, tt.accepted)
			if s.Counts != tt.counts {
				t.Errorf("counts %+v, want %+v", s.Counts, tt.counts)
			}
			if got := wheres(s.Survivors); !slices.Equal(got, tt.survivors) {
				t.Errorf("survivors %v, want %v", got, tt.survivors)
			}
			if got := wheres(s.Accepted); !slices.Equal(got, tt.accepts) {
				t.Errorf("accepted %v, want %v", got, tt.accepts)
			}
			if !slices.Equal(s.used, tt.used) {
				t.Errorf("used %v, want %v", s.used, tt.used)
			}
			for _, a := range s.Accepted {
				if a.Reason == "" || a.RegistryLine != tt.accepted[0].At {
					t.Errorf("accepted %s without the entry's reason and line: %+v", a.Where(), a)
				}
			}
			if got := wheres(s.TimedOut); !slices.Equal(got, []string{"fx.go:22:23"}) {
				t.Errorf("timed out %v", got)
			}
		})
	}
}

func wheres(ms []Mutant) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Where())
	}
	return out
}

func TestJudge(t *testing.T) {
	pkg := func(c Counts, err string) PackageResult {
		return PackageResult{Target: Target{Dir: "./p"}, Summary: Summary{Counts: c}, Error: err}
	}
	tests := []struct {
		name      string
		threshold float64
		pkgs      []PackageResult
		passed    bool
		reason    string
		rate      float64 // -1: no rate
	}{
		{"no threshold passes a low rate", 0, []PackageResult{pkg(Counts{Killed: 1, Survived: 9}, "")}, true, "", 10},
		{"at the threshold", 90, []PackageResult{pkg(Counts{Killed: 8, Survived: 1}, ""), pkg(Counts{Killed: 1}, "")}, true, "", 90},
		{"just below it", 90, []PackageResult{pkg(Counts{Killed: 898, Survived: 101}, ""), pkg(Counts{Killed: 0, TimedOut: 1}, "")}, false,
			"kill rate 89.9% of covered mutants is below the threshold 90% (101 survived, 1 timed out)", 89.9},
		{"an impossible threshold", 100, []PackageResult{pkg(Counts{Killed: 99, Survived: 1, Accepted: 3}, "")}, false, "kill rate 99% of covered mutants is below the threshold 100%", 99},
		{"accepted survivors do not count", 100, []PackageResult{pkg(Counts{Killed: 10, Accepted: 3, NotCovered: 40}, "")}, true, "", 100},
		{"nothing tried under a threshold", 50, []PackageResult{pkg(Counts{NotCovered: 3}, "")}, false, "no covered mutant was tried", -1},
		{"a package not measured", 0, []PackageResult{pkg(Counts{Killed: 3}, ""), pkg(Counts{}, "gremlins failed (exit status 1)\nFAIL x")}, false, "./p could not be measured: gremlins failed (exit status 1)", 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Report{Threshold: tt.threshold, Packages: tt.pkgs}
			r.Judge()
			if r.Passed != tt.passed || (tt.reason == "") != (len(r.Reasons) == 0) || tt.reason != "" && !strings.Contains(strings.Join(r.Reasons, "; "), tt.reason) {
				t.Errorf("passed %v, reasons %q; want %v, %q", r.Passed, r.Reasons, tt.passed, tt.reason)
			}
			switch {
			case tt.rate < 0 && r.Rate != nil:
				t.Errorf("rate %v, want none", *r.Rate)
			case tt.rate >= 0 && (r.Rate == nil || *r.Rate < tt.rate-0.01 || *r.Rate > tt.rate+0.01):
				t.Errorf("rate %v, want %v", r.Rate, tt.rate)
			}
		})
	}
}

func TestStaleAcceptedEntries(t *testing.T) {
	accepted := []Accepted{
		{File: "a/x.go", Line: 1, Reason: "used"},
		{File: "a/y.go", Line: 2, Reason: "in a mutated package, matched nothing"},
		{File: "a/b/z.go", Line: 3, Reason: "in a package below, not mutated"},
		{File: "c/w.go", Line: 4, Reason: "in a package not mutated"},
		{File: "root.go", Line: 5, Reason: "in the root package, mutated"},
	}
	got := stale(accepted, []bool{true}, []Target{{Dir: "./a"}, {Dir: "."}})
	if d := cmp.Diff([]Accepted{accepted[1], accepted[4]}, got); d != "" {
		t.Errorf("stale (-want +got):\n%s", d)
	}
}

func TestDescribeNamesTheSwap(t *testing.T) {
	src := []byte("package p\n\nfunc f(a, b int) bool {\n\treturn a <= b && a-1 != b*2 || -a > 0\n}\n\tfor i := 0; i < 3; i++ {\n")
	tests := []struct {
		line, col       int
		mutation        string
		change, wantTok string
	}{
		{4, 11, "CONDITIONALS_BOUNDARY", "`<=` → `<`", ""},
		{4, 11, "CONDITIONALS_NEGATION", "`<=` → `>`", ""},
		{4, 20, "ARITHMETIC_BASE", "`-` → `+`", ""},
		{4, 23, "CONDITIONALS_NEGATION", "`!=` → `==`", ""},
		{4, 27, "ARITHMETIC_BASE", "`*` → `/`", ""},
		{4, 33, "INVERT_NEGATIVES", "`-` → `+`", ""},
		{4, 36, "CONDITIONALS_BOUNDARY", "`>` → `>=`", ""},
		{6, 22, "INCREMENT_DECREMENT", "`++` → `--`", ""},
		{4, 2, "CONDITIONALS_NEGATION", "", "no such token there: the code moved"},
		{40, 2, "CONDITIONALS_NEGATION", "", "no such line"},
	}
	for _, tt := range tests {
		m := Mutant{Line: tt.line, Column: tt.col, Mutation: tt.mutation}
		describe(&m, src)
		if m.Change != tt.change {
			t.Errorf("%d:%d %s: change %q, want %q", tt.line, tt.col, tt.mutation, m.Change, tt.change)
		}
	}
	m := Mutant{Line: 4, Column: 11, Mutation: "CONDITIONALS_BOUNDARY"}
	describe(&m, src)
	if m.Code != "return a <= b && a-1 != b*2 || -a > 0" {
		t.Errorf("code %q", m.Code)
	}
}

// TestReclassifyFindsStringConcatenations type-checks the fixture module:
// the two + of "n" + "=" + ... do not compile as -, so gremlins' kills of
// them are not viable; a numeric + stays killed.
func TestReclassifyFindsStringConcatenations(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("testdata", "fx"))
	if err != nil {
		t.Fatal(err)
	}
	ms := []Mutant{
		{File: "fx.go", Line: 17, Column: 39, Mutation: "ARITHMETIC_BASE", Status: Killed},
		{File: "fx.go", Line: 17, Column: 45, Mutation: "ARITHMETIC_BASE", Status: Killed},
		{File: "fx.go", Line: 31, Column: 35, Mutation: "ARITHMETIC_BASE", Status: Killed},
		{File: "fx.go", Line: 17, Column: 39, Mutation: "ARITHMETIC_BASE", Status: Lived},
		{File: "fx.go", Line: 7, Column: 7, Mutation: "CONDITIONALS_NEGATION", Status: Killed},
	}
	n, err := Reclassify(context.Background(), dir, Target{Dir: ".", ImportPath: "example.com/fx"}, ms)
	if err != nil {
		t.Fatal(err)
	}
	want := []Status{NotViable, NotViable, Killed, Lived, Killed}
	if got := statuses(ms); n != 2 || !slices.Equal(got, want) {
		t.Errorf("reclassified %d: %v, want 2: %v", n, got, want)
	}
	none := []Mutant{{File: "fx.go", Line: 7, Column: 7, Mutation: "CONDITIONALS_NEGATION", Status: Killed}}
	if n, err := Reclassify(context.Background(), "/nonexistent", Target{ImportPath: "example.com/fx"}, none); n != 0 || err != nil {
		t.Errorf("no candidate: %d, %v; want 0 without type-checking", n, err)
	}
}

func statuses(ms []Mutant) []Status {
	var out []Status
	for _, m := range ms {
		out = append(out, m.Status)
	}
	return out
}

func TestResolve(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("testdata", "fx"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	got, err := Resolve(ctx, dir, []string{"./...", "."})
	if err != nil {
		t.Fatal(err)
	}
	want := []Target{
		{Dir: ".", ImportPath: "example.com/fx", Skip: []string{"tagged.go"}},
		{Dir: "./sub", ImportPath: "example.com/fx/sub"},
	}
	if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("Resolve ./... . (-want +got):\n%s", d)
	}
	for _, bad := range []struct{ pattern, want string }{
		{"./nope", "directory not found"},
		{"./nope/...", "no such file or directory"},
		{"./docs/...", "./docs/... matches no package"},
		{"./docs", "no Go files"},
		{"fmt", "fmt is not a package of the module"},
		{"-x", `"-x" is a flag`},
	} {
		if _, err := Resolve(ctx, dir, []string{bad.pattern}); !errors.Is(err, ErrPackages) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Resolve %s: %v, want ErrPackages saying %q", bad.pattern, err, bad.want)
		}
	}
}

func TestGremlinsArgsSetEverything(t *testing.T) {
	opts := Options{Dir: "/m", Workers: 2, TimeoutCoefficient: 3, Work: "mutants/run"}
	args := gremlinsArgs("/r", opts, Target{Dir: "./a/b", Skip: []string{"x.y.go"}}, "mutants/run/1-a_b.json")
	want := "tool gremlins unleash --config /r/mutants/run/gremlins.yaml --output /r/mutants/run/1-a_b.json --workers 2 --timeout-coefficient 3 --exclude-files / --exclude-files ^x\\.y\\.go$ " +
		"--arithmetic-base=true --conditionals-boundary=true --conditionals-negation=true --increment-decrement=true --invert-assignments=false --invert-bitwise=false " +
		"--invert-bwassign=false --invert-logical=false --invert-loopctrl=false --invert-negatives=true --remove-self-assignments=false /m/a/b"
	if got := strings.Join(args, " "); got != want {
		t.Errorf("args:\n got  %s\n want %s", got, want)
	}
}

func TestProgressRelaysTestedMutants(t *testing.T) {
	var out strings.Builder
	p := progress{out: &out, pkg: "./p", coefficient: 3}
	for _, l := range []string{
		"Starting...",
		"Gathering coverage... done in 2.5s",
		"      KILLED CONDITIONALS_NEGATION at lease.go:63:41",
		" NOT COVERED ARITHMETIC_BASE at lease.go:70:3",
		"       LIVED CONDITIONALS_BOUNDARY at lease.go:80:9",
		"   TIMED OUT INCREMENT_DECREMENT at lease.go:99:13",
		"Killed: 1, Lived: 1, Not covered: 1",
	} {
		p.line(l)
	}
	want := "mutants: ./p: coverage gathered in 2.5s; each mutant's tests may take 7.5s\n" +
		"mutants: ./p: #1 KILLED CONDITIONALS_NEGATION at lease.go:63:41\n" +
		"mutants: ./p: #2 SURVIVED CONDITIONALS_BOUNDARY at lease.go:80:9\n" +
		"mutants: ./p: #3 TIMED OUT INCREMENT_DECREMENT at lease.go:99:13\n"
	if out.String() != want || p.coverage.Seconds() != 2.5 {
		t.Errorf("progress:\n%s\nwant:\n%s", out.String(), want)
	}
}
