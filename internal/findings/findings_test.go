package findings

import (
	"slices"
	"strings"
	"testing"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/gate"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gate/ladder"
	"github.com/contested/contested/internal/gate/verdict"
	"github.com/contested/contested/internal/registry"
	"github.com/contested/contested/internal/rundir"
)

// stockRegistry is a store surface of two claims, the second contested by
// reset alone, a liveness surface and a surface that never runs.
const stockRegistry = `schema = 1

[[surface]]
id = "shop.stock"
class = "store"
owner = "stock-team"
behavior = "a delivery is applied once and never lost"
oracle = "exactly-once, no-lost-ack"
legs = ["reset", "burst"]
tests = ["TestStockContract"]

[[surface.claims]]
id = "C1"
text = "a delivery is applied once"
category = "idempotency"

[[surface.claims]]
id = "C2"
text = "an acknowledged delivery is never lost"
category = "durability"
legs = ["reset"]

[[surface]]
id = "shop.drain"
class = "mq-consumer"
owner = "queue-team"
behavior = "the queue drains within a minute"
oracle = "drain progress"
legs = ["pool-exhaustion"]
tests = ["TestDrainContract"]

[[surface.claims]]
id = "C1"
text = "the queue drains within a minute of the database's return"
category = "liveness"

[[surface]]
id = "shop.report"
class = "store"
owner = "report-team"
behavior = "the report is exactly once per day"
oracle = "exactly-once"
legs = ["reset"]
tests = ["TestReportContract"]
`

func reg(t testing.TB) *registry.Registry {
	t.Helper()
	r, err := registry.Parse("contested-surfaces.toml", []byte(stockRegistry))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// leg is a leg that ran seeds seeds, each arming and firing faults
// faults, its oracle checking ops operations of ops.
func leg(lever string, v verdict.Verdict, seeds, faults, ops int) verdict.Leg {
	l := verdict.Leg{Lever: lever, Verdict: v, Tests: []string{"TestStockContract/" + lever}, Injector: "toxics read back", Victim: "ECONNRESET x2", Reason: "evidence"}
	for i := range seeds {
		o := faultrecord.OracleRun{Name: "exactly-once", OpsProduced: ops, OpsChecked: ops, Result: "held"}
		l.Runs = append(l.Runs, verdict.Run{Seed: int64(100 + i), Attempted: true, Armed: faults, Fired: faults, Oracles: []faultrecord.OracleRun{o}})
		l.Oracles = append(l.Oracles, o)
		l.Armed += faults
		l.Fired += faults
	}
	return l
}

func claim(t testing.TB, f *Findings, key string) Claim {
	t.Helper()
	for _, c := range f.Claims {
		if c.Key == key {
			return c
		}
	}
	t.Fatalf("no claim %s in %+v", key, f.Claims)
	return Claim{}
}

// TestAClaimsVerdictRollsUpItsLegs: a claim takes the worst of the legs
// that contest it, by the order of the verdicts: a failure first, a leg
// not run among others capping it at PARTIAL-surface, PASS-hardening only
// when every leg earned it.
func TestAClaimsVerdictRollsUpItsLegs(t *testing.T) {
	tests := []struct {
		name string
		legs []verdict.Verdict
		want verdict.Verdict
	}{
		{"every leg hardened", []verdict.Verdict{verdict.PassHardening, verdict.PassHardening}, verdict.PassHardening},
		{"one at smoke", []verdict.Verdict{verdict.PassHardening, verdict.PassSmoke}, verdict.PassSmoke},
		{"a failure outranks everything", []verdict.Verdict{verdict.NotRun, verdict.FailNondeterministic, verdict.InconclusiveEnv}, verdict.FailNondeterministic},
		{"a reproducible failure outranks a nondeterministic one", []verdict.Verdict{verdict.FailNondeterministic, verdict.FailReproducible}, verdict.FailReproducible},
		{"a missing capability before an unproven fault", []verdict.Verdict{verdict.InconclusiveFaultNotProven, verdict.InconclusiveEnv}, verdict.InconclusiveEnv},
		{"one leg not run caps the rest", []verdict.Verdict{verdict.PassHardening, verdict.NotRun}, verdict.PartialSurface},
		{"no leg run", []verdict.Verdict{verdict.NotRun, verdict.NotRun}, verdict.NotRun},
		{"a subset checked", []verdict.Verdict{verdict.PassHardening, verdict.PartialModel}, verdict.PartialModel},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var legs []verdict.Leg
			for i, v := range tt.legs {
				legs = append(legs, verdict.Leg{Lever: []string{"reset", "burst", "latency"}[i], Verdict: v, Reason: "r"})
			}
			if got, why := rollUp(legs); got != tt.want || why == "" {
				t.Errorf("rollUp = %s (%s), want %s", got, why, tt.want)
			}
		})
	}
}

// TestBudgetMetIsWhatEveryLegRan: the tier met is the highest whose seeds
// and faults every leg of the claim reached.
func TestBudgetMetIsWhatEveryLegRan(t *testing.T) {
	b := registry.Budget{Smoke: registry.Tier{Seeds: 1}, Hardening: registry.Tier{Seeds: 3, Faults: 6}, Release: registry.Tier{Seeds: 10}}
	tests := []struct {
		name string
		legs []verdict.Leg
		want string
	}{
		{"one seed is smoke", []verdict.Leg{leg("reset", verdict.PassSmoke, 1, 2, 10)}, TierSmoke},
		{"three seeds and enough faults is hardening", []verdict.Leg{leg("reset", verdict.PassHardening, 3, 2, 10)}, TierHardening},
		{"three seeds and too few faults is smoke", []verdict.Leg{leg("reset", verdict.PassSmoke, 3, 1, 10)}, TierSmoke},
		{"ten seeds is release", []verdict.Leg{leg("reset", verdict.PassHardening, 10, 2, 10)}, TierRelease},
		{"the weakest leg decides", []verdict.Leg{leg("reset", verdict.PassHardening, 10, 2, 10), leg("burst", verdict.PassSmoke, 1, 1, 10)}, TierSmoke},
		{"no seed is none", []verdict.Leg{{Lever: "reset", Verdict: verdict.NotRun}}, TierNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := budgetMet(b, tt.legs); got != tt.want {
				t.Errorf("budgetMet = %s, want %s", got, tt.want)
			}
		})
	}
	notProvided := b
	notProvided.Release = registry.Tier{NotProvided: "no rig", RevisitWhen: "a rig"}
	if got := budgetMet(notProvided, []verdict.Leg{leg("reset", verdict.PassHardening, 10, 2, 10)}); got != TierHardening {
		t.Errorf("a release not provided is met: %s", got)
	}
}

// TestFindingsOfARun: a run's verdicts become each claim's verdict, its
// budget and its evidence chain; a claim whose legs did not run, and a
// surface that did not run, are not reached; a non-serious claim has no
// chain.
func TestFindingsOfARun(t *testing.T) {
	r := reg(t)
	f := Build(Input{Registry: r, RunID: "run-1", Level: 1, Whole: true, Green: true, Surfaces: []gate.SurfaceVerdict{
		{ID: "shop.stock", Verdict: verdict.Green, Legs: []verdict.Leg{leg("reset", verdict.PassHardening, 3, 2, 40), leg("burst", verdict.PassSmoke, 1, 1, 30)}},
		{ID: "shop.drain", Verdict: verdict.Green, Legs: []verdict.Leg{leg("pool-exhaustion", verdict.PassSmoke, 1, 1, 5)}},
	}})
	c1, c2 := claim(t, f, "shop.stock/C1"), claim(t, f, "shop.stock/C2")
	if c1.Verdict != verdict.PassSmoke || c1.Budget != TierSmoke || len(c1.Legs) != 2 {
		t.Errorf("C1: %+v", c1)
	}
	if c2.Verdict != verdict.PassHardening || c2.Budget != TierHardening || len(c2.Legs) != 1 {
		t.Errorf("C2, contested by reset alone: %+v", c2)
	}
	if len(c2.Chain) != 1 || !strings.Contains(c2.Chain[0], "checker exactly-once consumed 120 of 120 operations, of the history of TestStockContract/reset over seeds 100, 101, 102, under fault reset (6 of 6 armed fired), with landing evidence injector: toxics read back; victim: ECONNRESET x2") {
		t.Errorf("C2's evidence chain: %q", c2.Chain)
	}
	if d := claim(t, f, "shop.drain/C1"); d.Chain != nil || d.Serious {
		t.Errorf("a liveness claim got a chain: %+v", d)
	}
	if len(f.NotReached) != 1 || f.NotReached[0].Claim != "shop.report/C1" || !strings.Contains(f.NotReached[0].Why, "did not run") {
		t.Errorf("not reached: %+v", f.NotReached)
	}
	if len(f.Failures) != 0 {
		t.Errorf("failures of a green run: %+v", f.Failures)
	}
	if !strings.HasPrefix(f.Summary, "No claim falsified") || !strings.Contains(f.Summary, "1 claim passed at hardening") || !strings.Contains(f.Summary, "1 claim not reached") {
		t.Errorf("summary %q", f.Summary)
	}
	if len(f.Disclosures) != 3 {
		t.Errorf("disclosures %+v: every surface has the default release disclosure", f.Disclosures)
	}
}

// TestABrokenChainIsSaid: a serious claim whose leg reported no checker
// has no complete chain, and says why.
func TestABrokenChainIsSaid(t *testing.T) {
	l := leg("reset", verdict.PartialSurface, 1, 1, 0)
	l.Oracles = nil
	f := Build(Input{Registry: reg(t), Level: 1, Surfaces: []gate.SurfaceVerdict{{ID: "shop.stock", Legs: []verdict.Leg{l}}}})
	if c := claim(t, f, "shop.stock/C2"); c.Broken != "reset reported no checker" {
		t.Errorf("C2: %+v", c)
	}
}

// TestBlame: each failure gets exactly one blame, from the ladder's owner
// or the leg's verdict; the checker takes the blame for an oracle that
// could not decide or that rejected a history it did not consume; a
// failure nothing decided is unknown, with what would decide it.
func TestBlame(t *testing.T) {
	fail := func(owner string) verdict.Leg {
		l := leg("reset", verdict.FailReproducible, 1, 1, 10)
		l.Oracles[0].Result, l.Runs[0].Failed = "violated", true
		if owner != "" {
			l.Decision = &verdict.Decision{Test: "TestStockContract/reset", Owner: owner, Verdict: "FAIL-reproducible", Action: "fix it"}
		}
		return l
	}
	unconsumed := fail("component (stock-team)")
	unconsumed.Oracles[0].OpsChecked = 0
	tests := []struct {
		name    string
		l       verdict.Leg
		blame   string
		pending bool
	}{
		{"the component is the SUT", fail("component (stock-team)"), BlameSUT, false},
		{"the test author is the harness", fail("test author"), BlameHarness, false},
		{"capacity is the environment", fail("capacity"), BlameEnvironment, false},
		{"the fault layer is the environment", fail("fault layer"), BlameEnvironment, false},
		{"another run's sweep is the environment", fail("infrastructure"), BlameEnvironment, false},
		{"an oracle that rejected what it did not consume is the checker", unconsumed, BlameChecker, false},
		{"an oracle that could not decide is the checker", leg("reset", verdict.InconclusiveOracleTooWeak, 1, 1, 10), BlameChecker, false},
		{"an unproven fault is the harness", leg("reset", verdict.InconclusiveFaultNotProven, 1, 1, 10), BlameHarness, false},
		{"a missing capability is the environment", leg("reset", verdict.InconclusiveEnv, 0, 0, 0), BlameEnvironment, false},
		{"a failure the ladder did not walk is unknown, pending", fail(""), BlameUnknown, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := Build(Input{Registry: reg(t), Level: 1, Whole: true, Surfaces: []gate.SurfaceVerdict{{ID: "shop.stock", Legs: []verdict.Leg{tt.l}}}})
			if len(f.Failures) != 1 {
				t.Fatalf("failures %+v", f.Failures)
			}
			fl := f.Failures[0]
			if fl.Blame != tt.blame || fl.Why == "" || (fl.Pending != "") != tt.pending {
				t.Errorf("blame %s (%s; pending %q), want %s", fl.Blame, fl.Why, fl.Pending, tt.blame)
			}
			if !slices.Equal(fl.Claims, []string{"shop.stock/C1", "shop.stock/C2"}) {
				t.Errorf("claims %v", fl.Claims)
			}
		})
	}
}

// TestFailuresOutsideTheSurfacesAreBlamedToo: a failing test no leg
// accounts for takes its blame from the ladder's owner, and a package
// that failed outside its tests is the harness's.
func TestFailuresOutsideTheSurfacesAreBlamedToo(t *testing.T) {
	f := Build(Input{Registry: reg(t), Level: 1, Whole: true, Failures: []ladder.Plain{
		{Package: "example.com/shop", Test: "TestRound", Owner: "test author", Arbitrated: true, Verdict: "GREEN"},
		{Package: "example.com/shop/broken", What: ladder.NotBuilt, Owner: ladder.PlainOwner},
		{Package: "example.com/shop", Test: "TestOther", Owner: ladder.PlainOwner},
	}})
	got := map[string]string{}
	for _, fl := range f.Failures {
		got[fl.What] = fl.Blame
	}
	want := map[string]string{"example.com/shop TestRound": BlameHarness, "example.com/shop/broken: does not build": BlameHarness, "example.com/shop TestOther": BlameUnknown}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: blame %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
}

// TestConfidence: a falsified claim is refuted and the statement says not
// to sign; a claim hardened with a whole chain and no open hypothesis is
// high; anything less is moderate or low.
func TestConfidence(t *testing.T) {
	failing := leg("reset", verdict.FailReproducible, 1, 1, 10)
	failing.Decision = &verdict.Decision{Owner: "component (stock-team)"}
	f := Build(Input{Registry: reg(t), Level: 1, Whole: true, Surfaces: []gate.SurfaceVerdict{
		{ID: "shop.stock", Legs: []verdict.Leg{failing, leg("burst", verdict.PassHardening, 3, 2, 10)}},
		{ID: "shop.drain", Legs: []verdict.Leg{leg("pool-exhaustion", verdict.PassSmoke, 1, 1, 5)}},
	}})
	got := map[string]string{}
	for _, a := range f.Confidence.Aspects {
		got[a.Claim] = a.Confidence
	}
	want := map[string]string{"shop.stock/C1": "refuted", "shop.stock/C2": "refuted", "shop.report/C1": "low"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
	if !strings.HasPrefix(f.Confidence.Statement, "Do not sign: shop.stock/C1, shop.stock/C2 were falsified") {
		t.Errorf("statement %q", f.Confidence.Statement)
	}
	if !strings.Contains(f.Summary, "falsified (shop.stock/C1, shop.stock/C2; blame: SUT)") {
		t.Errorf("summary %q", f.Summary)
	}
}

// TestMissingClaimsComeFromTheOraclesThatRan: an oracle a run reported
// whose promise no claim of its surface states is a missing claim.
func TestMissingClaimsComeFromTheOraclesThatRan(t *testing.T) {
	l := leg("reset", verdict.PassSmoke, 1, 1, 10)
	l.Oracles = append(l.Oracles, faultrecord.OracleRun{Name: "batch-order", OpsProduced: 3, OpsChecked: 3, Result: "held"})
	f := Build(Input{Registry: reg(t), Level: 1, Surfaces: []gate.SurfaceVerdict{{ID: "shop.stock", Legs: []verdict.Leg{l}}}})
	if len(f.Missing) != 1 || f.Missing[0].Surface != "shop.stock" || f.Missing[0].Category != registry.Ordering {
		t.Errorf("missing claims %+v", f.Missing)
	}
}

// TestFindingsMarkdownKeepsUntrustedTextAsText: a failure's text, a test
// name and a claim's text reach findings.md as text.
func TestFindingsMarkdownKeepsUntrustedTextAsText(t *testing.T) {
	r := reg(t)
	r.Surfaces[0].Claims[0].Text = "applied | once <script>alert(1)</script>\n## owned"
	l := leg("reset", verdict.FailReproducible, 1, 1, 10)
	l.Reason = "seed 1 failed: [click](javascript:alert(1)) \x1b[31m"
	f := Build(Input{Registry: r, Level: 1, Whole: true, Surfaces: []gate.SurfaceVerdict{{ID: "shop.stock", Legs: []verdict.Leg{l}}},
		Tests: []battery.Test{{Name: "TestStockContract/<b>reset</b>"}}})
	var b strings.Builder
	if err := WriteMarkdown(&b, f); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, bad := range []string{"<script>", "](javascript:", "\n## owned", "\x1b"} {
		if strings.Contains(md, bad) {
			t.Errorf("findings.md holds %q raw", bad)
		}
	}
	for _, want := range []string{"## Claims", "## Evidence chains", "## Failures and blame", "## Claims not reached", "## Missing claims", "## Coverage adequacy", "## Release-budget disclosures", "## Confidence"} {
		if !strings.Contains(md, want) {
			t.Errorf("findings.md lacks %q", want)
		}
	}
}

// TestTheFindingsAreARunsOwn: findings.md and findings.json are among the
// artifacts the next run moves aside, so a run never shows the findings of
// the run before.
func TestTheFindingsAreARunsOwn(t *testing.T) {
	for _, f := range []string{MarkdownName, JSONName} {
		if !slices.Contains(rundir.Artifacts, f) {
			t.Errorf("%s is not in rundir.Artifacts (%v)", f, rundir.Artifacts)
		}
	}
}

// TestFindingsMarkdownShowsReplaysAsCopyableCommands: a failure's replay
// reaches findings.md as one code span a reader copies byte for byte
// (below the table, so no pipe in it is escaped), never backslash-escaped
// text inside a cell.
func TestFindingsMarkdownShowsReplaysAsCopyableCommands(t *testing.T) {
	replay := "CONTESTED_SEED=7 go test ./my_pkg -run '^TestA$|^TestB$' -count=1 | tee `out`*<$(x)> \"q\""
	f := &Findings{RunID: "r1", Failures: []Failure{{What: "shop.stock/reset", Verdict: "FAIL-reproducible", Blame: BlameSUT,
		Action: "fix it: reproduce with " + replay + "; walk it again: go tool mage arbitrate TestA_b", Replay: replay}}}
	var b strings.Builder
	if err := WriteMarkdown(&b, f); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"- shop.stock/reset: ``" + replay + "``\n",
		"- shop.stock/reset: `go tool mage arbitrate TestA_b`\n",
		"fix it: reproduce with the command below; walk it again: the command below |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("findings.md lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, `my\_pkg`) || strings.Contains(md, `\|^TestB`) || strings.Contains(md, `TestA\_b`) {
		t.Errorf("findings.md backslash-escapes the replay:\n%s", md)
	}
}

// TestAChainSaysAnUnknownSeedAndMissingLandingEvidence: a serious claim's
// evidence chain never names "seed 0" or a dash for evidence no record
// holds: it says the seed is unknown and the landing evidence missing.
func TestAChainSaysAnUnknownSeedAndMissingLandingEvidence(t *testing.T) {
	l := verdict.Leg{Lever: "reset", Verdict: verdict.PassSmoke, Armed: 1, Fired: 1,
		Runs:    []verdict.Run{{Seed: 0, Attempted: true}},
		Oracles: []faultrecord.OracleRun{{Name: "exactly-once", OpsProduced: 3, OpsChecked: 3, Result: "held"}}}
	lines, broken := chain([]verdict.Leg{l})
	if broken != "" || len(lines) != 1 {
		t.Fatalf("chain = %q, broken %q", lines, broken)
	}
	for _, w := range []string{"over seeds unknown", "landing evidence: missing: "} {
		if !strings.Contains(lines[0], w) {
			t.Errorf("chain %q lacks %q", lines[0], w)
		}
	}
	for _, n := range []string{"seeds 0", "injector: -", "none recorded"} {
		if strings.Contains(lines[0], n) {
			t.Errorf("chain %q says %q", lines[0], n)
		}
	}
}

// TestALegThatFailedBeforeArmingFalsifiesNothing: a leg whose test failed
// before its fault was armed (no record names it), judged as validate
// judges it, falsifies none of its claims: the findings say it failed
// before its fault was armed, blame its setup, and never say "Do not sign"
// or "falsified" of its claims.
func TestALegThatFailedBeforeArmingFalsifiesNothing(t *testing.T) {
	r := reg(t)
	s, _ := r.Surface("shop.stock")
	run := contract.SeedRun{Seed: 7, Ran: []string{"TestStockContract/burst"},
		Failures:   map[string]string{"TestStockContract/reset": "stock_test.go:12: migrate: relation \"orders\" exists"},
		RerunTests: map[string]bool{"TestStockContract/reset": true}}
	legs, _ := contract.Judge(s, contract.Evidence{Level: 1, Runs: []contract.SeedRun{run}})
	f := Build(Input{Registry: r, Level: 1, Whole: true, Surfaces: []gate.SurfaceVerdict{{ID: "shop.stock", Legs: legs}}})
	for _, key := range []string{"shop.stock/C1", "shop.stock/C2"} {
		if c := claim(t, f, key); c.Verdict.Fail() {
			t.Errorf("claim %s is %s: a leg that armed nothing falsified it", key, c.Verdict)
		}
	}
	if strings.Contains(f.Confidence.Statement, "Do not sign") {
		t.Errorf("confidence %q refuses to sign on a setup failure", f.Confidence.Statement)
	}
	for _, a := range f.Adequacy {
		if strings.Contains(a.After, "falsified") {
			t.Errorf("adequacy of %s says %q", a.Claim, a.After)
		}
	}
	var said bool
	for _, fl := range f.Failures {
		if fl.Leg == "reset" {
			said = strings.Contains(fl.Why, "failed before its fault was armed: stock_test.go:12: migrate") && fl.Blame == BlameHarness
		}
	}
	if !said {
		t.Errorf("no failure says reset failed before its fault was armed, blamed on the harness: %+v", f.Failures)
	}
}

// TestAPlainTestsBlameNamesTheTestNotAFault: a failing plain test (a Go
// test that is no fault leg and arms no fault) is blamed in a sentence
// that names it and its failure, and speaks of a contract only where a
// surface lists the test: never of its faults, levers or firing.
func TestAPlainTestsBlameNamesTheTestNotAFault(t *testing.T) {
	tests := []struct {
		name        string
		p           ladder.Plain
		says, never []string
	}{
		{"a test no surface lists, the test author's", ladder.Plain{Package: "example.com/shop", Test: "TestRound", FirstLine: "round_test.go:9: 3 != 4", Owner: "test author", Arbitrated: true, Verdict: "consistent failure"},
			[]string{"the plain test TestRound (it arms no fault) failed: round_test.go:9: 3 != 4", "no surface lists the test"},
			[]string{"contract holds", "in isolation", "leg", "fired"}},
		{"a test of a surface whose contract holds", ladder.Plain{Package: "example.com/shop", Test: "TestStockReport", FirstLine: "report_test.go:5: want 2 rows", Owner: "test author", Arbitrated: true, Surface: "shop.stock", SurfaceVerdict: "GREEN"},
			[]string{"the plain test TestStockReport (it arms no fault) failed: report_test.go:5: want 2 rows", "shop.stock's contract holds in isolation"},
			[]string{"leg", "fired"}},
		{"a test of a surface whose contract fails", ladder.Plain{Package: "example.com/shop", Test: "TestStockReport", FirstLine: "report_test.go:5: want 2 rows", Owner: "component (stock-team)", Arbitrated: true, Surface: "shop.stock", SurfaceVerdict: "RED"},
			[]string{"the plain test TestStockReport (it arms no fault) failed: report_test.go:5: want 2 rows", "shop.stock's contract fails in isolation"},
			[]string{"fired"}},
		{"a test the ladder did not walk", ladder.Plain{Package: "example.com/shop", Test: "TestOther", FirstLine: "other_test.go:1: boom", Owner: ladder.PlainOwner},
			[]string{"the plain test TestOther (it arms no fault) failed: other_test.go:1: boom", "the ladder did not decide it"},
			[]string{"contract", "fired"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := Build(Input{Registry: reg(t), Level: 1, Whole: true, Failures: []ladder.Plain{tt.p}})
			if len(f.Failures) != 1 {
				t.Fatalf("failures %+v", f.Failures)
			}
			why := f.Failures[0].Why
			for _, w := range tt.says {
				if !strings.Contains(why, w) {
					t.Errorf("why %q lacks %q", why, w)
				}
			}
			for _, n := range tt.never {
				if strings.Contains(why, n) {
					t.Errorf("why %q says %q", why, n)
				}
			}
		})
	}
}
