package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

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
		{"an unknown key", "[reuse]\nseeds = 4\n", "", 0, &problem{"2:1", `unknown key "seeds" in [reuse] (known keys: changed, reads, trust)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := parseTable(t, tt.doc, tt.bad)
			if reg == nil {
				return
			}
			if reg.Reuse.Changed != tt.want || reg.Reuse.Seeds(reg.Surfaces[0]) != tt.seeds {
				t.Errorf("changed %q, seeds %d; want %q, %d", reg.Reuse.Changed, reg.Reuse.Seeds(reg.Surfaces[0]), tt.want, tt.seeds)
			}
		})
	}
}

// TestReuseReads: [reuse] reads names the files some packages' tests read
// at run time; a pattern or a path that could name something outside the
// module is refused where it stands.
func TestReuseReads(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []Read
		bad  *problem
	}{
		{"a tree and a file", "[reuse]\nreads = { \"./e2e/...\" = [\"testdata/adopter\", \"README.md\"] }\n",
			[]Read{{Pattern: "./e2e/...", Paths: []string{"testdata/adopter", "README.md"}}}, nil},
		{"two patterns keep their order", "[reuse]\nreads = { \"./b\" = [\"x\"], \"./a/...\" = [\"y/z\"] }\n",
			[]Read{{Pattern: "./b", Paths: []string{"x"}}, {Pattern: "./a/...", Paths: []string{"y/z"}}}, nil},
		{"not a table", "[reuse]\nreads = [\"x\"]\n", nil,
			&problem{"2:1", `[reuse] reads must be a table of package pattern = [paths], e.g. reads = { "./e2e/..." = ["testdata/adopter"] }, not an array`}},
		{"an import path, not a pattern", "[reuse]\nreads = { \"example.com/m/e2e\" = [\"x\"] }\n", nil,
			&problem{"2:11", `[reuse] reads: "example.com/m/e2e" is not a package pattern of this module; write one as go test takes it, relative to the module root: "./e2e/..." or "./internal/command"`}},
		{"a pattern leaving the module", "[reuse]\nreads = { \"./../x\" = [\"x\"] }\n", nil,
			&problem{"2:11", `[reuse] reads: "./../x" is not a package pattern of this module; write one as go test takes it, relative to the module root: "./e2e/..." or "./internal/command"`}},
		{"a path leaving the module", "[reuse]\nreads = { \"./e2e\" = [\"../secrets\"] }\n", nil,
			&problem{"2:22", `[reuse] reads."./e2e": "../secrets" is not a clean path inside the module; write it relative to the module root, without . or .. elements ("testdata/adopter")`}},
		{"an absolute path", "[reuse]\nreads = { \"./e2e\" = [\"/etc\"] }\n", nil,
			&problem{"2:22", `[reuse] reads."./e2e": "/etc" is not a clean path inside the module; write it relative to the module root, without . or .. elements ("testdata/adopter")`}},
		{"a path as a string", "[reuse]\nreads = { \"./e2e\" = \"README.md\" }\n", nil,
			&problem{"2:21", `[reuse] reads."./e2e" must be an array of paths relative to the module root, e.g. ["testdata/adopter"], not a string`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := parseTable(t, tt.doc, tt.bad)
			if reg == nil {
				return
			}
			if diff := cmp.Diff(tt.want, reg.Reuse.Reads, cmpopts.IgnoreFields(Read{}, "Line")); diff != "" {
				t.Errorf("reads (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAReadMatchesThePackagesItsPatternNames(t *testing.T) {
	tests := []struct {
		pattern, dir string
		want         bool
	}{
		{"./...", ".", true},
		{"./...", "a/b", true},
		{".", ".", true},
		{".", "a", false},
		{"./e2e/...", "e2e", true},
		{"./e2e/...", "e2e/stages", true},
		{"./e2e/...", "e2e2", false},
		{"./internal/command", "internal/command", true},
		{"./internal/command", "internal/command/sub", false},
	}
	for _, tt := range tests {
		if got := (Read{Pattern: tt.pattern}).Matches(tt.dir); got != tt.want {
			t.Errorf("%s matches %s: %v, want %v", tt.pattern, tt.dir, got, tt.want)
		}
	}
}

// TestReuseTrust: [reuse] trust lists public key lines, each checked, and
// a line that is not one is refused where it is, saying what to give.
func TestReuseTrust(t *testing.T) {
	const key = "ed25519:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
	tests := []struct {
		name string
		doc  string
		want []string
		bad  *problem
	}{
		{"none", "", nil, nil},
		{"one key", "[reuse]\ntrust = [\"" + key + "\"]\n", []string{key}, nil},
		{"an ssh key", "[reuse]\ntrust = [\"ssh-ed25519 AAAAC3Nz\"]\n", nil,
			&problem{"2:10", `[reuse] trust: not a signing key: "ssh-ed25519 AAAAC3Nz" does not start with "ed25519:"; give the line go tool mage certkey printed`}},
		{"a key cut short", "[reuse]\ntrust = [\"ed25519:AAEC\"]\n", nil,
			&problem{"2:10", `[reuse] trust: not a signing key: "ed25519:AAEC" is not an ed25519 public key (32 bytes in standard base64); give the line go tool mage certkey printed`}},
		{"a string, not a list", "[reuse]\ntrust = \"" + key + "\"\n", nil,
			&problem{"2:9", `[reuse] trust must be an array of strings, not a string; write trust = ["` + key + `"]`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := parseTable(t, tt.doc, tt.bad)
			if reg == nil {
				return
			}
			if diff := cmp.Diff(tt.want, reg.Reuse.Trust); diff != "" {
				t.Errorf("trust (-want +got):\n%s", diff)
			}
		})
	}
}
