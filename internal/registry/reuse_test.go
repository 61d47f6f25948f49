package registry

import "testing"

// TestTheReuseTable: [reuse] changed names the tier a changed surface
// runs over, hardening when the table says nothing, and anything else is
// refused with its line and column.
func TestTheReuseTable(t *testing.T) {
	tests := []struct {
		name  string
		doc   string
		want  string
		seeds int // Seeds of a surface with the default budget
		bad   *problem
	}{
		{"no table", "", TierHardening, DefaultHardeningSeeds, nil},
		{"smoke", "[reuse]\nchanged = \"smoke\"\n", TierSmoke, 1, nil},
		{"hardening", "[reuse]\nchanged = \"hardening\"\n", TierHardening, DefaultHardeningSeeds, nil},
		{"release, which the default budget does not provide", "[reuse]\nchanged = \"release\"\n", TierRelease, 1, nil},
		{"an unknown tier", "[reuse]\nchanged = \"deep\"\n", "", 0, &problem{"2:11", `[reuse] changed must be "smoke", "hardening" or "release" (the budget tier a changed surface runs over), not "deep"`}},
		{"an unknown key", "[reuse]\nseeds = 4\n", "", 0, &problem{"2:1", `unknown key "seeds" in [reuse] (known keys: changed)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg, err := Parse("m.toml", []byte(minimalDoc+tt.doc))
			if tt.bad != nil {
				assertProblems(t, "m.toml", err, []problem{{shift(tt.bad.at, minimalDocLines), tt.bad.msg}})
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if reg.Reuse.Changed != tt.want || reg.Reuse.Seeds(reg.Surfaces[0]) != tt.seeds {
				t.Errorf("changed %q, seeds %d; want %q, %d", reg.Reuse.Changed, reg.Reuse.Seeds(reg.Surfaces[0]), tt.want, tt.seeds)
			}
		})
	}
}
