package plan

import (
	"go/parser"
	"go/token"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/contested/contested/internal/faultlayer/levers"
)

// TestBlastRadius: each shape of change reaches the packages whose test
// binaries are built from its files, the surfaces those packages test,
// and says so when it reaches none.
func TestBlastRadius(t *testing.T) {
	tests := []struct {
		name      string
		files     []string
		packages  []string
		surfaces  []string
		docsOnly  bool
		earlyExit string
	}{
		{"a component file reaches the surface whose test binary is built from it", []string{"deposit/deposit.go"},
			[]string{"example.com/bank/deposit"}, []string{"bank.deposit"}, false, ""},
		{"a shared package reaches every package that links it", []string{"money/money.go"},
			[]string{"example.com/bank/deposit", "example.com/bank/money"}, []string{"bank.deposit"}, false, ""},
		{"a testdata file reaches its package", []string{"deposit/testdata/golden.json"},
			[]string{"example.com/bank/deposit"}, []string{"bank.deposit"}, false, ""},
		{"the module graph reaches every package", []string{"go.sum"},
			[]string{"example.com/bank/deposit", "example.com/bank/e2e", "example.com/bank/lock", "example.com/bank/money"}, []string{"bank.deposit", "bank.lock"}, false, ""},
		{"a deleted Go file reaches the package of its directory", []string{"lock/gone.go"},
			[]string{"example.com/bank/lock"}, []string{"bank.lock"}, false, ""},
		{"a package no surface tests reaches no surface", []string{"e2e/e2e_test.go"},
			[]string{"example.com/bank/e2e"}, nil, false, "reaches no surface"},
		{"documentation alone is docs only", []string{"README.md", "docs/guide.md"},
			nil, nil, true, "docs only"},
		{"a script reaches nothing and is not docs", []string{"scripts/release.sh"},
			nil, nil, false, "reaches no surface"},
		{"nothing changed is nothing to plan", nil, nil, nil, false, "Nothing changed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Build(input(t, depositRegistry, tt.files...))
			var pkgs []string
			for _, pr := range p.Radius.Packages {
				pkgs = append(pkgs, pr.ImportPath)
			}
			if !slices.Equal(pkgs, tt.packages) {
				t.Errorf("packages %v, want %v", pkgs, tt.packages)
			}
			if got := p.Surfaces(); !slices.Equal(got, tt.surfaces) {
				t.Errorf("surfaces %v, want %v", got, tt.surfaces)
			}
			if p.Radius.DocsOnly != tt.docsOnly {
				t.Errorf("docs only %v, want %v", p.Radius.DocsOnly, tt.docsOnly)
			}
			if tt.earlyExit == "" && p.EarlyExit != "" || !strings.Contains(p.EarlyExit, tt.earlyExit) {
				t.Errorf("early exit %q, want one saying %q", p.EarlyExit, tt.earlyExit)
			}
			if p.Radius.Summary == "" {
				t.Errorf("no summary")
			}
		})
	}
}

// TestRegistryEntriesAtRisk: a change to the registry puts at risk the
// surfaces whose entry (claims included) changed, and only those.
func TestRegistryEntriesAtRisk(t *testing.T) {
	in := input(t, depositRegistry, "contested-surfaces.toml")
	in.OldRegistry = parse(t, strings.Replace(depositRegistry, "applied once, however often", "applied once, whenever", 1))
	p := Build(in)
	if got := p.Surfaces(); !slices.Equal(got, []string{"bank.deposit"}) {
		t.Fatalf("surfaces at risk %v, want bank.deposit, whose claim changed", got)
	}
	if !slices.Contains(p.Claims[0].Why, "its registry entry changed") {
		t.Errorf("why %v", p.Claims[0].Why)
	}
	in.OldRegistry = parse(t, depositRegistry)
	if p := Build(in); len(p.Surfaces()) != 0 {
		t.Errorf("an unchanged registry puts %v at risk", p.Surfaces())
	}
}

// TestLevel: lease, fence or lock code plans at level 2, a change across
// [plan] spread surfaces at level 3, the higher rule winning, and the
// reason says which.
func TestLevel(t *testing.T) {
	tests := []struct {
		name  string
		files []string
		doc   string
		level int
		says  []string
	}{
		{"a component change is level 1", []string{"deposit/deposit.go"}, depositRegistry, 1, []string{"no lease, fence or lock code"}},
		{"lease code is level 2", []string{"lock/lease.go"}, depositRegistry, 2, []string{"lock/lease.go", "levers are combined"}},
		{"lease-named docs are no lease code", []string{"docs/lease.md", "deposit/deposit.go"}, depositRegistry, 1, nil},
		{"a change across spread surfaces is level 3", []string{"go.sum"}, depositRegistry + "\n[plan]\nspread = 2\n", 3, []string{"2 surfaces", "spread = 2"}},
		{"both rules: the higher wins and both are said", []string{"go.sum", "lock/lease.go"}, depositRegistry + "\n[plan]\nspread = 2\n", 3, []string{"spread = 2", "lock/lease.go"}},
		{"lease_paths decide what lease code is", []string{"deposit/deposit.go"}, depositRegistry + "\n[plan]\nlease_paths = [\"deposit/*.go\"]\n", 2, []string{"deposit/deposit.go"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Build(input(t, tt.doc, tt.files...))
			if p.Level.Level != tt.level {
				t.Errorf("level %d (%s), want %d", p.Level.Level, p.Level.Why, tt.level)
			}
			for _, s := range tt.says {
				if !strings.Contains(p.Level.Why, s) {
					t.Errorf("the reason %q does not say %q", p.Level.Why, s)
				}
			}
		})
	}
}

// TestCoverageGapKinds: each gap kind is found where it applies, in
// order: no test, no fault variant, oracle too weak, smoke only, and a
// leg the history shows hardened covers its hypothesis.
func TestCoverageGapKinds(t *testing.T) {
	weakOracle := strings.Replace(depositRegistry, `oracle = "exactly-once (applied per key)"`, `oracle = "balance read back"`, 1)
	noLegs := strings.Replace(depositRegistry, `category = "idempotency"`, "category = \"idempotency\"\nlegs = []", 1)
	levels := strings.Replace(depositRegistry, `package = "./deposit"`, "package = \"./deposit\"\nlevels = { reset = [2, 3] }", 1)
	tests := []struct {
		name, doc, pitfall, gap, why string
		hardened                     bool
	}{
		{"a claim no leg contests has no test", noLegs, "duplicate-effect-on-retry", GapNoTest, "no leg contests C1", false},
		{"legs that strike between operations cannot cut one between its commits", depositRegistry, "gap-between-commits", GapNoFault, "reset or disconnect cannot force it; it takes crash-and-resume or mass-restart", false},
		{"an oracle without the words of the check is too weak", weakOracle, "duplicate-effect-on-retry", GapOracleWeak, "names no check of exactly-once", false},
		{"a leg never run over its hardening seeds is smoke only", depositRegistry, "duplicate-effect-on-retry", GapSmokeOnly, "over its 3 hardening seeds", false},
		{"a leg the history shows hardened covers it", depositRegistry, "duplicate-effect-on-retry", GapNone, "passed reset over 3 seeds", true},
		{"a leg that does not run at the plan's level forces nothing", levels, "duplicate-effect-on-retry", GapNoFault, "reset would, but does not run at level 1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := input(t, tt.doc, "deposit/deposit.go")
			if tt.hardened {
				in.History = hardened("bank.deposit", "reset", "run-7", 3)
			}
			r := row(t, Build(in), "bank.deposit/C1", tt.pitfall)
			if r.Gap != tt.gap || !strings.Contains(r.Why, tt.why) {
				t.Errorf("gap %q (%s), want %q saying %q", r.Gap, r.Why, tt.gap, tt.why)
			}
		})
	}
}

// TestLastVerdictIsTheHistorysNewest: the matrix shows the newest outcome
// of the legs that force a hypothesis, skips aside.
func TestLastVerdictIsTheHistorysNewest(t *testing.T) {
	in := input(t, depositRegistry, "deposit/deposit.go")
	in.History = append(hardened("bank.deposit", "reset", "run-1", 1), hardened("bank.deposit", "reset", "run-2", 1)...)
	in.History[1].Verdict = "fail"
	in.History = append(in.History, hardened("bank.deposit", "reset", "run-3", 1)...)
	in.History[2].Verdict = "skip"
	r := row(t, Build(in), "bank.deposit/C1", "duplicate-effect-on-retry")
	if !strings.HasPrefix(r.Last, "fail (reset, run-2") {
		t.Errorf("last verdict %q, want run-2's fail", r.Last)
	}
}

// TestPitfallsJudgedNotToApplySayWhy: a pitfall of another category, of
// another class or ruled out in the registry is listed with its reason,
// never silently left out.
func TestPitfallsJudgedNotToApplySayWhy(t *testing.T) {
	doc := strings.Replace(depositRegistry, `category = "idempotency"`, "category = \"idempotency\"\nnot_applicable = { \"gap-between-commits\" = \"a deposit is one transaction\" }", 1)
	p := Build(input(t, doc, "deposit/deposit.go", "lock/lease.go"))
	want := map[string]string{
		"bank.deposit/C1 gap-between-commits":    "registry",
		"bank.deposit/C1 lost-update":            "category",
		"bank.lock/C1 stale-read-after-failover": "class",
	}
	for _, na := range p.NotApplicable {
		k := na.Claim + " " + na.Pitfall
		if by, ok := want[k]; ok {
			if na.By != by || na.Reason == "" {
				t.Errorf("%s: by %q, reason %q; want by %q with a reason", k, na.By, na.Reason, by)
			}
			delete(want, k)
		}
	}
	for k := range want {
		t.Errorf("%s is not listed as not applicable", k)
	}
	for _, h := range p.Hypotheses {
		if h.Claim == "bank.deposit/C1" && h.Pitfall == "gap-between-commits" {
			t.Errorf("a pitfall the registry rules out is still a hypothesis: %+v", h)
		}
	}
}

// TestATwoCommitDepositGetsAScenarioNoLegOfItsOwnCouldRun is the issue's
// case: a deposit contested by reset and disconnect alone has no leg that
// can land between its two commits; the plan says so and proposes a
// crash-and-resume scenario named after the claim, with its oracle,
// landing evidence, budgets, target file and a skeleton that names the
// plan, the scenario and the plan's sum.
func TestATwoCommitDepositGetsAScenarioNoLegOfItsOwnCouldRun(t *testing.T) {
	p := Build(input(t, depositRegistry, "deposit/deposit.go"))
	r := row(t, p, "bank.deposit/C1", "gap-between-commits")
	if r.Gap != GapNoFault || r.Scenario == "" {
		t.Fatalf("row %+v: want no fault variant, closed by a scenario", r)
	}
	var sc Scenario
	for _, s := range p.Scenarios {
		if s.ID == r.Scenario {
			sc = s
		}
	}
	checks := []struct{ what, got, want string }{
		{"lever", sc.Lever, "crash-and-resume"},
		{"name", sc.Name, "idempotency_deposit_applied_once_often_retried_under_crash_and_resume"},
		{"model", sc.Oracle.Model, "idempotent"},
		{"target", sc.Target, "deposit/plan_bank_deposit_c1_crash_and_resume_test.go"},
		{"test", sc.Test, "TestIdempotencyDepositAppliedOnceOftenRetriedUnderCrashAndResume"},
		{"hardening", sc.Budget.Hardening, "3 seeds"},
		{"release", sc.Budget.Release, "not provided: no release budget declared"},
		{"landing", sc.Landing, "killed by SIGKILL"},
		{"ambiguity", sc.Ambiguity, "maybe-applied"},
		{"run", sc.Run, "CONTESTED_LEVEL=1 go tool mage contested bank.deposit"},
		{"package", sc.Package, "deposit"},
	}
	for _, c := range checks {
		if !strings.Contains(c.got, c.want) {
			t.Errorf("%s = %q, want it to hold %q", c.what, c.got, c.want)
		}
	}
	for _, want := range []string{Header, "test-results/plan.md", "Scenario: " + sc.ID + " " + sc.Name, "Plan sha256: " + p.SHA256,
		"contested.Start(t, \"bank.deposit\", contested.CrashAndResume)", "leg.StartWorker", "history.NewIdempotent()", "t.Skip("} {
		if !strings.Contains(sc.Skeleton, want) {
			t.Errorf("the skeleton lacks %q:\n%s", want, sc.Skeleton)
		}
	}
	if !strings.HasPrefix(sc.Skeleton, Header) {
		t.Errorf("the skeleton does not start with the generated header")
	}
	if !slices.Contains(p.Packages, "./deposit") {
		t.Errorf("validate -plan would not run ./deposit: %v", p.Packages)
	}
}

// TestSmokeOnlyGapsShareOneDeeperRun: the smoke-only gaps one leg leaves
// across a surface's claims are one scenario, the existing test run over
// the hardening budget, with no skeleton.
func TestSmokeOnlyGapsShareOneDeeperRun(t *testing.T) {
	p := Build(input(t, depositRegistry, "deposit/deposit.go"))
	var smoke []Scenario
	for _, s := range p.Scenarios {
		if s.Gap == GapSmokeOnly && s.Lever == "reset" {
			smoke = append(smoke, s)
		}
	}
	if len(smoke) != 1 {
		t.Fatalf("%d smoke-only scenarios under reset, want one: %+v", len(smoke), smoke)
	}
	s := smoke[0]
	if !slices.Equal(s.Falsifies, []string{"bank.deposit/C1", "bank.deposit/C2"}) || s.Existing != "TestDepositContract" || s.Skeleton != "" ||
		s.Name != "bank_deposit_c1_c2_under_reset_at_hardening" {
		t.Errorf("the deeper run: %+v", s)
	}
}

// TestEveryScenarioHasAnOracleAndBudgets: no scenario the plan makes
// would be refused by validate -plan.
func TestEveryScenarioHasAnOracleAndBudgets(t *testing.T) {
	p := Build(input(t, depositRegistry, "go.sum"))
	if len(p.Scenarios) == 0 {
		t.Fatal("no scenario")
	}
	if err := Check(p); err != nil {
		t.Error(err)
	}
}

// TestTheSumLeavesOutTheSkeletonsAndTheTime: the sum is stable across
// the time a plan is made and covers everything else; an edit shows.
func TestTheSumLeavesOutTheSkeletonsAndTheTime(t *testing.T) {
	in := input(t, depositRegistry, "deposit/deposit.go")
	a := Build(in)
	in.Now = in.Now.Add(time.Hour)
	b := Build(in)
	if a.SHA256 != b.SHA256 || a.Edited() || b.Edited() {
		t.Fatalf("two plans of one change: %s and %s (edited %v, %v)", a.SHA256, b.SHA256, a.Edited(), b.Edited())
	}
	b.Scenarios[0].Skeleton = "anything"
	if b.Edited() {
		t.Errorf("a skeleton is part of the sum")
	}
	b.Scenarios[0].Oracle.Checker = "logs look fine"
	if !b.Edited() {
		t.Errorf("an edited oracle leaves the sum matching")
	}
}

// TestSkeletonsParseWhateverTheRegistrySays: a claim's text and a
// surface's oracle are data in a skeleton's comments: a newline in them
// cannot end the comment and add code.
func TestSkeletonsParseWhateverTheRegistrySays(t *testing.T) {
	hostile := strings.Replace(depositRegistry, "a deposit is applied once, however often it is retried",
		`a deposit is applied once\nfunc init() { panic(\"owned\") }\n// */ \"quoted\"`, 1)
	p := Build(input(t, hostile, "deposit/deposit.go"))
	n := 0
	for _, s := range p.Scenarios {
		if s.Skeleton == "" {
			continue
		}
		n++
		f, err := parser.ParseFile(token.NewFileSet(), s.Target, s.Skeleton, parser.ParseComments)
		if err != nil {
			t.Fatalf("skeleton of %s does not parse: %v\n%s", s.ID, err, s.Skeleton)
		}
		want, what := 2, "the imports and one test"
		if s.Lever == levers.NameCrashAndResume {
			want, what = 3, "the imports, one test and its worker role"
		}
		if len(f.Decls) != want {
			t.Errorf("skeleton of %s declares %d things, want %s:\n%s", s.ID, len(f.Decls), what, s.Skeleton)
		}
	}
	if n == 0 {
		t.Fatal("no skeleton")
	}
}
