// Package findings turns a validate run into findings a reviewer can sign
// or refuse without running anything: a verdict per claim with the budget
// it met, the evidence chain of every serious claim, who is to blame for
// each failure (the SUT, the harness, the checker or the environment),
// the claims no leg reached, the behaviour no claim states, how the run
// stands against the plan's coverage argument, and a conservative
// statement of confidence.
//
// The plan is the one validate -plan ran, or, for a plain validate, the
// registry itself as a project-wide plan. Nothing here is read from the
// results directory: the findings stand on the run's own verdicts and the
// registry.
package findings

import (
	"fmt"
	"slices"
	"strings"

	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/gate"
	"github.com/contested/contested/internal/gate/flakes"
	"github.com/contested/contested/internal/gate/ladder"
	"github.com/contested/contested/internal/gate/verdict"
	"github.com/contested/contested/internal/plan"
	"github.com/contested/contested/internal/registry"
	"github.com/contested/contested/internal/seed"
)

// Schema is the schema of findings.json.
const Schema = "contested/findings@1"

// The blames a failure can get: who is to fix it.
const (
	BlameSUT         = "SUT"
	BlameHarness     = "harness"
	BlameChecker     = "checker"
	BlameEnvironment = "environment"
	// BlameUnknown is honest when nothing decided yet: it always comes with
	// what would decide it.
	BlameUnknown = "unknown"
)

// The budget tiers a claim's run can meet.
const (
	TierNone      = "none"
	TierSmoke     = "smoke"
	TierHardening = "hardening"
	TierRelease   = "release"
)

// Findings is one run's findings.
type Findings struct {
	Schema string `json:"schema"`
	RunID  string `json:"run_id"`
	Commit string `json:"commit,omitempty"`
	Dirty  bool   `json:"dirty,omitempty"`
	Level  int    `json:"level"`
	// Plan is the plan the run stands against.
	Plan PlanRef `json:"plan"`
	// Green and Reasons are validate's own verdict.
	Green   bool     `json:"green"`
	Reasons []string `json:"reasons,omitempty"`
	// Summary is the headline, first: what was falsified, what held, what
	// was not reached.
	Summary     string              `json:"summary"`
	Claims      []Claim             `json:"claims"`
	Failures    []Failure           `json:"failures"`
	NotReached  []NotReached        `json:"not_reached"`
	Missing     []plan.MissingClaim `json:"missing_claims"`
	Adequacy    []Adequacy          `json:"adequacy"`
	Disclosures []Disclosure        `json:"release_disclosures"`
	Confidence  Confidence          `json:"confidence"`
}

// PlanRef names the plan: a plan file and its sum, or the registry.
type PlanRef struct {
	File   string `json:"file"`
	SHA256 string `json:"sha256,omitempty"`
	Mode   string `json:"mode"`
	// Edited says the plan file no longer matches its sum.
	Edited bool `json:"edited,omitempty"`
}

// Claim is one claim's verdict in this run.
type Claim struct {
	Key      string            `json:"key"`
	Surface  string            `json:"surface"`
	ID       string            `json:"id"`
	Text     string            `json:"text"`
	Category registry.Category `json:"category"`
	Serious  bool              `json:"serious"`
	// Verdict is one of the ten, rolled up from the legs that contest the
	// claim (any failing leg fails it; a leg not run or partly checked
	// caps it at PARTIAL-surface).
	Verdict verdict.Verdict `json:"verdict"`
	Reason  string          `json:"reason"`
	// Budget is the tier the run met for it: none, smoke, hardening or
	// release (seeds and fired faults against the registry's budget).
	Budget string `json:"budget_met"`
	Legs   []Leg  `json:"legs"`
	// Chain is the evidence chain, one line per leg, of a serious claim;
	// Broken says why there is none when there is none.
	Chain  []string `json:"evidence_chain,omitempty"`
	Broken string   `json:"chain_broken,omitempty"`
	// Reused names the earlier run a reused surface's verdict is from.
	Reused string `json:"reused,omitempty"`
}

// Leg is one leg's verdict as a claim shows it.
type Leg struct {
	Lever   string          `json:"lever"`
	Verdict verdict.Verdict `json:"verdict"`
}

// Failure is one failure of the run, with who is to blame.
type Failure struct {
	// What names it: a surface's leg, or a test.
	What    string `json:"what"`
	Surface string `json:"surface,omitempty"`
	Leg     string `json:"leg,omitempty"`
	Test    string `json:"test,omitempty"`
	Verdict string `json:"verdict"`
	Blame   string `json:"blame"`
	// Why says how the blame was decided; Pending, for an unknown blame,
	// what would decide it.
	Why     string `json:"why"`
	Pending string `json:"pending,omitempty"`
	Owner   string `json:"owner,omitempty"`
	Action  string `json:"action,omitempty"`
	Replay  string `json:"replay,omitempty"`
	// Claims are the claims it falsifies or leaves undecided.
	Claims []string `json:"claims,omitempty"`
}

// NotReached is a claim no leg of this run reached, and why.
type NotReached struct {
	Claim string `json:"claim"`
	Why   string `json:"why"`
}

// Adequacy sets a claim's coverage argument against what ran.
type Adequacy struct {
	Claim   string `json:"claim"`
	Planned string `json:"planned"`
	Ran     string `json:"ran"`
	After   string `json:"after"`
}

// Disclosure is a release budget the registry says is not provided,
// quoted as it is.
type Disclosure struct {
	Surface     string `json:"surface"`
	Reason      string `json:"reason"`
	RevisitWhen string `json:"revisit_when"`
}

// Confidence is the statement a reviewer signs or refuses, and how sure
// the run makes each claim.
type Confidence struct {
	Statement string   `json:"statement"`
	Aspects   []Aspect `json:"aspects"`
}

// Aspect is one claim's confidence: refuted, high, moderate or low.
type Aspect struct {
	Claim      string `json:"claim"`
	Confidence string `json:"confidence"`
	Reason     string `json:"reason"`
}

// Input is what findings are made from: the registry, the plan (nil for
// the registry as the project-wide plan) and the run's verdicts.
type Input struct {
	Registry *registry.Registry
	Plan     *plan.Plan
	PlanFile string
	RunID    string
	Revision flakes.Revision
	Level    int
	// Whole says the whole battery ran: only then is a leg that did not
	// run a finding rather than a choice.
	Whole    bool
	Surfaces []gate.SurfaceVerdict
	Failures []ladder.Plain
	// Tests are the battery's test outcomes (for a scenario's own test).
	Tests   []battery.Test
	History []flakes.Outcome
	Green   bool
	Reasons []string
}

// Build makes the findings.
func Build(in Input) *Findings {
	f := &Findings{Schema: Schema, RunID: in.RunID, Commit: in.Revision.Commit, Dirty: in.Revision.Dirty, Level: in.Level,
		Green: in.Green, Reasons: in.Reasons, Claims: []Claim{}, Failures: []Failure{}, NotReached: []NotReached{},
		Missing: []plan.MissingClaim{}, Adequacy: []Adequacy{}, Disclosures: []Disclosure{}}
	claims, hs, rows := scope(in)
	f.Plan = planRef(in)
	byID := map[string]gate.SurfaceVerdict{}
	for _, s := range in.Surfaces {
		byID[s.ID] = s
	}
	ran := map[string][]string{}
	for _, c := range claims {
		s, _ := in.Registry.Surface(c.Surface)
		sv, didRun := byID[c.Surface]
		cl := judgeClaim(in, s, c, sv, didRun)
		f.Claims = append(f.Claims, cl)
		if cl.Verdict == verdict.NotRun {
			f.NotReached = append(f.NotReached, NotReached{Claim: cl.Key, Why: cl.Reason})
		}
		if didRun {
			for _, l := range sv.Legs {
				for _, o := range l.Oracles {
					if !slices.Contains(ran[c.Surface], o.Name) {
						ran[c.Surface] = append(ran[c.Surface], o.Name)
					}
				}
			}
			if _, ok := ran[c.Surface]; !ok {
				ran[c.Surface] = []string{}
			}
		}
	}
	f.Failures = failures(in, f.Claims)
	f.Missing = plan.MissingClaims(in.Registry, ran)
	f.Adequacy = adequacy(in, f.Claims, hs, rows)
	f.Disclosures = disclosures(in.Registry, claims)
	f.Confidence = confidence(f, rows)
	f.Summary = summary(f)
	return f
}

// scope is the claims the findings judge, with their hypotheses and the
// coverage rows: the plan's, or the registry's as a project-wide plan.
func scope(in Input) ([]plan.ClaimAtRisk, []plan.Hypothesis, []plan.Row) {
	if in.Plan != nil {
		return in.Plan.Claims, in.Plan.Hypotheses, in.Plan.Coverage
	}
	return plan.Coverage(in.Registry, in.History, max(in.Level, 1))
}

func planRef(in Input) PlanRef {
	if in.Plan == nil {
		return PlanRef{File: in.Registry.Path, Mode: "registry"}
	}
	return PlanRef{File: in.PlanFile, SHA256: in.Plan.SHA256, Mode: in.Plan.Change.Mode, Edited: in.Plan.Edited()}
}

// judgeClaim rolls the verdicts of the legs that contest a claim up into
// the claim's, and gives it its budget and evidence chain.
func judgeClaim(in Input, s registry.Surface, c plan.ClaimAtRisk, sv gate.SurfaceVerdict, didRun bool) Claim {
	cl := Claim{Key: c.Key, Surface: c.Surface, ID: c.ID, Text: c.Text, Category: c.Category, Serious: c.Category.Serious(), Legs: []Leg{}, Budget: TierNone}
	var contesting []string
	for _, rc := range s.Claims {
		if rc.ID == c.ID {
			contesting = rc.ContestedBy(s)
		}
	}
	switch {
	case !didRun:
		cl.Verdict, cl.Reason = verdict.NotRun, fmt.Sprintf("surface %s did not run in this battery", c.Surface)
		if in.Plan == nil && !in.Whole {
			cl.Reason += " (a selected battery)"
		}
		return cl
	case len(contesting) == 0:
		cl.Verdict, cl.Reason = verdict.NotRun, "no leg contests it (its legs in the registry are none)"
		return cl
	}
	if sv.Reused != nil {
		cl.Reused = fmt.Sprintf("run %s (commit %s)", sv.Reused.RunID, short(sv.Reused.Commit))
	}
	var legs []verdict.Leg
	for _, l := range sv.Legs {
		if slices.Contains(contesting, l.Lever) {
			cl.Legs = append(cl.Legs, Leg{Lever: l.Lever, Verdict: l.Verdict})
			if l.Verdict != verdict.NotAtLevel {
				legs = append(legs, l)
			}
		}
	}
	if len(legs) == 0 {
		cl.Verdict, cl.Reason = verdict.NotRun, fmt.Sprintf("its legs (%s) do not run at level %d", strings.Join(contesting, ", "), in.Level)
		return cl
	}
	cl.Verdict, cl.Reason = rollUp(legs)
	cl.Budget = budgetMet(s.Budget, legs)
	if cl.Serious {
		cl.Chain, cl.Broken = chain(legs)
	}
	return cl
}

// rollUp is a claim's verdict from its legs': the first failure
// (reproducible before not), then a missing capability, an unproven fault,
// an oracle too weak; NOT-RUN when no leg ran; PARTIAL-surface when one
// did not run or was not checked while others did; PARTIAL-model when one
// checked a subset; PASS-smoke when one passed only at smoke; else
// PASS-hardening.
func rollUp(legs []verdict.Leg) (verdict.Verdict, string) {
	first := func(v verdict.Verdict) (verdict.Leg, bool) {
		i := slices.IndexFunc(legs, func(l verdict.Leg) bool { return l.Verdict == v })
		if i < 0 {
			return verdict.Leg{}, false
		}
		return legs[i], true
	}
	for _, v := range []verdict.Verdict{verdict.FailReproducible, verdict.FailNondeterministic, verdict.InconclusiveEnv,
		verdict.InconclusiveFaultNotProven, verdict.InconclusiveOracleTooWeak} {
		if l, ok := first(v); ok {
			return v, fmt.Sprintf("leg %s: %s", l.Lever, l.Reason)
		}
	}
	var notRun []string
	for _, l := range legs {
		if l.Verdict == verdict.NotRun {
			notRun = append(notRun, l.Lever)
		}
	}
	if len(notRun) == len(legs) {
		return verdict.NotRun, fmt.Sprintf("no leg of it ran (%s)", strings.Join(notRun, ", "))
	}
	if len(notRun) > 0 {
		return verdict.PartialSurface, fmt.Sprintf("%s did not run while the others did: a claim is capped at PARTIAL-surface when one of its legs is missing", strings.Join(notRun, ", "))
	}
	for _, v := range []verdict.Verdict{verdict.PartialSurface, verdict.PartialModel, verdict.PassSmoke} {
		if l, ok := first(v); ok {
			return v, fmt.Sprintf("leg %s: %s", l.Lever, l.Reason)
		}
	}
	var levers []string
	for _, l := range legs {
		levers = append(levers, l.Lever)
	}
	return verdict.PassHardening, fmt.Sprintf("every leg (%s) passed at hardening", strings.Join(levers, ", "))
}

// budgetMet is the highest tier whose seeds and faults every leg's run
// reached: the seeds it attempted and the faults that fired.
func budgetMet(b registry.Budget, legs []verdict.Leg) string {
	met := func(t registry.Tier) bool {
		if !t.Provided() {
			return false
		}
		for _, l := range legs {
			seeds := 0
			for _, r := range l.Runs {
				if r.Attempted {
					seeds++
				}
			}
			if seeds == 0 || seeds < t.Seeds || t.Faults > 0 && l.Fired < t.Faults {
				return false
			}
		}
		return true
	}
	switch {
	case b.Release.Provided() && b.Release.Seeds > 0 && met(b.Release) && met(b.Hardening):
		return TierRelease
	case met(b.Hardening):
		return TierHardening
	case met(registry.Tier{Seeds: 1}):
		return TierSmoke
	}
	return TierNone
}

// chain is the evidence chain of a serious claim, one line per leg that
// ran: "checker X consumed N operations of history Y under fault Z, with
// landing evidence E". A leg without a checked history breaks it.
func chain(legs []verdict.Leg) ([]string, string) {
	var lines, broken []string
	for _, l := range legs {
		var seeds []string
		for _, r := range l.Runs {
			if r.Attempted {
				seeds = append(seeds, strings.TrimPrefix(seed.Seed(r.Seed).Say(), "seed "))
			}
		}
		if len(seeds) == 0 {
			broken = append(broken, l.Lever+" did not run")
			continue
		}
		if len(l.Oracles) == 0 {
			broken = append(broken, l.Lever+" reported no checker")
			continue
		}
		type sum struct{ checked, produced int }
		var names []string
		sums := map[string]*sum{}
		for _, o := range l.Oracles {
			if sums[o.Name] == nil {
				sums[o.Name] = &sum{}
				names = append(names, o.Name)
			}
			sums[o.Name].checked += o.OpsChecked
			sums[o.Name].produced += o.OpsProduced
		}
		var checkers []string
		for _, n := range names {
			checkers = append(checkers, fmt.Sprintf("%s consumed %d of %d operations", n, sums[n].checked, sums[n].produced))
		}
		history := "the history of " + strings.Join(l.Tests, ", ")
		if len(l.Tests) == 0 {
			history = "the leg's history"
		}
		landing := strings.Join(l.Landing(), "; ")
		lines = append(lines, fmt.Sprintf("checker %s, of %s over seeds %s, under fault %s (%d of %d armed fired), with landing evidence %s",
			strings.Join(checkers, "; "), history, strings.Join(seeds, ", "), l.Lever, l.Fired, l.Armed, landing))
	}
	if len(broken) > 0 {
		return lines, strings.Join(broken, "; ")
	}
	return lines, ""
}

// disclosures are the release budgets the scope's surfaces declare not
// provided, quoted as the registry gives them.
func disclosures(reg *registry.Registry, claims []plan.ClaimAtRisk) []Disclosure {
	out := []Disclosure{}
	var seen []string
	for _, c := range claims {
		s, ok := reg.Surface(c.Surface)
		if !ok || slices.Contains(seen, s.ID) || s.Budget.Release.Provided() {
			continue
		}
		seen = append(seen, s.ID)
		out = append(out, Disclosure{Surface: s.ID, Reason: s.Budget.Release.NotProvided, RevisitWhen: s.Budget.Release.RevisitWhen})
	}
	return out
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	if commit == "" {
		return "unknown"
	}
	return commit
}
