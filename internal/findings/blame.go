package findings

import (
	"fmt"
	"slices"
	"strings"

	"github.com/contested/contested/internal/gate/ladder"
	"github.com/contested/contested/internal/gate/verdict"
)

// failures lists every leg that did not pass (a leg left out at this
// level is no failure, and in a selected battery neither is one that did
// not run) and every failing test no leg accounts for, each with its
// blame.
func failures(in Input, claims []Claim) []Failure {
	out := []Failure{}
	seenTests := map[string]bool{}
	for _, sv := range in.Surfaces {
		for _, l := range sv.Legs {
			switch {
			case l.Verdict.Pass(), l.Verdict == verdict.NotAtLevel:
				continue
			case l.Verdict == verdict.NotRun && !in.Whole && in.Plan == nil:
				continue
			}
			f := Failure{What: sv.ID + "/" + l.Lever, Surface: sv.ID, Leg: l.Lever, Verdict: string(l.Verdict), Replay: l.Replay}
			f.Blame, f.Why, f.Pending = blameLeg(l)
			if d := l.Decision; d != nil {
				f.Owner, f.Action, f.Test = d.Owner, d.Action, d.Test
			}
			for _, c := range claims {
				if c.Surface == sv.ID && slices.ContainsFunc(c.Legs, func(cl Leg) bool { return cl.Lever == l.Lever }) {
					f.Claims = append(f.Claims, c.Key)
				}
			}
			for _, t := range l.Tests {
				seenTests[t] = true
			}
			out = append(out, f)
		}
	}
	for _, p := range in.Failures {
		if p.Test != "" && (seenTests[p.Test] || coveredByLeg(p.Test, seenTests)) {
			continue
		}
		what := p.Package + " " + p.Test
		if p.Test == "" {
			what = p.Package + ": " + p.What
		}
		f := Failure{What: strings.TrimSpace(what), Test: p.Test, Surface: p.Surface, Verdict: orFail(p.Verdict), Owner: p.Owner, Action: p.Action, Replay: p.Replay}
		f.Blame, f.Why, f.Pending = blamePlain(p)
		if p.Test == "" {
			f.Blame, f.Why, f.Pending = BlameHarness, fmt.Sprintf("the package failed outside any test (%s): its tests never ran, so no claim was tested; the test code or its build is to fix", p.What), ""
		}
		out = append(out, f)
	}
	return out
}

// coveredByLeg reports whether a failing test is a parent of a leg's test
// already listed (TestX when TestX/reset is).
func coveredByLeg(test string, seen map[string]bool) bool {
	for t := range seen {
		if strings.HasPrefix(t, test+"/") {
			return true
		}
	}
	return false
}

// blameLeg is the blame of a leg that did not pass. The checker is to
// blame when the oracle could not decide, or when it rejected a history
// it did not consume (no operation checked, or more than were produced):
// its verdict stands on nothing the claim's history holds. A failure
// otherwise takes the ladder's owner. A missing capability is the
// environment's; a fault not proven to land, a leg not run or not
// checked, the harness's.
func blameLeg(l verdict.Leg) (blame, why, pending string) {
	switch l.Verdict {
	case verdict.InconclusiveOracleTooWeak:
		return BlameChecker, "the oracle could not decide: " + l.Reason, ""
	case verdict.InconclusiveEnv:
		return BlameEnvironment, "a capability was missing before the run: " + l.Reason, ""
	case verdict.InconclusiveFaultNotProven:
		if text, ok := l.FailedBeforeArming(); ok {
			return BlameHarness, "the leg failed before its fault was armed: " + text + ": that is evidence about its setup, not about the claim under fault, which this run did not test", ""
		}
		return BlameHarness, "the fault was not proven to land, so the run says nothing of the claim: " + l.Reason, ""
	case verdict.PartialSurface, verdict.PartialModel:
		return BlameHarness, "part of the leg's history went unchecked: " + l.Reason, ""
	case verdict.NotRun:
		return BlameHarness, "the leg is declared and its test did not run it: " + l.Reason, ""
	}
	for _, o := range l.Oracles {
		if o.Result == "violated" && (o.OpsChecked == 0 || o.OpsChecked > o.OpsProduced) {
			return BlameChecker, fmt.Sprintf("oracle %s rejected the run having checked %d of %d operations: a verdict on a history it did not consume", o.Name, o.OpsChecked, o.OpsProduced), ""
		}
	}
	if l.Decision != nil {
		b, w, p := blameOwner(l.Decision.Owner, true, l.Decision.Test)
		return b, w, p
	}
	test := ""
	if len(l.Tests) > 0 {
		test = l.Tests[0]
	}
	return BlameUnknown, "the ladder did not walk the failure", "walk it: go tool mage arbitrate " + test
}

// blamePlain is the blame of a failing test no leg accounts for: a plain
// Go test, which arms no fault. Its sentence names the test and its
// failure, and speaks of a contract only as the surface's, judged apart
// from the test (and of none when no surface lists the test).
func blamePlain(p ladder.Plain) (blame, why, pending string) {
	blame, why, pending = blameOwner(p.Owner, p.Arbitrated, p.Test)
	failed := "the plain test " + p.Test + " (it arms no fault) failed"
	if p.FirstLine != "" {
		failed += ": " + p.FirstLine
	}
	o := strings.TrimSpace(p.Owner)
	switch {
	case blame == BlameUnknown:
	case strings.HasPrefix(o, string(ladder.Component)):
		why = fmt.Sprintf("%s; the ladder's owner is the component: %s's contract fails in isolation", failed, p.Surface)
		return
	case strings.HasPrefix(o, string(ladder.TestAuthor)) && p.Surface == "":
		why = failed + "; the ladder's owner is the test author: no surface lists the test, so no contract is involved, and the defect is in the test or the code it tests"
		return
	case strings.HasPrefix(o, string(ladder.TestAuthor)) && p.SurfaceVerdict == string(verdict.Green):
		why = fmt.Sprintf("%s; the ladder's owner is the test author: %s's contract holds in isolation, so the test failed around it", failed, p.Surface)
		return
	case strings.HasPrefix(o, string(ladder.TestAuthor)):
		why = failed + "; the ladder's owner is the test author"
		return
	}
	return blame, failed + "; " + why, pending
}

// blameOwner maps the ladder's owner to a blame: the component is the
// SUT, the test author the harness, capacity, infrastructure and the
// fault layer the environment.
func blameOwner(owner string, arbitrated bool, test string) (blame, why, pending string) {
	o := strings.TrimSpace(owner)
	switch {
	case !arbitrated || o == "" || o == ladder.PlainOwner || o == "none":
		return BlameUnknown, "the ladder did not decide it", "walk it: go tool mage arbitrate " + test
	case strings.HasPrefix(o, string(ladder.Component)):
		return BlameSUT, "the ladder's owner is the component: its contract fails in isolation", ""
	case strings.HasPrefix(o, string(ladder.TestAuthor)):
		return BlameHarness, "the ladder's owner is the test author: the contract holds in isolation, the test failed around it", ""
	case strings.HasPrefix(o, string(ladder.Capacity)), strings.HasPrefix(o, string(ladder.Infrastructure)), strings.HasPrefix(o, string(ladder.FaultLayer)):
		return BlameEnvironment, fmt.Sprintf("the ladder's owner is %s: the machine or the fault layer, not the code", o), ""
	}
	return BlameUnknown, "the ladder's owner " + o + " maps to no blame", "walk it again: go tool mage arbitrate " + test
}

func orFail(v string) string {
	if v == "" {
		return "FAIL"
	}
	return v
}
