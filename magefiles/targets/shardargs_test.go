package targets

import (
	"slices"
	"strings"
	"testing"
)

func TestFoldShardArgs(t *testing.T) {
	for _, tt := range []struct {
		name string
		argv []string
		want []string
	}{
		{"merge dirs", []string{"mage", "program-gate", "-merge", "a", "b", "c"}, []string{"mage", "program-gate", "-merge=a\nb\nc"}},
		{"merge then a flag", []string{"mage", "-v", "program-gate", "-merge", "a", "-x"}, []string{"mage", "-v", "program-gate", "-merge=a", "-x"}},
		{"merge with no dir", []string{"mage", "program-gate", "-merge"}, []string{"mage", "program-gate", "-merge="}},
		{"merge already folded", []string{"mage", "program-gate", "-merge=a"}, []string{"mage", "program-gate", "-merge=a"}},
		{"plain program-gate", []string{"mage", "program-gate"}, []string{"mage", "program-gate"}},
		{"shard with a space", []string{"mage", "validate", "-shard", "2/3"}, []string{"mage", "validate", "-shard=2/3"}},
		{"shard with =", []string{"mage", "validate", "-shard=2/3"}, []string{"mage", "validate", "-shard=2/3"}},
		{"a target named like a dir", []string{"mage", "validate"}, []string{"mage", "validate"}},
		{"history of a test", []string{"mage", "history", "TestC"}, []string{"mage", "history", "-test=TestC"}},
		{"history of every test", []string{"mage", "history"}, []string{"mage", "history"}},
		{"history with flags", []string{"mage", "history", "-last=5"}, []string{"mage", "history", "-last=5"}},
		{"arbitrate -rerun before its test", []string{"mage", "arbitrate", "-rerun", "TestX/reset"}, []string{"mage", "arbitrate", "TestX/reset", "-rerun"}},
		{"arbitrate -rerun after its test", []string{"mage", "arbitrate", "TestX/reset", "-rerun"}, []string{"mage", "arbitrate", "TestX/reset", "-rerun"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := foldShardArgs(tt.argv); !slices.Equal(got, tt.want) {
				t.Errorf("foldShardArgs(%q) = %q, want %q", tt.argv, got, tt.want)
			}
		})
	}
	if got := splitMerge("a\nb\n\nc"); strings.Join(got, ",") != "a,b,c" {
		t.Errorf("splitMerge = %q", got)
	}
}
