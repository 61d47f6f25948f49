package plan

import (
	"fmt"
	"slices"
	"strings"
)

// adequacy argues, claim by claim, that the legs and scenarios would
// falsify the claim if it were false in one of the ways its hypotheses
// say, and names what rests on a scenario still to be written or on
// nothing at all.
func adequacy(p *Plan) []Adequacy {
	out := []Adequacy{}
	for _, c := range p.Claims {
		var rows []Row
		for _, r := range p.Coverage {
			if r.Claim == c.Key {
				rows = append(rows, r)
			}
		}
		var b strings.Builder
		if len(rows) == 0 {
			fmt.Fprintf(&b, "No pitfall of the catalog applies to %s (%s): the plan has no hypothesis against it, so nothing here argues it holds; state how it could fail, or rule the pitfalls out in the registry.", c.Key, c.Category)
			out = append(out, Adequacy{Claim: c.Key, Argument: b.String()})
			continue
		}
		var hs []string
		for _, r := range rows {
			hs = append(hs, r.Hypothesis)
		}
		fmt.Fprintf(&b, "%s could be broken as %s say.", c.Key, strings.Join(hs, ", "))
		var covered, open []string
		for _, r := range rows {
			if r.Gap == GapNone {
				covered = append(covered, fmt.Sprintf("%s by %s", r.Hypothesis, strings.Join(r.Legs, ", ")))
				continue
			}
			switch {
			case r.Scenario != "":
				open = append(open, fmt.Sprintf("%s (%s) rests on %s", r.Hypothesis, r.Gap, r.Scenario))
			default:
				open = append(open, fmt.Sprintf("%s (%s) on nothing a lever can run", r.Hypothesis, r.Gap))
			}
		}
		if len(covered) > 0 {
			fmt.Fprintf(&b, " Covered: %s; each leg forces its hypothesis under an oracle that sees it, and the history shows a run over the hardening budget, so if %s were false that way, the leg would catch it.", strings.Join(covered, "; "), c.ID)
		}
		if len(open) > 0 {
			fmt.Fprintf(&b, " Open: %s. Until they pass, nothing shows %s holds against them.", strings.Join(open, "; "), c.ID)
		} else {
			b.WriteString(" No hypothesis rests on anything the plan still has to add.")
		}
		out = append(out, Adequacy{Claim: c.Key, Argument: b.String()})
	}
	return out
}

// residual is what the plan does not falsify and why: hypotheses no lever
// of contested can force, pitfalls the registry rules out, release budgets
// not provided, and the limits of the evidence the plan reads.
func residual(p *Plan) []string {
	out := []string{}
	for _, r := range p.Coverage {
		if r.Gap != GapNone && r.Scenario == "" {
			h, _ := p.Hypothesis(r.Hypothesis)
			out = append(out, fmt.Sprintf("%s (%s, %s): %s; no scenario closes it. %s", r.Hypothesis, r.Claim, h.Title, r.Why, "Accept the risk in review, or test it by other means."))
		}
	}
	for _, na := range p.NotApplicable {
		if na.By == "registry" {
			out = append(out, fmt.Sprintf("%s: %s is ruled out by the registry: %s", na.Claim, na.Title, na.Reason))
		}
	}
	var seen []string
	for _, s := range p.Scenarios {
		if s.Budget.ReleaseNotProvided != "" && !slices.Contains(seen, s.Surface) {
			seen = append(seen, s.Surface)
			out = append(out, fmt.Sprintf("%s has no release budget: %s", s.Surface, s.Budget.Release))
		}
	}
	for _, c := range p.Claims {
		if c.Implicit {
			out = append(out, fmt.Sprintf("%s is the surface's whole behavior as one claim, its category %s: a single verdict may hide which of its promises held.", c.Key, c.Inferred))
		}
	}
	if len(p.Claims) > 0 {
		out = append(out, "Last verdicts and hardening come from the flake history, which nothing signs: they guide the plan, and only a run's findings are evidence.")
	}
	return out
}
