package findings

import (
	"fmt"
	"slices"
	"strings"

	"github.com/contested/contested/internal/gate/verdict"
	"github.com/contested/contested/internal/plan"
)

// adequacy sets each claim's planned coverage against what ran: which of
// its hypotheses a leg of this run forced and with what verdict, and
// which are still open.
func adequacy(in Input, claims []Claim, hs []plan.Hypothesis, rows []plan.Row) []Adequacy {
	out := []Adequacy{}
	for _, c := range claims {
		var mine []plan.Row
		for _, r := range rows {
			if r.Claim == c.Key {
				mine = append(mine, r)
			}
		}
		a := Adequacy{Claim: c.Key}
		if len(mine) == 0 {
			a.Planned = "no hypothesis: no pitfall of the catalog applies to it"
			a.Ran, a.After = legsSaid(c), "not argued: nothing says how it could fail"
			out = append(out, a)
			continue
		}
		var covered, open []string
		for _, r := range mine {
			title := r.Hypothesis
			if h, ok := hypothesis(hs, r.Hypothesis); ok {
				title += " " + h.Pitfall
			}
			if r.Gap == plan.GapNone {
				covered = append(covered, title)
			} else {
				open = append(open, fmt.Sprintf("%s (%s)", title, r.Gap))
			}
		}
		a.Planned = fmt.Sprintf("%d hypotheses; covered before this run: %s; gaps: %s", len(mine), listOr(covered, "none"), listOr(open, "none"))
		a.Ran = legsSaid(c)
		var unforced, smoke []string
		for _, r := range mine {
			switch {
			case r.Gap == plan.GapNone:
			case r.Gap == plan.GapSmokeOnly && c.Verdict == verdict.PassHardening:
			case r.Gap == plan.GapSmokeOnly:
				smoke = append(smoke, r.Hypothesis)
			default:
				unforced = append(unforced, r.Hypothesis)
			}
		}
		switch {
		case c.Verdict.Fail():
			a.After = "falsified: the claim does not hold as stated"
		case !c.Verdict.Pass():
			a.After = fmt.Sprintf("not adequate: the run did not decide the claim (%s)", c.Verdict)
		case len(unforced) > 0:
			a.After = fmt.Sprintf("not adequate: no leg that ran can force %s, so the run cannot show the claim holds against them", strings.Join(unforced, ", "))
			if len(smoke) > 0 {
				a.After += fmt.Sprintf("; %s forced at smoke only", strings.Join(smoke, ", "))
			}
		case len(smoke) > 0 || c.Verdict != verdict.PassHardening:
			a.After = "not adequate: every hypothesis is forced, but only at smoke"
		default:
			a.After = "adequate: every hypothesis was forced under an oracle that sees it, at hardening"
		}
		out = append(out, a)
	}
	return out
}

func hypothesis(hs []plan.Hypothesis, id string) (plan.Hypothesis, bool) {
	for _, h := range hs {
		if h.ID == id {
			return h, true
		}
	}
	return plan.Hypothesis{}, false
}

// legsSaid says what the claim's legs did in this run.
func legsSaid(c Claim) string {
	if len(c.Legs) == 0 {
		return "no leg: " + c.Reason
	}
	var parts []string
	for _, l := range c.Legs {
		parts = append(parts, fmt.Sprintf("%s %s", l.Lever, l.Verdict))
	}
	s := strings.Join(parts, ", ") + "; budget met: " + c.Budget
	if c.Reused != "" {
		s += "; reused from " + c.Reused
	}
	return s
}

// confidence is the statement and each claim's confidence: refuted when
// it failed; high for PASS-hardening with its whole evidence chain, no
// open hypothesis and this run's own evidence; moderate for
// PASS-hardening short of that, or PASS-smoke with nothing open; low for
// anything less.
func confidence(f *Findings, rows []plan.Row) Confidence {
	open := map[string][]string{}
	for _, r := range rows {
		if r.Gap != plan.GapNone && r.Gap != plan.GapSmokeOnly {
			open[r.Claim] = append(open[r.Claim], r.Hypothesis+" "+r.Gap)
		}
	}
	var aspects []Aspect
	var refuted, high, moderate, low []string
	for _, c := range f.Claims {
		a := Aspect{Claim: c.Key}
		switch {
		case c.Verdict.Fail():
			a.Confidence, a.Reason = "refuted", fmt.Sprintf("%s: %s", c.Verdict, c.Reason)
			refuted = append(refuted, c.Key)
		case c.Verdict == verdict.PassHardening && c.Broken == "" && len(open[c.Key]) == 0 && c.Reused == "":
			a.Confidence, a.Reason = "high", "PASS-hardening, budget met: "+c.Budget+", every hypothesis forced under an oracle that sees it"
			if c.Serious {
				a.Reason += ", evidence chain complete"
			}
			high = append(high, c.Key)
		case c.Verdict == verdict.PassHardening || c.Verdict == verdict.PassSmoke && len(open[c.Key]) == 0:
			a.Confidence = "moderate"
			a.Reason = moderateWhy(c, open[c.Key])
			moderate = append(moderate, c.Key)
		default:
			a.Confidence = "low"
			a.Reason = fmt.Sprintf("%s: %s", c.Verdict, c.Reason)
			if len(open[c.Key]) > 0 {
				a.Reason += "; open: " + strings.Join(open[c.Key], ", ")
			}
			low = append(low, c.Key)
		}
		aspects = append(aspects, a)
	}
	var b strings.Builder
	switch {
	case len(f.Claims) == 0:
		b.WriteString("This run judged no claim: there is nothing to sign.")
	case len(refuted) > 0:
		fmt.Fprintf(&b, "Do not sign: %s %s falsified in this run.", strings.Join(refuted, ", "), wasWere(len(refuted)))
	default:
		b.WriteString("No claim was falsified in this run.")
	}
	if len(high) > 0 {
		fmt.Fprintf(&b, " We have not observed a violation of %s under the faults that ran, each proven to land, over the hardening budget, with every hypothesis of the plan forced under an oracle that sees it.", strings.Join(high, ", "))
	}
	if len(moderate) > 0 {
		fmt.Fprintf(&b, " %s held where tested, short of high confidence (the table says why).", strings.Join(moderate, ", "))
	}
	if len(low) > 0 {
		fmt.Fprintf(&b, " Nothing in this run shows that %s hold%s.", strings.Join(low, ", "), singular(len(low)))
	}
	switch {
	case len(f.Claims) > 0 && len(high) == len(f.Claims):
		b.WriteString(" A reviewer can sign for every claim without rerunning anything.")
	case len(high) > 0:
		b.WriteString(" A reviewer can sign for the claims rated high without rerunning anything; the others are not shown to hold.")
	case len(f.Claims) > 0 && len(refuted) == 0:
		b.WriteString(" No claim is rated high: there is nothing here to sign yet.")
	}
	if aspects == nil {
		aspects = []Aspect{}
	}
	return Confidence{Statement: b.String(), Aspects: aspects}
}

func moderateWhy(c Claim, open []string) string {
	var why []string
	if c.Verdict == verdict.PassSmoke {
		why = append(why, "PASS-smoke: the hardening budget was not met (budget met: "+c.Budget+")")
	}
	if c.Broken != "" {
		why = append(why, "evidence chain broken: "+c.Broken)
	}
	if len(open) > 0 {
		why = append(why, "open: "+strings.Join(open, ", "))
	}
	if c.Reused != "" {
		why = append(why, "its evidence is reused from "+c.Reused)
	}
	if len(why) == 0 {
		why = append(why, string(c.Verdict))
	}
	return strings.Join(why, "; ")
}

// summary is the findings' headline, the worst first.
func summary(f *Findings) string {
	count := map[string][]string{}
	for _, c := range f.Claims {
		switch {
		case c.Verdict.Fail():
			count["fail"] = append(count["fail"], c.Key)
		case c.Verdict == verdict.PassHardening:
			count["hardening"] = append(count["hardening"], c.Key)
		case c.Verdict == verdict.PassSmoke:
			count["smoke"] = append(count["smoke"], c.Key)
		case c.Verdict == verdict.NotRun:
			count["notrun"] = append(count["notrun"], c.Key)
		default:
			count["other"] = append(count["other"], c.Key)
		}
	}
	var parts []string
	if n := count["fail"]; len(n) > 0 {
		var blames []string
		for _, fl := range f.Failures {
			for _, k := range fl.Claims {
				if slices.Contains(n, k) && !slices.Contains(blames, fl.Blame) {
					blames = append(blames, fl.Blame)
				}
			}
		}
		parts = append(parts, fmt.Sprintf("%s falsified (%s; blame: %s)", claimsWord(len(n)), strings.Join(n, ", "), listOr(blames, "unknown")))
	} else {
		parts = append(parts, "no claim falsified")
	}
	if n := count["hardening"]; len(n) > 0 {
		parts = append(parts, fmt.Sprintf("%s passed at hardening", claimsWord(len(n))))
	}
	if n := count["smoke"]; len(n) > 0 {
		parts = append(parts, fmt.Sprintf("%s passed at smoke only", claimsWord(len(n))))
	}
	if n := count["other"]; len(n) > 0 {
		parts = append(parts, fmt.Sprintf("%s undecided (inconclusive or partial)", claimsWord(len(n))))
	}
	if n := count["notrun"]; len(n) > 0 {
		parts = append(parts, fmt.Sprintf("%s not reached", claimsWord(len(n))))
	}
	s := strings.ToUpper(parts[0][:1]) + parts[0][1:]
	if len(parts) > 1 {
		s += "; " + strings.Join(parts[1:], "; ")
	}
	s += fmt.Sprintf(", of %s judged against %s.", claimsWord(len(f.Claims)), planSaid(f.Plan))
	var short []string
	for _, a := range f.Adequacy {
		if strings.HasPrefix(a.After, "not adequate") {
			short = append(short, a.Claim)
		}
	}
	if len(short) > 0 {
		s += fmt.Sprintf(" Coverage is not adequate for %s: see coverage adequacy.", strings.Join(short, ", "))
	}
	if len(f.Missing) > 0 {
		s += fmt.Sprintf(" %s behaviour%s the oracles check and no claim states.", fmt.Sprint(len(f.Missing)), plural(len(f.Missing)))
	}
	return s
}

func planSaid(p PlanRef) string {
	if p.Mode == "registry" {
		return "the registry as the project-wide plan"
	}
	s := fmt.Sprintf("the %s plan %s", p.Mode, p.File)
	if p.Edited {
		s += " (edited since plan wrote it: its sum no longer matches)"
	}
	return s
}

func claimsWord(n int) string {
	if n == 1 {
		return "1 claim"
	}
	return fmt.Sprintf("%d claims", n)
}

func wasWere(n int) string {
	if n == 1 {
		return "was"
	}
	return "were"
}

func singular(n int) string {
	if n == 1 {
		return "s"
	}
	return ""
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func listOr(xs []string, none string) string {
	if len(xs) == 0 {
		return none
	}
	return strings.Join(xs, ", ")
}
