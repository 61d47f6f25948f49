package registry

import (
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// The intensity levels of CONTESTED_LEVEL: 1 sunny (one lever at a time),
// 2 stormy (levers combined), 3 radioactive (faults repeated, during
// recovery too).
const (
	MinLevel = 1
	MaxLevel = 3
)

// AllLevels is the level set of a leg whose surface does not restrict it.
var AllLevels = []int{1, 2, 3}

// Levels says at which levels a surface's legs run. A leg absent from the
// map runs at every level; a present one runs only at the listed levels.
// The verdict code reads it so that a leg skipped at the current level is
// reported as not run at this level, never as NOT-RUN.
type Levels map[string][]int

// LegLevels returns the levels at which leg runs, sorted.
func (s Surface) LegLevels(leg string) []int {
	if ls, ok := s.Levels[leg]; ok {
		return slices.Clone(ls)
	}
	return slices.Clone(AllLevels)
}

// RunsAt reports whether leg runs at level.
func (s Surface) RunsAt(leg string, level int) bool {
	return slices.Contains(s.LegLevels(leg), level)
}

// levels reads the optional levels table of a surface:
//
//	levels = { reset = [2, 3] }
//
// Each key must be one of the surface's legs, each value a non-empty array
// of distinct levels from MinLevel to MaxLevel.
func (c *checker) levels(sv *value, s Surface, label string) Levels {
	v := sv.fields["levels"]
	if v == nil {
		return nil
	}
	if !v.isTable() {
		c.errorf(v.valueAt, "%s: levels must be a table of lever = [levels], e.g. levels = { reset = [2, 3] }, not %s", label, v.describe())
		return nil
	}
	out := Levels{}
	for _, leg := range v.keys {
		lv := v.fields[leg]
		if !slices.Contains(s.Legs, leg) {
			c.errorf(lv.at, "%s: levels names %q, which is not one of its legs (%s); list the leg in legs, or remove it from levels%s",
				label, leg, strings.Join(s.Legs, ", "), suggest(leg, s.Legs))
			continue
		}
		if lv.kind != unstable.Array {
			c.errorf(lv.valueAt, "%s: levels.%s must be an array of levels from %d to %d, e.g. [2, 3], not %s", label, leg, MinLevel, MaxLevel, lv.describe())
			continue
		}
		if len(lv.items) == 0 {
			c.errorf(lv.valueAt, "%s: levels.%s is empty, so the leg would never run; list the levels it runs at, or remove it from legs", label, leg)
			continue
		}
		var ls []int
		for _, it := range lv.items {
			n, err := strconv.Atoi(it.text)
			switch {
			case it.kind != unstable.Integer:
				c.errorf(it.valueAt, "%s: levels.%s must hold integers from %d to %d; this element is %s", label, leg, MinLevel, MaxLevel, it.describe())
			case err != nil || n < MinLevel || n > MaxLevel:
				c.errorf(it.valueAt, "%s: levels.%s: %s is not a level; levels are %d (sunny), 2 (stormy) and %d (radioactive)", label, leg, it.text, MinLevel, MaxLevel)
			case slices.Contains(ls, n):
				c.errorf(it.valueAt, "%s: levels.%s lists level %d twice; remove one", label, leg, n)
			default:
				ls = append(ls, n)
			}
		}
		if len(ls) > 0 {
			slices.Sort(ls)
			out[leg] = ls
		}
	}
	return out
}

// LegsAt returns the legs of s that run at level.
func (s Surface) LegsAt(level int) []string {
	var out []string
	for _, l := range s.Legs {
		if s.RunsAt(l, level) {
			out = append(out, l)
		}
	}
	return out
}
