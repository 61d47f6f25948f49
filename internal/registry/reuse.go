package registry

import (
	"path"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/contested/contested/internal/signkey"
)

// Reuse is the optional [reuse] table: how validate treats what a change
// reached.
//
//	[reuse]
//	changed = "hardening"   # a surface whose inputs changed runs over this tier's seeds: smoke, hardening or release
//	reads = { "./e2e/..." = ["testdata/adopter", "README.md"] }   # what tests read that their test log does not show
//	trust = ["ed25519:…"]   # the keys whose signed certificates this checkout believes (go tool mage certkey)
//
// Outside CI, validate reuses a package or surface whose input digest
// matches a certificate of an earlier GREEN, certified run. A surface
// whose digest changed since its certificate is explored harder in the
// same run: over the seeds of the tier Changed names, so that a change can
// earn PASS-hardening before it is pushed. "smoke" keeps it at the
// battery's one seed.
//
// A package's digest covers what its test binary is built from and its
// own testdata directory. Reads names what else the tests of some
// packages read at run time (a fixture module elsewhere in the
// repository, the README they check): those files' contents join the
// digests of the packages the pattern matches, so a change to them runs
// those packages again instead of reusing them.
type Reuse struct {
	// Changed is the budget tier a changed surface runs over: "smoke",
	// "hardening" (the default) or "release".
	Changed string
	// Reads are the run-time inputs of packages beyond their own
	// directory, in the order the file gives them.
	Reads []Read
	// Trust are the public keys ("ed25519:…") whose signed certificates a
	// checkout reuses: trusting a key is a reviewed change to this file.
	// They change no result, so no digest covers them.
	Trust []string `json:"-"`
	// Line is the line of the [reuse] header; 0 when there is none.
	Line int `json:"-"`
}

// Read is one entry of [reuse] reads: the packages a pattern matches
// read the paths at run time.
type Read struct {
	// Pattern is a package pattern relative to the module root:
	// "./e2e/..." or "./internal/command".
	Pattern string
	// Paths are files or directories relative to the module root.
	Paths []string
	// Line is where the entry is, for messages about it.
	Line int `json:"-"`
}

// Matches reports whether the package in dir (relative to the module
// root, slash-separated; "." for the root) is one the pattern names.
func (r Read) Matches(dir string) bool {
	p := strings.TrimPrefix(r.Pattern, "./")
	switch p {
	case "...":
		return true
	case "", ".":
		return dir == "."
	}
	if base, ok := strings.CutSuffix(p, "/..."); ok {
		return dir == base || strings.HasPrefix(dir, base+"/")
	}
	return dir == path.Clean(p)
}

// The tiers [reuse] changed accepts.
const (
	TierSmoke     = "smoke"
	TierHardening = "hardening"
	TierRelease   = "release"
)

var reuseKeys = []string{"changed", "reads", "trust"}

// Seeds is how many seeds a changed surface s runs over: its budget's
// seeds of the tier Changed names (1 for smoke, or when the tier has
// none).
func (r Reuse) Seeds(s Surface) int {
	n := 1
	switch r.Changed {
	case TierHardening, "":
		n = s.Budget.Hardening.Seeds
	case TierRelease:
		n = s.Budget.Release.Seeds
	}
	return max(n, 1)
}

func (c *checker) reuse(root *value) Reuse {
	r := Reuse{Changed: TierHardening}
	t := c.table(root, "reuse", "[reuse]")
	if t == nil {
		return r
	}
	r.Line = t.at.line
	c.knownKeys(t, reuseKeys, "[reuse]")
	if s, v := c.str(t, "changed", "[reuse]"); v != nil {
		if !slices.Contains([]string{TierSmoke, TierHardening, TierRelease}, s) {
			c.errorf(v.valueAt, "[reuse] changed must be \"smoke\", \"hardening\" or \"release\" (the budget tier a changed surface runs over), not %q", s)
			return r
		}
		r.Changed = s
	}
	r.Reads = c.reads(t)
	keys, at := c.names(t, "trust", "[reuse] trust", "key")
	for i, k := range keys {
		if _, err := signkey.Parse(k); err != nil {
			c.errorf(at[i], "[reuse] trust: %v", err)
			continue
		}
		r.Trust = append(r.Trust, k)
	}
	return r
}

// reads reads [reuse] reads: a table of package pattern = [paths]. A
// pattern is relative to the module root ("./x" or "./x/..."); a path is
// a clean relative path that stays inside the module.
func (c *checker) reads(t *value) []Read {
	v := t.fields["reads"]
	if v == nil {
		return nil
	}
	if !v.isTable() {
		c.errorf(v.valueAt, "[reuse] reads must be a table of package pattern = [paths], e.g. reads = { \"./e2e/...\" = [\"testdata/adopter\"] }, not %s", v.describe())
		return nil
	}
	var out []Read
	for _, pattern := range v.keys {
		pv := v.fields[pattern]
		if !validPattern(pattern) {
			c.errorf(pv.at, "[reuse] reads: %q is not a package pattern of this module; write one as go test takes it, relative to the module root: \"./e2e/...\" or \"./internal/command\"", pattern)
			continue
		}
		if pv.kind != unstable.Array {
			c.errorf(pv.valueAt, "[reuse] reads.%q must be an array of paths relative to the module root, e.g. [\"testdata/adopter\"], not %s", pattern, pv.describe())
			continue
		}
		paths, at := c.names(v, pattern, "[reuse] reads."+pattern, "path")
		ok := true
		for i, p := range paths {
			if path.IsAbs(p) || p != path.Clean(p) || p == "." || p == ".." || strings.HasPrefix(p, "../") {
				c.errorf(at[i], "[reuse] reads.%q: %q is not a clean path inside the module; write it relative to the module root, without . or .. elements (\"testdata/adopter\")", pattern, p)
				ok = false
			}
		}
		if ok && len(paths) > 0 {
			out = append(out, Read{Pattern: pattern, Paths: paths, Line: pv.at.line})
		}
	}
	return out
}

// validPattern reports whether p is a package pattern relative to the
// module root: ".", "./...", "./dir" or "./dir/...".
func validPattern(p string) bool {
	if p == "." || p == "./" || p == "./..." {
		return true
	}
	rest, ok := strings.CutPrefix(p, "./")
	rest = strings.TrimSuffix(rest, "/...")
	return ok && rest != "" && rest == path.Clean(rest) && rest != ".." && !strings.HasPrefix(rest, "../") && !strings.Contains(rest, "...")
}
