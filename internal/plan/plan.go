// Package plan turns a change, or the whole registry, into a test plan a
// reviewer can read: the claims the change puts at risk and why, the
// failure modes that could falsify each one (from the pitfall catalog),
// which legs and tests exercise them and where nothing does, the level and
// environment to run at, and a scenario with budgets, a target test file
// and a Go skeleton for every gap.
//
// A plan is data (Plan, saved as plan.json) and its rendering (plan.md).
// Its SHA256 covers everything but the skeletons, whose headers carry it,
// and the time it was made: a skeleton traces back to the plan it came
// from, and a plan edited after it was made no longer matches its sum.
package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/contested/contested/internal/capability"
	"github.com/contested/contested/internal/digest"
	"github.com/contested/contested/internal/gate/certify"
	"github.com/contested/contested/internal/gate/flakes"
	"github.com/contested/contested/internal/registry"
)

// Schema is the schema of plan.json.
const Schema = "contested/plan@1"

// Plan is one test plan.
type Plan struct {
	Schema string `json:"schema"`
	// SHA256 is the plan's sum (see Sum).
	SHA256 string `json:"sha256"`
	// Made is when the plan was made; not part of its sum.
	Made   time.Time `json:"made"`
	Module string    `json:"module"`
	// Registry is the registry file the claims come from, relative to the
	// module root.
	Registry string `json:"registry"`
	Change   Change `json:"change"`
	Radius   Radius `json:"blast_radius"`
	// EarlyExit says why the change needs no plan (docs only, or no
	// surface reached); empty when it needs one.
	EarlyExit     string          `json:"early_exit,omitempty"`
	Claims        []ClaimAtRisk   `json:"claims"`
	Hypotheses    []Hypothesis    `json:"hypotheses"`
	NotApplicable []NotApplicable `json:"not_applicable"`
	Coverage      []Row           `json:"coverage"`
	Level         Level           `json:"level"`
	Environment   []Requirement   `json:"environment"`
	Scenarios     []Scenario      `json:"scenarios"`
	// Packages are what validate -plan runs: the packages declaring the
	// tests of the surfaces at risk, and those the scenarios' target
	// files are in, as go test patterns ("./examples/ledger").
	Packages      []string       `json:"packages"`
	MissingClaims []MissingClaim `json:"missing_claims"`
	Adequacy      []Adequacy     `json:"adequacy"`
	Residual      []string       `json:"residual_uncertainty"`
}

// ClaimAtRisk is a claim the change could regress, with what contests it.
type ClaimAtRisk struct {
	// Key names the claim across the module: "<surface>/<claim id>".
	Key      string            `json:"key"`
	Surface  string            `json:"surface"`
	ID       string            `json:"id"`
	Text     string            `json:"text"`
	Category registry.Category `json:"category"`
	Serious  bool              `json:"serious"`
	// Implicit claims are a surface's behavior; Split says how to split it.
	Implicit bool   `json:"implicit,omitempty"`
	Inferred string `json:"inferred,omitempty"`
	Split    string `json:"split,omitempty"`
	Class    string `json:"class"`
	Owner    string `json:"owner"`
	Oracle   string `json:"oracle"`
	// Legs are the legs that contest the claim at the plan's level;
	// NotAtLevel those that contest it at other levels only.
	Legs       []string `json:"legs"`
	NotAtLevel []string `json:"not_at_level,omitempty"`
	Tests      []string `json:"tests"`
	// Why says how the change reaches the claim.
	Why []string `json:"why"`
	// Line is the claim's line in the registry.
	Line int `json:"line"`
}

// Hypothesis is one way a claim could fail: a pitfall of the catalog
// against it.
type Hypothesis struct {
	ID      string   `json:"id"` // H1, H2, ...
	Claim   string   `json:"claim"`
	Pitfall string   `json:"pitfall"`
	Title   string   `json:"title"`
	Text    string   `json:"text"`
	Levers  []string `json:"levers"`
	How     string   `json:"how"`
	Models  []string `json:"models"`
	Checker string   `json:"checker"`
}

// NotApplicable is a pitfall judged not to apply to a claim, and why.
type NotApplicable struct {
	Claim   string `json:"claim"`
	Pitfall string `json:"pitfall"`
	Title   string `json:"title"`
	Reason  string `json:"reason"`
	// By is "category" (the pitfall falsifies claims of other
	// categories), "class" (it does not apply to the surface's class) or
	// "registry" (the claim's not_applicable rules it out).
	By string `json:"by"`
}

// The gap kinds of the coverage matrix.
const (
	GapNone       = ""
	GapNoTest     = "no test"
	GapNoFault    = "no fault variant"
	GapOracleWeak = "oracle too weak"
	GapSmokeOnly  = "smoke only"
)

// Row is one row of the coverage matrix: a claim, a hypothesis against
// it, what exercises it, its last verdict and the gap.
type Row struct {
	Claim      string `json:"claim"`
	Hypothesis string `json:"hypothesis"`
	// Legs are the claim's legs that can force the hypothesis.
	Legs  []string `json:"legs"`
	Tests []string `json:"tests"`
	// Last is the legs' last outcome in the flake history.
	Last string `json:"last_verdict"`
	Gap  string `json:"gap"`
	Why  string `json:"why"`
	// Scenario is the scenario that closes the gap, when one can.
	Scenario string `json:"scenario,omitempty"`
}

// Level is the CONTESTED_LEVEL the plan runs at, and why.
type Level struct {
	Level int    `json:"level"`
	Why   string `json:"why"`
	// LeaseFiles are the touched files of lease, fence or lock code.
	LeaseFiles []string `json:"lease_files,omitempty"`
}

// Requirement is one capability the plan's levers need.
type Requirement struct {
	Name        capability.Name `json:"name"`
	Requirement string          `json:"requirement"`
	NeededBy    []string        `json:"needed_by"`
	// Alternative says when another capability can stand in for it.
	Alternative string `json:"alternative,omitempty"`
	// Probed says this machine was asked when the plan was made; then
	// Present, Version, Source and Provide are its answer.
	Probed  bool   `json:"probed"`
	Present bool   `json:"present"`
	Version string `json:"version,omitempty"`
	Source  string `json:"source,omitempty"`
	Provide string `json:"provide,omitempty"`
	// NotRun are the surfaces whose registry needs name this capability,
	// with the legs of each the plan runs, when the probe found it
	// missing: validate judges those legs NOT-RUN on this machine.
	NotRun []string `json:"not_run,omitempty"`
}

// Budget is a scenario's three tiers, from its surface's registry budget.
type Budget struct {
	Smoke     string `json:"smoke"`
	Hardening string `json:"hardening"`
	Release   string `json:"release"`
	// ReleaseNotProvided and RevisitWhen are set when the release tier is
	// a disclosure, quoted from the registry.
	ReleaseNotProvided string `json:"release_not_provided,omitempty"`
	RevisitWhen        string `json:"revisit_when,omitempty"`
	// HardeningSeeds is the seeds the hardening tier asks for.
	HardeningSeeds int `json:"hardening_seeds"`
}

// Oracle is the check a scenario holds its history to.
type Oracle struct {
	// Model is the contested/history model ("idempotent"), empty when the
	// check is a property of its own.
	Model   string `json:"model,omitempty"`
	Checker string `json:"checker"`
}

// Scenario is what closes one gap, or the gaps of one claim that one lever
// can close: named after the claim it tries to falsify.
type Scenario struct {
	ID        string   `json:"id"` // S1, S2, ...
	Name      string   `json:"name"`
	Falsifies []string `json:"falsifies"`
	Closes    []string `json:"closes"`
	Gap       string   `json:"gap"`
	Surface   string   `json:"surface"`
	Lever     string   `json:"lever"`
	Workload  string   `json:"workload"`
	Faults    string   `json:"faults"`
	Oracle    Oracle   `json:"oracle"`
	// Landing is the evidence that proves the fault landed.
	Landing   string `json:"landing"`
	Ambiguity string `json:"ambiguity"`
	Budget    Budget `json:"budget"`
	// Target is the test file the scenario becomes, relative to the
	// module root; Test the test function it declares.
	Target string `json:"target"`
	Test   string `json:"test"`
	// Package is the Go package clause of the target file.
	Package string `json:"package"`
	// Existing names the test that already exercises the scenario (a
	// smoke-only gap needs a deeper run, not a new test); no skeleton then.
	Existing string `json:"existing,omitempty"`
	// Run is the command that runs it over its hardening budget.
	Run      string `json:"run"`
	Skeleton string `json:"skeleton,omitempty"`
}

// MissingClaim is a behaviour a surface's tests rely on that no claim of
// it states.
type MissingClaim struct {
	Surface  string            `json:"surface"`
	Category registry.Category `json:"category"`
	Evidence string            `json:"evidence"`
}

// Adequacy is the argument that a claim's hypotheses are covered, and
// what rests on which scenario.
type Adequacy struct {
	Claim    string `json:"claim"`
	Argument string `json:"argument"`
}

// Input is what Build plans from.
type Input struct {
	// Root is the module root; Module its path.
	Root   string
	Module string
	// Registry is the registry; RegistryFile its path relative to Root.
	Registry     *registry.Registry
	RegistryFile string
	// OldRegistry is the registry at the change's base (nil when it did
	// not parse there or did not exist): surfaces whose entry changed are
	// at risk.
	OldRegistry *registry.Registry
	// Digest is the module's packages with the files each stands on.
	Digest *digest.Module
	// Certificates are the reuse certificates this checkout trusts: the
	// newest of each package records the files its tests touched, which
	// a change to reaches it. Nil when none were read.
	Certificates *certify.Set
	Change       Change
	// History is the flake history, oldest first.
	History []flakes.Outcome
	// Probe asks this machine for a capability; nil leaves the
	// environment unprobed.
	Probe func(capability.Name) capability.Capability
	// PlanFile is where plan.md is written, as the skeletons' headers name
	// it (relative to Root when inside it).
	PlanFile string
	Now      time.Time
}

// Build makes the plan.
func Build(in Input) *Plan {
	p := &Plan{Schema: Schema, Made: in.Now.UTC(), Module: in.Module, Registry: in.RegistryFile, Change: in.Change,
		Claims: []ClaimAtRisk{}, Hypotheses: []Hypothesis{}, NotApplicable: []NotApplicable{}, Coverage: []Row{},
		Environment: []Requirement{}, Scenarios: []Scenario{}, MissingClaims: []MissingClaim{}, Adequacy: []Adequacy{}, Residual: []string{}}
	p.Radius = blastRadius(in)
	p.EarlyExit = earlyExit(p.Change, p.Radius)
	p.Level = chooseLevel(in, p.Radius)
	p.Claims = claimsAtRisk(in.Registry, p.Radius, p.Level.Level)
	p.Hypotheses, p.NotApplicable = hypotheses(in.Registry, p.Claims)
	p.Coverage = coverage(in.Registry, p.Claims, p.Hypotheses, in.History, p.Level.Level)
	p.Scenarios = scenarios(in, p)
	p.Environment = environment(in, p)
	p.Packages = packages(in, p)
	p.MissingClaims = missingClaims(in.Registry, p.Claims, nil)
	p.Adequacy = adequacy(p)
	p.Residual = residual(p)
	p.SHA256 = Sum(p)
	for i := range p.Scenarios {
		p.Scenarios[i].Skeleton = skeleton(in, p, p.Scenarios[i])
	}
	return p
}

// packages are the go test patterns of the packages declaring the tests
// of the surfaces at risk, and of the scenarios' target files, sorted.
func packages(in Input, p *Plan) []string {
	out := []string{}
	add := func(dir string) {
		pat := "./" + strings.TrimPrefix(dir, "./")
		if dir == "." {
			pat = "."
		}
		if !slices.Contains(out, pat) {
			out = append(out, pat)
		}
	}
	for _, id := range p.Surfaces() {
		if s, ok := in.Registry.Surface(id); ok {
			dir, _ := surfaceDir(in, s)
			add(dir)
		}
	}
	for _, s := range p.Scenarios {
		if s.Existing == "" {
			add(path.Dir(s.Target))
		}
	}
	slices.Sort(out)
	return out
}

// Sum is a plan's sha256: of its JSON with its own sum, the time it was
// made and the skeletons left out (they carry the sum in their headers).
func Sum(p *Plan) string {
	c := *p
	c.SHA256, c.Made = "", time.Time{}
	c.Scenarios = make([]Scenario, len(p.Scenarios))
	for i, s := range p.Scenarios {
		s.Skeleton = ""
		c.Scenarios[i] = s
	}
	b, _ := json.Marshal(c)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// Claim returns the claim at risk with that key.
func (p *Plan) Claim(key string) (ClaimAtRisk, bool) {
	for _, c := range p.Claims {
		if c.Key == key {
			return c, true
		}
	}
	return ClaimAtRisk{}, false
}

// Hypothesis returns the hypothesis with that id.
func (p *Plan) Hypothesis(id string) (Hypothesis, bool) {
	for _, h := range p.Hypotheses {
		if h.ID == id {
			return h, true
		}
	}
	return Hypothesis{}, false
}

// Surfaces returns the ids of the surfaces at risk, in registry order.
func (p *Plan) Surfaces() []string {
	var out []string
	for _, c := range p.Claims {
		if len(out) == 0 || out[len(out)-1] != c.Surface {
			out = append(out, c.Surface)
		}
	}
	return out
}
