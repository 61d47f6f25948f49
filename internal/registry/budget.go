package registry

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2/unstable"
)

// Budget is a surface's three budget tiers. A leg that met only the smoke
// budget can never be PASS-hardening, so the tiers are data the verdict
// code reads, not prose.
type Budget struct {
	Smoke     Tier
	Hardening Tier
	Release   Tier
}

// Tier is one budget tier. A zero Faults or Duration means the tier does not
// constrain that dimension; Seeds is always set for smoke and hardening
// (defaults 1 and 3) and may be zero for release.
type Tier struct {
	Seeds    int
	Faults   int
	Duration time.Duration
	// NotProvided and RevisitWhen are set, together, only on a release tier
	// that is declared as not provided; they are quoted verbatim in reports.
	NotProvided string
	RevisitWhen string
}

// Provided reports whether the tier is an actual budget rather than a
// "not provided" disclosure.
func (t Tier) Provided() bool { return t.NotProvided == "" }

// Defaults used when a surface declares no budget, or leaves a tier or its
// seeds out.
const (
	DefaultSmokeSeeds         = 1
	DefaultHardeningSeeds     = 3
	DefaultReleaseNotProvided = "no release budget declared"
	DefaultReleaseRevisitWhen = "a release budget is declared in the registry"
)

// DefaultBudget is the budget of a surface without a [surface.budget]:
// smoke one seed, hardening three seeds (the fewest that can support
// PASS-hardening), release not provided.
func DefaultBudget() Budget {
	return Budget{
		Smoke:     Tier{Seeds: DefaultSmokeSeeds},
		Hardening: Tier{Seeds: DefaultHardeningSeeds},
		Release:   Tier{NotProvided: DefaultReleaseNotProvided, RevisitWhen: DefaultReleaseRevisitWhen},
	}
}

var (
	budgetKeys  = []string{"smoke", "hardening", "release"}
	tierKeys    = []string{"seeds", "faults", "duration"}
	releaseKeys = []string{"seeds", "faults", "duration", "not_provided", "revisit_when"}
)

// placeholders are disclosures that disclose nothing. Reports lift the
// release reason verbatim, so "TBD" would reach a reader as if it were one.
var placeholders = map[string]bool{
	"tbd": true, "tbc": true, "todo": true, "n/a": true, "na": true, "none": true,
	"-": true, "?": true, "...": true, "later": true, "unknown": true,
}

// tierAt remembers where a tier and its dimensions were written, so that a
// comparison between tiers can point at the offending number.
type tierAt struct {
	declared                      bool
	tier, seeds, faults, duration pos
	// invalid dimensions were written but could not be read; they are
	// already reported and are left out of comparisons, which would
	// otherwise compare against a default the author did not mean.
	invalid map[string]bool
}

// where returns the position of a dimension if the tier declared it, else
// of the tier, else fallback.
func (t tierAt) where(dim string, fallback pos) pos {
	var p pos
	switch dim {
	case "seeds":
		p = t.seeds
	case "faults":
		p = t.faults
	case "duration":
		p = t.duration
	}
	if p.line > 0 {
		return p
	}
	if t.declared {
		return t.tier
	}
	return fallback
}

// budget reads [surface.budget], fills in defaults and checks that the
// tiers make sense together.
func (c *checker) budget(s *value, label string) Budget {
	b := DefaultBudget()
	bt := c.table(s, "budget", label+": [surface.budget]")
	if bt == nil {
		return b
	}
	c.knownKeys(bt, budgetKeys, "[surface.budget]")
	var smokeAt, hardAt, relAt tierAt
	b.Smoke, smokeAt = c.tier(bt, "smoke", label, b.Smoke)
	b.Hardening, hardAt = c.tier(bt, "hardening", label, b.Hardening)
	b.Release, relAt = c.tier(bt, "release", label, b.Release)

	// Hardening must be strictly stronger than smoke on every dimension
	// both declare; seeds are always declared (defaults fill them in).
	for _, d := range dimensions(b.Smoke, b.Hardening) {
		if smokeAt.invalid[d.name] || hardAt.invalid[d.name] {
			continue
		}
		if d.hi <= d.lo {
			c.errorf(hardAt.where(d.name, bt.at),
				"%s: hardening %s %s is not more than smoke %s %s; hardening must be strictly stronger than smoke on every dimension both declare",
				label, d.name, d.hiText+defaulted(d.name, hardAt), d.name, d.loText+defaulted(d.name, smokeAt))
		}
	}
	// A provided release budget may not be weaker than hardening anywhere.
	if b.Release.Provided() {
		for _, d := range dimensions(b.Hardening, b.Release) {
			if hardAt.invalid[d.name] || relAt.invalid[d.name] {
				continue
			}
			if d.hi < d.lo {
				c.errorf(relAt.where(d.name, bt.at),
					"%s: release %s %s is less than hardening %s %s; release must be at least as strong as hardening",
					label, d.name, d.hiText, d.name, d.loText+defaulted(d.name, hardAt))
			}
		}
	}
	return b
}

func defaulted(dim string, t tierAt) string {
	if dim == "seeds" && t.seeds.line == 0 {
		return " (the default)"
	}
	return ""
}

type dimension struct {
	name           string
	lo, hi         int64
	loText, hiText string
}

// dimensions returns the dimensions both tiers declare.
func dimensions(lo, hi Tier) []dimension {
	var ds []dimension
	if lo.Seeds > 0 && hi.Seeds > 0 {
		ds = append(ds, dimension{"seeds", int64(lo.Seeds), int64(hi.Seeds), fmt.Sprint(lo.Seeds), fmt.Sprint(hi.Seeds)})
	}
	if lo.Faults > 0 && hi.Faults > 0 {
		ds = append(ds, dimension{"faults", int64(lo.Faults), int64(hi.Faults), fmt.Sprint(lo.Faults), fmt.Sprint(hi.Faults)})
	}
	if lo.Duration > 0 && hi.Duration > 0 {
		ds = append(ds, dimension{"duration", int64(lo.Duration), int64(hi.Duration), lo.Duration.String(), hi.Duration.String()})
	}
	return ds
}

// tier reads one budget tier; def is what an absent tier (or absent seeds)
// means.
func (c *checker) tier(bt *value, name, label string, def Tier) (Tier, tierAt) {
	where := "[surface.budget." + name + "]"
	tv := c.table(bt, name, label+": "+where)
	if tv == nil {
		return def, tierAt{}
	}
	at := tierAt{declared: true, tier: tv.at, invalid: map[string]bool{}}
	known := tierKeys
	if name == "release" {
		known = releaseKeys
	}
	c.knownKeys(tv, known, where)

	var t Tier
	if v, p, ok := c.positiveInt(tv, "seeds", label, where); ok {
		t.Seeds, at.seeds = v, p
	} else if tv.fields["seeds"] != nil {
		at.invalid["seeds"] = true
	}
	if v, p, ok := c.positiveInt(tv, "faults", label, where); ok {
		t.Faults, at.faults = v, p
	} else if tv.fields["faults"] != nil {
		at.invalid["faults"] = true
	}
	if s, v := c.str(tv, "duration", label+": "+where); v != nil {
		d, err := time.ParseDuration(s)
		at.invalid["duration"] = err != nil || d <= 0
		switch {
		case err != nil:
			c.errorf(v.valueAt, "%s: %s duration %q is not a Go duration; write it like \"90s\", \"5m\" or \"1h30m\"", label, where, s)
		case d <= 0:
			c.errorf(v.valueAt, "%s: %s duration must be positive, not %q", label, where, s)
		default:
			t.Duration, at.duration = d, v.at
		}
	}

	if name != "release" {
		if t.Seeds == 0 && at.seeds.line == 0 {
			t.Seeds = def.Seeds
		}
		return t, at
	}

	reason, reasonV := c.str(tv, "not_provided", label+": "+where)
	revisit, revisitV := c.str(tv, "revisit_when", label+": "+where)
	declaresBudget := tv.fields["seeds"] != nil || tv.fields["faults"] != nil || tv.fields["duration"] != nil
	if reasonV == nil && revisitV == nil {
		if len(tv.keys) == 0 {
			c.errorf(tv.at, "%s: %s declares nothing; give seeds, faults or duration, or not_provided = \"<why>\" with revisit_when = \"<condition>\"", label, where)
		}
		return t, at
	}
	if declaresBudget {
		c.errorf(tv.at, "%s: %s both declares a budget and says it is not provided; keep one: seeds/faults/duration, or not_provided + revisit_when", label, where)
	}
	t.NotProvided = c.disclosure(tv, reasonV, reason, "not_provided", "why there is no release budget", label, where)
	t.RevisitWhen = c.disclosure(tv, revisitV, revisit, "revisit_when", "the condition under which a release budget will be declared", label, where)
	return Tier{NotProvided: t.NotProvided, RevisitWhen: t.RevisitWhen}, at
}

// disclosure checks one half of a "not provided" release tier.
func (c *checker) disclosure(tv, v *value, text, key, meaning, label, where string) string {
	if v == nil {
		c.errorf(tv.at, "%s: %s has no %s; a release tier that is not provided needs both not_provided and revisit_when (%s)", label, where, key, meaning)
		return ""
	}
	trimmed := strings.TrimSpace(text)
	if trimmed == "" {
		c.errorf(v.valueAt, "%s: %s %s is empty; state %s (it is quoted verbatim in reports)", label, where, key, meaning)
		return ""
	}
	if placeholders[strings.ToLower(strings.TrimRight(trimmed, "."))] {
		c.errorf(v.valueAt, "%s: %s %s %q is a placeholder; state %s (it is quoted verbatim in reports)", label, where, key, text, meaning)
		return ""
	}
	return trimmed
}

// maxCount bounds seeds and faults: far beyond any real budget, and small
// enough to fit an int everywhere.
const maxCount = 1_000_000

// positiveInt reads an optional integer that must be at least 1.
func (c *checker) positiveInt(t *value, key, label, where string) (int, pos, bool) {
	v := t.fields[key]
	if v == nil {
		return 0, pos{}, false
	}
	if v.kind != unstable.Integer {
		c.errorf(v.valueAt, "%s: %s %s must be an integer, not %s", label, where, key, v.describe())
		return 0, pos{}, false
	}
	n, err := strconv.ParseInt(v.text, 0, 64) // base 0: TOML's 0x/0o/0b prefixes and underscores
	if err != nil || n < 1 || n > maxCount {
		c.errorf(v.valueAt, "%s: %s %s must be a whole number from 1 to %d, not %s", label, where, key, maxCount, v.text)
		return 0, pos{}, false
	}
	return int(n), v.at, true
}
