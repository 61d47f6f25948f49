package registry

import "slices"

// Reuse is the optional [reuse] table: how validate treats what a change
// reached.
//
//	[reuse]
//	changed = "hardening"   # a surface whose inputs changed runs over this tier's seeds: smoke, hardening or release
//
// Outside CI, validate reuses a package or surface whose input digest
// matches a certificate of an earlier GREEN, certified run. A surface
// whose digest changed since its certificate is explored harder in the
// same run: over the seeds of the tier Changed names, so that a change can
// earn PASS-hardening before it is pushed. "smoke" keeps it at the
// battery's one seed.
type Reuse struct {
	// Changed is the budget tier a changed surface runs over: "smoke",
	// "hardening" (the default) or "release".
	Changed string
	// Line is the line of the [reuse] header; 0 when there is none.
	Line int
}

// The tiers [reuse] changed accepts.
const (
	TierSmoke     = "smoke"
	TierHardening = "hardening"
	TierRelease   = "release"
)

var reuseKeys = []string{"changed"}

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
	return r
}
