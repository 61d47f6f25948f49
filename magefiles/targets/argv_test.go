package targets

import (
	"slices"
	"strings"
	"testing"
)

// TestFoldArgs: each documented form reaches its target in the one
// spelling Mage parses, and nothing else on the command line changes.
func TestFoldArgs(t *testing.T) {
	for _, tt := range []struct {
		name string
		argv []string
		want []string
	}{
		{"patterns after mutants", []string{"mage", "mutants", "./a", "./b/..."}, []string{"mage", "mutants", "-packages=./a,./b/..."}},
		{"the module root", []string{"mage", "mutants", "."}, []string{"mage", "mutants", "-packages=."}},
		{"an import path", []string{"mage", "mutants", "example.com/m/x"}, []string{"mage", "mutants", "-packages=example.com/m/x"}},
		{"Mage's flags first, a target after", []string{"mage", "-v", "-t", "5m", "Mutants", "./a", "validate"}, []string{"mage", "-v", "-t", "5m", "Mutants", "-packages=./a", "validate"}},
		{"mutants with no patterns", []string{"mage", "mutants"}, []string{"mage", "mutants"}},
		{"the -packages option itself", []string{"mage", "mutants", "-packages=./a"}, []string{"mage", "mutants", "-packages=./a"}},
		{"another target's argument", []string{"mage", "contested", "ledger.store"}, []string{"mage", "contested", "ledger.store"}},
		{"a target after mutants", []string{"mage", "mutants", "validate"}, []string{"mage", "mutants", "validate"}},
		{"merge dirs", []string{"mage", "program-gate", "-merge", "a", "b", "c"}, []string{"mage", "program-gate", "-merge=a\nb\nc"}},
		{"merge then a flag", []string{"mage", "-v", "program-gate", "-merge", "a", "-x"}, []string{"mage", "-v", "program-gate", "-merge=a", "-x"}},
		{"merge with no dir", []string{"mage", "program-gate", "-merge"}, []string{"mage", "program-gate", "-merge="}},
		{"merge already folded", []string{"mage", "program-gate", "-merge=a"}, []string{"mage", "program-gate", "-merge=a"}},
		{"plain program-gate", []string{"mage", "program-gate"}, []string{"mage", "program-gate"}},
		{"shard with a space", []string{"mage", "validate", "-shard", "2/3"}, []string{"mage", "validate", "-shard=2/3"}},
		{"shard with =", []string{"mage", "validate", "-shard=2/3"}, []string{"mage", "validate", "-shard=2/3"}},
		{"plain validate", []string{"mage", "validate"}, []string{"mage", "validate"}},
		{"a plan with a space", []string{"mage", "validate", "-plan", "test-results/plan.json"}, []string{"mage", "validate", "-plan=test-results/plan.json"}},
		{"a plan after -full", []string{"mage", "validate", "-full", "-plan", "p.json"}, []string{"mage", "validate", "-full", "-plan=p.json"}},
		{"a shard and a plan", []string{"mage", "validate", "-shard", "1/2", "-plan", "p.json"}, []string{"mage", "validate", "-shard=1/2", "-plan=p.json"}},
		{"a plan with =", []string{"mage", "validate", "-plan=p.json"}, []string{"mage", "validate", "-plan=p.json"}},
		{"plan since a branch", []string{"mage", "plan", "-since", "main"}, []string{"mage", "plan", "-since=main"}},
		{"plan -author, then since", []string{"mage", "plan", "-author", "-since", "v1.2"}, []string{"mage", "plan", "-author", "-since=v1.2"}},
		{"plan -all", []string{"mage", "plan", "-all"}, []string{"mage", "plan", "-all"}},
		{"a plan target after validate", []string{"mage", "validate", "plan"}, []string{"mage", "validate", "plan"}},
		{"history of a test", []string{"mage", "history", "TestC"}, []string{"mage", "history", "-test=TestC"}},
		{"history of every test", []string{"mage", "history"}, []string{"mage", "history"}},
		{"history with flags", []string{"mage", "history", "-last=5"}, []string{"mage", "history", "-last=5"}},
		{"arbitrate -rerun before its test", []string{"mage", "arbitrate", "-rerun", "TestX/reset"}, []string{"mage", "arbitrate", "TestX/reset", "-rerun"}},
		{"arbitrate -rerun after its test", []string{"mage", "arbitrate", "TestX/reset", "-rerun"}, []string{"mage", "arbitrate", "TestX/reset", "-rerun"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := foldArgs(tt.argv); !slices.Equal(got, tt.want) {
				t.Errorf("foldArgs(%q) = %q, want %q", tt.argv, got, tt.want)
			}
		})
	}
	if got := splitMerge("a\nb\n\nc"); strings.Join(got, ",") != "a,b,c" {
		t.Errorf("splitMerge = %q", got)
	}
}
