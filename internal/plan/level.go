package plan

import (
	"fmt"
	"strings"
)

// chooseLevel picks the CONTESTED_LEVEL the plan runs at: 3 when the
// change reaches as many surfaces as [plan] spread, 2 when it touches
// lease, fence or lock code ([plan] lease_paths) that a package is built
// from, 1 otherwise; the higher rule wins, and the reason says which.
// Project-wide, the surfaces' packages stand for the change.
func chooseLevel(in Input, r Radius) Level {
	var lease []string
	for _, f := range r.Files {
		if f.Lease != "" {
			lease = append(lease, f.Path)
		}
	}
	if in.Change.Mode == ModeProject && in.Digest != nil {
		reached := map[string]bool{}
		for _, s := range r.Surfaces {
			reached[s.ID] = true
		}
		seen := map[string]bool{}
		for _, p := range in.Digest.Packages {
			if !anyReached(surfacesOf(in.Registry, in.Module, p), reached) {
				continue
			}
			for _, f := range p.Files {
				if _, ok := in.Registry.Plan.LeaseCode(f); ok && !seen[f] && strings.HasSuffix(f, ".go") {
					seen[f] = true
					lease = append(lease, f)
				}
			}
		}
	}
	n, spread := len(r.Surfaces), in.Registry.Plan.Spread
	var why []string
	level := 1
	if n >= spread {
		level = 3
		reach := "the change reaches"
		if in.Change.Mode == ModeProject {
			reach = "the plan covers"
		}
		why = append(why, fmt.Sprintf("%s %d surfaces, at least [plan] spread = %d: faults are repeated, during recovery too, across all of them", reach, n, spread))
	}
	if len(lease) > 0 {
		level = max(level, 2)
		what := "it touches"
		if in.Change.Mode == ModeProject {
			what = "its surfaces are built from"
		}
		why = append(why, fmt.Sprintf("%s lease, fence or lock code (%s): levers are combined, because such code fails where two faults meet", what, strings.Join(clip(lease, 4), ", ")))
	}
	if len(why) == 0 {
		why = append(why, fmt.Sprintf("it touches no lease, fence or lock code and reaches %s (fewer than [plan] spread = %d): one lever at a time", count(n, "surface"), spread))
	}
	return Level{Level: level, Why: fmt.Sprintf("Level %d: %s.", level, strings.Join(why, "; and ")), LeaseFiles: lease}
}

func anyReached(ids []string, reached map[string]bool) bool {
	for _, id := range ids {
		if reached[id] {
			return true
		}
	}
	return false
}
