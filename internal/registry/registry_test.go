package registry

import (
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/faultlayer/levers"
)

// problem is one expected error: its position (line:col) and a fragment
// of its message.
type problem struct {
	at  string
	msg string
}

// parseTable parses the minimal registry with doc appended (a table under
// test). When bad is set it asserts that one problem, at its position in
// doc, and returns nil; otherwise it returns the registry.
func parseTable(t *testing.T, doc string, bad *problem) *Registry {
	t.Helper()
	reg, err := Parse("m.toml", []byte(minimalDoc+doc))
	if bad != nil {
		assertProblems(t, "m.toml", err, []problem{{shift(bad.at, minimalDocLines), bad.msg}})
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// assertProblems checks that err is an ErrorList matching ErrInvalid that
// holds exactly the expected problems, in order, each prefixed with
// file:line:col.
func assertProblems(t *testing.T, file string, err error, want []problem) {
	t.Helper()
	if err == nil {
		t.Fatalf("want %d problems, got none", len(want))
	}
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("errors.Is(err, ErrInvalid) = false for %v", err)
	}
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("want an ErrorList, got %T: %v", err, err)
	}
	for i := 0; i < max(len(list), len(want)); i++ {
		switch {
		case i >= len(want):
			t.Errorf("unexpected problem: %v", list[i])
		case i >= len(list):
			t.Errorf("missing problem at %s:%s containing %q", file, want[i].at, want[i].msg)
		default:
			got := list[i].Error()
			prefix := file + ":" + want[i].at + ": "
			if !strings.HasPrefix(got, prefix) || !strings.Contains(got, want[i].msg) {
				t.Errorf("problem %d:\n got  %s\n want %s...%s...", i, got, prefix, want[i].msg)
			}
		}
	}
}

func TestLoadRejectsBadRegistries(t *testing.T) {
	tests := []struct {
		name string
		file string
		want []problem
	}{
		{"syntax error carries go-toml's position", "bad-syntax.toml", []problem{
			{"7:1", "invalid TOML: expected ',' or ']' after array value"},
		}},
		{"duplicate TOML key", "bad-duplicate-key.toml", []problem{
			{"6:1", "invalid TOML: key class is already defined"},
		}},
		{"unknown keys at every level", "bad-unknown-keys.toml", []problem{
			{"2:1", `unknown key "version" at the top level (known keys: battery, cluster, degraded, gate, guard, mutants, plan, reuse, schema, surface)`},
			{"6:1", `unknown key "selftests" in [gate] (known keys: recording_classes, self_tests); did you mean "self_tests"?`},
			{"9:1", `unknown key "databases" in [guard] (known keys: canonical_databases)`},
			{"15:1", `unknown key "behaviour" in [[surface]] (known keys: behavior, budget, claims, class, id, legs, levels, needs, oracle, owner, package, tests); did you mean "behavior"?`},
			{"18:1", `unknown key "legz" in [[surface]]`},
			{"23:22", `unknown key "not_provided" in [surface.budget.smoke] (known keys: duration, faults, seeds); only the release tier can be not provided`},
			{"24:26", `unknown key "seed" in [surface.budget.hardening]`},
			{"25:1", `unknown key "nightly" in [surface.budget] (known keys: hardening, release, smoke)`},
		}},
		{"schema missing", "bad-schema-missing.toml", []problem{
			{"1:1", "schema is missing; add `schema = 1`"},
		}},
		{"schema from the future", "bad-schema-version.toml", []problem{
			{"2:10", "schema 2 is not supported; this version of contested reads schema 1"},
		}},
		{"duplicate surface id names both lines", "bad-duplicate-id.toml", []problem{
			{"22:6", `duplicate surface id "ledger.store": already declared at testdata/bad-duplicate-id.toml:4`},
		}},
		{"unknown and repeated levers", "bad-unknown-lever.toml", []problem{
			// The list is the fault set's (internal/faultlayer/levers), which a new lever extends.
			{"11:3", `surface "ledger.store": unknown lever "confirm_timeout" (known levers: ` + strings.Join(LeverNames(), ", ") + `); did you mean "confirm-timeout"?`},
			{"12:3", `unknown lever "kill-9"`},
			{"13:3", `lists lever "reset" twice (first at 10:3)`},
		}},
		{"surfaces missing id, tests, legs and descriptions", "bad-incomplete-surfaces.toml", []problem{
			{"4:1", "surface #1 has no id"},
			{"4:1", "surface #1 has no tests"},
			{"12:1", `surface "ledger.pool" has no class, owner, behavior or oracle`},
			{"12:1", `surface "ledger.pool" has no legs`},
			{"12:1", `surface "ledger.pool" has no tests`},
			{"19:9", `surface "ledger.consumer" has an empty owner`},
			{"22:1", `surface "ledger.consumer" has no legs`},
			{"23:1", `surface "ledger.consumer" has no tests`},
		}},
		{"recording class no surface has", "bad-recording-class.toml", []problem{
			{"4:31", `recording class "mq-consumr" is not the class of any surface (classes: mq-consumer, store); fix the name or register a surface of that class; did you mean "mq-consumer"?`},
			{"4:45", `recording class "lease" is not the class of any surface`},
		}},
		{"budgets", "bad-budgets.toml", []problem{
			{"13:15", `surface "weak.hardening": hardening seeds 2 is not more than smoke seeds 2`},
			{"13:38", "hardening duration 30s is not more than smoke duration 1m0s"},
			{"24:28", `not_provided "TBD" is a placeholder`},
			{"24:50", "revisit_when is empty"},
			{"35:1", `surface "half.release": [surface.budget.release] both declares a budget and says it is not provided`},
			{"35:1", "[surface.budget.release] has no revisit_when"},
			{"46:19", "[surface.budget.smoke] seeds must be a whole number from 1 to 1000000, not 0"},
			{"46:33", `duration "ten seconds" is not a Go duration`},
			{"47:23", "[surface.budget.hardening] seeds must be an integer, not a float"},
			{"47:51", `duration must be positive, not "-5s"`},
			// hardening seeds is unreadable, so only faults is compared
			{"48:24", "release faults 1 is less than hardening faults 2; release must be at least as strong as hardening"},
			{"58:1", `surface "default.smoke": hardening seeds 3 (the default) is not more than smoke seeds 4`},
		}},
		{"tables and values of the wrong type", "bad-types.toml", []problem{
			{"1:10", "schema must be the integer 1, not a string"},
			{"2:1", "[gate] must be a table, not a string"},
			{"5:23", `[guard] canonical_databases must be an array of strings, not a string; write canonical_databases = ["postgres"]`},
			{"7:1", "surface must be an array of tables, written [[surface]] (double brackets), not a table"},
		}},
		{"surface fields of the wrong type", "bad-type-fields.toml", []problem{
			{"4:6", "surface #1: id must be a string, not an integer; quote it"},
			{"8:1", "surface #1: oracle must be a string, not an array"},
			{"9:8", `surface #1 legs must be an array of strings, not a string; write legs = ["reset"]`},
			{"10:31", "surface #1 tests must hold only strings; this element is an integer"},
			{"10:34", "surface #1 tests has an empty test"},
			{"11:1", "surface #1: [surface.budget] must be a table, not a string"},
		}},
		{"levels", "bad-levels.toml", []problem{
			{"11:24", `surface "ledger.consumer": levels.reset: 4 is not a level; levels are 1 (sunny), 2 (stormy) and 3 (radioactive)`},
			{"11:28", `surface "ledger.consumer": levels.burst is empty, so the leg would never run`},
			{"11:40", `surface "ledger.consumer": levels names "resets", which is not one of its legs (burst, reset, crash-and-resume); list the leg in legs, or remove it from levels; did you mean "reset"?`},
			{"11:77", `surface "ledger.consumer": levels.crash-and-resume lists level 1 twice`},
			{"11:80", `surface "ledger.consumer": levels.crash-and-resume must hold integers from 1 to 3; this element is a string`},
			{"21:10", `surface "ledger.store": levels must be a table of lever = [levels]`},
		}},
		{"a test shared by two surfaces, a bad test name, a reserved id", "bad-shared-test.toml", []problem{
			{"19:32", `test "TestStoreContract" is listed by surface "ledger.pool" and already by surface "ledger.store" at testdata/bad-shared-test.toml:10`},
			{"19:53", `"Test Pool" is not a test name`},
			{"22:6", `surface id "all" is reserved`},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := "testdata/" + tt.file
			reg, err := Load(path)
			if reg != nil {
				t.Errorf("Load returned a registry along with errors")
			}
			assertProblems(t, path, err, tt.want)
		})
	}
}

// minimal is a valid surface to append to inline documents.
const minimal = `
[[surface]]
id = "a.b"
class = "store"
owner = "team"
behavior = "keeps its promise"
oracle = "exactly-once"
legs = ["reset"]
tests = ["TestA"]
`

func TestParseInline(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []problem // nil: the document is valid
	}{
		{"empty file", "", []problem{
			{"1:1", "schema is missing"},
			{"1:1", "no surfaces are declared"},
		}},
		{"an empty array of surfaces", "schema = 1\nsurface = []\n", []problem{
			{"2:1", "no surfaces are declared; add at least one [[surface]]"},
		}},
		{"minimal registry", "schema = 1\n" + minimal, nil},
		{"CRLF line endings keep line numbers", strings.ReplaceAll("schema = 1\n"+minimal+"legz = 1\n", "\n", "\r\n"), []problem{
			{"11:1", `unknown key "legz"`},
		}},
		{"surfaces as an inline array of tables", `schema = 1
surface = [
  { id = "a.b", class = "store", owner = "t", behavior = "b", oracle = "o", legs = ["reset"], tests = ["TestA"] },
  { id = "a.b", class = "store", owner = "t", behavior = "b", oracle = "o", legs = ["reset"], tests = ["TestB"] },
]
`, []problem{
			{"4:10", `duplicate surface id "a.b": already declared at inline.toml:3`},
		}},
		{"unknown key in an inline table", "schema = 1\n" + minimal + `budget = { smoke = { seeds = 1, faults = 1, fualts = 2 } }` + "\n", []problem{
			{"11:45", `unknown key "fualts" in [surface.budget.smoke]`},
		}},
		{"schema after a table belongs to the table", "[gate]\nschema = 1\n" + minimal, []problem{
			{"1:1", "schema is missing"},
			{"2:1", `unknown key "schema" in [gate] (known keys: recording_classes, self_tests); schema belongs at the top of the file`},
		}},
		{"indented table header", "schema = 1\n  [[surface]]\n  id = 3\n", []problem{
			{"2:3", "surface #1 has no class, owner, behavior or oracle"},
			{"2:3", "surface #1 has no legs"},
			{"2:3", "surface #1 has no tests"},
			{"3:8", "surface #1: id must be a string"},
		}},
		{"release that declares nothing", "schema = 1\n" + minimal + "budget.release = {}\n", []problem{
			{"11:8", "[surface.budget.release] declares nothing"},
		}},
		{"release weaker than hardening", "schema = 1\n" + minimal + `budget.hardening = { seeds = 3, duration = "10m" }` + "\n" + `budget.release = { seeds = 3, duration = "5m" }` + "\n", []problem{
			{"12:31", "release duration 5m0s is less than hardening duration 10m0s"},
		}},
		{"an unreadable dimension is not compared against a default", "schema = 1\n" + minimal + "budget.smoke = { seeds = 5 }\nbudget.hardening = { seeds = 2.5 }\n", []problem{
			{"12:30", "[surface.budget.hardening] seeds must be an integer, not a float"},
		}},
		{"release fewer seeds than the default hardening", "schema = 1\n" + minimal + "budget.release = { seeds = 2 }\n", []problem{
			{"11:20", "release seeds 2 is less than hardening seeds 3 (the default)"},
		}},
		{"hex and underscore integers", "schema = 0x1\n" + minimal + "budget.smoke.seeds = 1\nbudget.hardening.seeds = 1_000\n", nil},
		{"id with a space", "schema = 1\n" + strings.Replace(minimal, `"a.b"`, `"a b"`, 1), []problem{
			{"4:6", `surface id "a b" may contain only letters`},
		}},
		{"blank package", "schema = 1\n" + minimal + "package = \"\"\n", []problem{
			{"11:11", "package \"\" must be a Go package path"},
		}},
		{"needs a known capability", "schema = 1\n" + minimal + "needs = [\"chromium\", \"docker\"]\n", nil},
		{"needs an unknown capability", "schema = 1\n" + minimal + "needs = [\"chromeum\"]\n", []problem{
			{"11:10", `surface "a.b": unknown capability "chromeum" in needs (known: docker, postgres, chromium, cores, disk); did you mean "chromium"?`},
		}},
		{"needs as a string", "schema = 1\n" + minimal + "needs = \"chromium\"\n", []problem{
			{"11:9", `needs must be an array of strings, not a string; write needs = ["chromium"]`},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg, err := Parse("inline.toml", []byte(tt.doc))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if reg == nil || len(reg.Surfaces) == 0 {
					t.Fatalf("Parse returned no surfaces")
				}
				return
			}
			assertProblems(t, "inline.toml", err, tt.want)
		})
	}
}

// TestClusterTable: the [cluster] table names one package and one
// top-level test, both required, and nothing else.
func TestClusterTable(t *testing.T) {
	base := "schema = 1\n" + minimal
	tests := []struct {
		name string
		doc  string
		want *Cluster // with want == nil: these problems
		bad  []problem
	}{
		{"none", base, nil, nil},
		{"a package and a test", base + "[cluster]\npackage = \"./svc\"\ntest = \"TestSvcCluster\"\n", &Cluster{Package: "./svc", Test: "TestSvcCluster", Line: 11}, nil},
		{"the module's root package", base + "[cluster]\npackage = \".\"\ntest = \"Test\"\n", &Cluster{Package: ".", Test: "Test", Line: 11}, nil},
		{"an empty table", base + "[cluster]\n", nil, []problem{
			{"11:1", "[cluster] has no package"},
			{"11:1", "[cluster] has no test"},
		}},
		{"a misspelt key", base + "[cluster]\npackage = \".\"\ntests = [\"TestA\"]\n", nil, []problem{
			{"11:1", "[cluster] has no test"},
			{"13:1", `unknown key "tests" in [cluster] (known keys: package, test); did you mean "test"?`},
		}},
		{"bad values", base + "[cluster]\npackage = \"./...\"\ntest = \"TestRig/kill-one\"\n", nil, []problem{
			{"12:11", `[cluster] package "./..." must be one Go package`},
			{"13:8", `[cluster] test "TestRig/kill-one" is not a Go test name`},
		}},
		{"not a test function", base + "[cluster]\npackage = \".\"\ntest = \"Testing\"\n", nil, []problem{
			{"13:8", `[cluster] test "Testing" is not a Go test name`},
		}},
		{"values of the wrong type", base + "[cluster]\npackage = 1\ntest = [\"TestA\"]\n", nil, []problem{
			{"12:11", "[cluster]: package must be a string, not an integer"},
			{"13:1", "[cluster]: test must be a string, not an array"},
		}},
		{"an array of tables", base + "[[cluster]]\npackage = \".\"\n", nil, []problem{
			{"11:1", "[cluster] must be a table, not an array of tables"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg, err := Parse("inline.toml", []byte(tt.doc))
			if tt.bad != nil {
				assertProblems(t, "inline.toml", err, tt.bad)
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			got := reg.Cluster
			if (got == nil) != (tt.want == nil) || got != nil && (got.Package != tt.want.Package || got.Test != tt.want.Test || got.Line != tt.want.Line) {
				t.Errorf("Cluster = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load("testdata/does-not-exist.toml")
	if err == nil {
		t.Fatal("want an error")
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("want the os error wrapped, got %v", err)
	}
	if errors.Is(err, ErrInvalid) {
		t.Errorf("a missing file is not an invalid registry: %v", err)
	}
	if !strings.HasPrefix(err.Error(), "testdata/does-not-exist.toml: ") || !strings.Contains(err.Error(), envvar.Surfaces) {
		t.Errorf("want the path first and a hint about %s, got %q", envvar.Surfaces, err)
	}
}

func TestLoadGood(t *testing.T) {
	reg, err := Load("testdata/good.toml")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if reg.Path != "testdata/good.toml" || reg.Schema != 1 {
		t.Errorf("Path, Schema = %q, %d", reg.Path, reg.Schema)
	}
	if want := []string{"store", "mq-consumer"}; !slices.Equal(reg.Gate.RecordingClasses, want) {
		t.Errorf("RecordingClasses = %v, want %v", reg.Gate.RecordingClasses, want)
	}
	if want := []string{"TestPanicMidFaultLeavesResidueThatTheReclaimPathReaps", "TestDSNGuardRefusesCanonicalDB"}; !slices.Equal(reg.Gate.SelfTests, want) {
		t.Errorf("SelfTests = %v, want %v", reg.Gate.SelfTests, want)
	}
	if want := []string{"postgres", "ledger"}; !slices.Equal(reg.Guard.CanonicalDatabases, want) {
		t.Errorf("CanonicalDatabases = %v, want %v", reg.Guard.CanonicalDatabases, want)
	}
	if got, want := reg.IDs(), []string{"ledger.store", "ledger.consumer", "ledger.pool"}; !slices.Equal(got, want) {
		t.Fatalf("IDs = %v, want %v", got, want)
	}
	if got, want := reg.Classes(), []string{"mq-consumer", "pool", "store"}; !slices.Equal(got, want) {
		t.Errorf("Classes = %v, want %v", got, want)
	}

	store, _ := reg.Surface("ledger.store")
	if store.Class != "store" || store.Owner != "ledger-team" || store.Oracle != "exactly-once" ||
		store.Behavior != "an acknowledged transfer is applied exactly once" || store.Package != "./examples/ledger/store" {
		t.Errorf("ledger.store = %+v", store)
	}
	if !slices.Equal(store.Legs, []string{"reset", "confirm-timeout"}) || !slices.Equal(store.Tests, []string{"TestStoreContract"}) {
		t.Errorf("ledger.store legs, tests = %v, %v", store.Legs, store.Tests)
	}
	wantStoreBudget := Budget{
		Smoke:     Tier{Seeds: 1},
		Hardening: Tier{Seeds: 3},
		Release:   Tier{NotProvided: "no soak rig yet", RevisitWhen: "the nightly stage exists"},
	}
	if store.Budget != wantStoreBudget || store.Budget.Release.Provided() {
		t.Errorf("ledger.store budget = %+v, want %+v", store.Budget, wantStoreBudget)
	}

	consumer, _ := reg.Surface("ledger.consumer")
	wantConsumerBudget := Budget{
		Smoke:     Tier{Seeds: 2, Faults: 1, Duration: 10 * time.Second},
		Hardening: Tier{Seeds: 5, Faults: 4, Duration: time.Minute},
		Release:   Tier{Seeds: 30, Duration: 24 * time.Hour},
	}
	if consumer.Budget != wantConsumerBudget || !consumer.Budget.Release.Provided() {
		t.Errorf("ledger.consumer budget = %+v, want %+v", consumer.Budget, wantConsumerBudget)
	}

	pool, _ := reg.Surface("ledger.pool")
	if pool.Budget != DefaultBudget() {
		t.Errorf("ledger.pool budget = %+v, want the default %+v", pool.Budget, DefaultBudget())
	}
	if pool.Package != "" {
		t.Errorf("ledger.pool package = %q, want empty", pool.Package)
	}

	for id, line := range map[string]int{"ledger.store": 11, "ledger.consumer": 25, "ledger.pool": 37} {
		if s, _ := reg.Surface(id); s.Line != line {
			t.Errorf("%s declared on line %d, want %d", id, s.Line, line)
		}
	}
	if _, ok := reg.Surface("ledger.nope"); ok {
		t.Error("Surface found an unregistered id")
	}
	if c := reg.Cluster; c == nil || c.Package != "./examples/ledger" || c.Test != "TestClusterRig" || c.Line != 46 {
		t.Errorf("Cluster = %+v, want ./examples/ledger's TestClusterRig, declared on line 46", c)
	}
}

func TestDefaultBudget(t *testing.T) {
	b := DefaultBudget()
	if b.Smoke.Seeds != 1 || b.Hardening.Seeds != 3 {
		t.Errorf("default seeds = %d, %d; want 1, 3", b.Smoke.Seeds, b.Hardening.Seeds)
	}
	if b.Release.Provided() || b.Release.NotProvided != "no release budget declared" ||
		b.Release.RevisitWhen != "a release budget is declared in the registry" {
		t.Errorf("default release = %+v", b.Release)
	}
}

func TestSurfaceForTest(t *testing.T) {
	reg, err := Load("testdata/good.toml")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	tests := []struct {
		testID string
		want   string // "" when no surface owns the test
	}{
		{"TestStoreContract", "ledger.store"},
		{"TestStoreContract/reset", "ledger.store"},
		{"TestStoreContract/reset/seed=3", "ledger.store"},
		{"TestConsumerContract/burst", "ledger.consumer"},
		{"TestContracts", "ledger.pool"},
		{"TestContracts/pool/seed=1", "ledger.pool"},
		{"TestContracts/consumer", "ledger.consumer"},                 // the longer entry wins
		{"TestContracts/consumer/seed=9", "ledger.consumer"},          // by whole path elements
		{"TestContracts/consumerish", "ledger.pool"},                  // not a string prefix
		{"TestStoreContractExtra", ""},                                // not a prefix by element
		{"TestUnregistered/reset", ""},                                // nobody claims it
		{"", ""},                                                      // empty id
		{"TestPanicMidFaultLeavesResidueThatTheReclaimPathReaps", ""}, // self-tests are not surfaces
	}
	for _, tt := range tests {
		t.Run(tt.testID, func(t *testing.T) {
			s, ok := reg.SurfaceForTest(tt.testID)
			if ok != (tt.want != "") || s.ID != tt.want {
				t.Errorf("SurfaceForTest(%q) = %q, %v; want %q", tt.testID, s.ID, ok, tt.want)
			}
		})
	}
}

func TestCheckTests(t *testing.T) {
	reg, err := Load("testdata/good.toml")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	full := []string{
		"TestStoreContract", "TestConsumerContract", "TestContracts", "TestClusterRig",
		"TestPanicMidFaultLeavesResidueThatTheReclaimPathReaps", "TestDSNGuardRefusesCanonicalDB",
	}

	t.Run("complete inventory", func(t *testing.T) {
		if err := reg.CheckTests(full); err != nil {
			t.Errorf("CheckTests: %v", err)
		}
	})
	t.Run("subtest ids in the inventory count as their top-level test", func(t *testing.T) {
		inv := append(slices.Clone(full[1:]), "TestStoreContract/reset")
		if err := reg.CheckTests(inv); err != nil {
			t.Errorf("CheckTests: %v", err)
		}
	})
	t.Run("missing tests name the entry and the surface's line", func(t *testing.T) {
		inv := []string{"TestStoreContracts", "TestContracts", "TestDSNGuardRefusesCanonicalDB", "TestClusterRigs"}
		err := reg.CheckTests(inv)
		if !errors.Is(err, ErrMissingTest) {
			t.Errorf("errors.Is(err, ErrMissingTest) = false: %v", err)
		}
		assertProblems(t, "testdata/good.toml", err, []problem{
			{"6:15", `gate self-test "TestPanicMidFaultLeavesResidueThatTheReclaimPathReaps" is not in the test inventory`},
			{"18:10", `surface "ledger.store" (line 11) lists test "TestStoreContract", which is not in the test inventory; rename the entry to an existing test, or restore the test; did you mean "TestStoreContracts"?`},
			{"32:10", `surface "ledger.consumer" (line 25) lists test "TestConsumerContract"`},
			{"48:8", `[cluster] test "TestClusterRig" is not in the test inventory; ` + "`go tool mage cluster-tests`" + ` runs it, so restore it or name the test that runs the cluster rig; did you mean "TestClusterRigs"?`},
		})
		if got, want := reg.MissingSelfTests(inv), []string{"TestPanicMidFaultLeavesResidueThatTheReclaimPathReaps"}; !slices.Equal(got, want) {
			t.Errorf("MissingSelfTests = %v, want %v", got, want)
		}
	})
	t.Run("an empty inventory is one problem, not one per test", func(t *testing.T) {
		err := reg.CheckTests(nil)
		var list ErrorList
		if !errors.As(err, &list) || len(list) != 1 || !errors.Is(err, ErrMissingTest) {
			t.Fatalf("CheckTests(nil) = %v", err)
		}
		if !strings.Contains(err.Error(), "test inventory is empty") {
			t.Errorf("got %q", err)
		}
	})
	t.Run("a registry built in code falls back to the surface line", func(t *testing.T) {
		r := &Registry{Path: "x.toml", Surfaces: []Surface{{ID: "s", Tests: []string{"TestGone"}, Line: 7}}}
		assertProblems(t, "x.toml", r.CheckTests([]string{"TestOther"}), []problem{
			{"7", `surface "s" (line 7) lists test "TestGone"`},
		})
	})
}

func TestCheckRecord(t *testing.T) {
	reg, err := Load("testdata/good.toml")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	tests := []struct {
		name                string
		surface, class, leg string
		wantKind            error // nil: the record agrees
		wantMsg             string
	}{
		{"agrees", "ledger.store", "store", "reset", nil, ""},
		{"surface only", "ledger.store", "", "", nil, ""},
		{"unknown surface", "ledger.stor", "store", "reset", ErrUnknownSurface,
			`testdata/good.toml: a record names surface "ledger.stor", which is not registered (registered: ledger.store, ledger.consumer, ledger.pool); register it or fix the surface the leg names; did you mean "ledger.store"?`},
		{"class disagrees", "ledger.store", "pool", "", ErrRecordMismatch,
			`testdata/good.toml:11: a record for surface "ledger.store" says class "pool", but the registry says "store"`},
		{"undeclared leg", "ledger.store", "store", "burst", ErrRecordMismatch,
			`testdata/good.toml:11: a record for surface "ledger.store" has leg "burst", which the surface does not declare (legs: reset, confirm-timeout)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := reg.CheckRecord(tt.surface, tt.class, tt.leg)
			if tt.wantKind == nil {
				if err != nil {
					t.Errorf("CheckRecord: %v", err)
				}
				return
			}
			if !errors.Is(err, tt.wantKind) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.wantKind)
			}
			if errors.Is(err, ErrInvalid) {
				t.Errorf("a record problem must not read as an invalid registry: %v", err)
			}
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantMsg) {
				t.Errorf("got  %v\nwant %s", err, tt.wantMsg)
			}
		})
	}
	t.Run("class and leg both wrong", func(t *testing.T) {
		var list ErrorList
		if err := reg.CheckRecord("ledger.pool", "store", "burst"); !errors.As(err, &list) || len(list) != 2 {
			t.Errorf("want two problems, got %v", err)
		}
	})
}

func TestLevers(t *testing.T) {
	contract := []string{"disconnect", "reset", "confirm-timeout", "burst", "pool-exhaustion", "crash-and-resume"}
	names := LeverNames()
	if !slices.Equal(names[:len(contract)], contract) {
		t.Errorf("the six contract levers come first: got %v", names)
	}
	seen := map[string]bool{}
	for _, l := range Levers() {
		if seen[l.Name] || l.Meaning == "" {
			t.Errorf("lever %+v is repeated or has no meaning", l)
		}
		seen[l.Name] = true
		got, ok := LookupLever(l.Name)
		if !ok || got != l {
			t.Errorf("LookupLever(%q) = %+v, %v", l.Name, got, ok)
		}
		if l.Cluster != (l.Name == levers.NameMassRestart || l.Name == levers.NamePartition) {
			t.Errorf("lever %s: Cluster = %v", l.Name, l.Cluster)
		}
	}
	Levers()[0].Name = "changed"
	if LeverNames()[0] != levers.NameDisconnect {
		t.Error("Levers must return a copy")
	}
	if _, ok := LookupLever("kill-9"); ok {
		t.Error("LookupLever accepted an unknown lever")
	}
}

func TestOraclesAreOpen(t *testing.T) {
	for _, o := range Oracles() {
		if !IsKnownOracle(o.Name) || o.Meaning == "" {
			t.Errorf("oracle %+v", o)
		}
	}
	// An oracle the toolkit does not know is still accepted: teams bring
	// their own checks.
	doc := "schema = 1\n" + strings.Replace(minimal, `"exactly-once"`, `"ledger-reconciles-nightly"`, 1)
	reg, err := Parse("inline.toml", []byte(doc))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if got := reg.Surfaces[0].Oracle; got != "ledger-reconciles-nightly" || IsKnownOracle(got) {
		t.Errorf("oracle = %q", got)
	}
}

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		err  Error
		want string
	}{
		{Error{File: "f.toml", Line: 12, Column: 1, Msg: "m"}, "f.toml:12:1: m"},
		{Error{File: "f.toml", Line: 12, Msg: "m"}, "f.toml:12: m"},
		{Error{File: "f.toml", Msg: "m"}, "f.toml: m"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
	list := ErrorList{{File: "f", Line: 1, Msg: "a", Kind: ErrInvalid}, {File: "f", Line: 2, Msg: "b", Kind: ErrMissingTest}}
	if got := list.Error(); got != "f:1: a\nf:2: b" {
		t.Errorf("ErrorList.Error() = %q", got)
	}
	if !errors.Is(list, ErrMissingTest) || !errors.Is(list, ErrInvalid) || errors.Is(list, ErrUnknownSurface) {
		t.Error("ErrorList must expose each problem's sentinel")
	}
	if ErrorList(nil).err() != nil {
		t.Error("an empty list must be a nil error")
	}
}

func TestLevelsRestrictLegs(t *testing.T) {
	reg, err := Parse("levels.toml", []byte(`schema = 1
[[surface]]
id = "ledger.consumer"
class = "mq-consumer"
owner = "ledger-team"
behavior = "applied exactly once"
oracle = "exactly-once"
legs = ["burst", "reset"]
tests = ["TestConsumerContract"]
levels = { reset = [3, 2] }
`))
	if err != nil {
		t.Fatal(err)
	}
	s := reg.Surfaces[0]
	tests := []struct {
		leg   string
		level int
		want  bool
	}{
		{"burst", 1, true}, {"burst", 3, true},
		{"reset", 1, false}, {"reset", 2, true}, {"reset", 3, true},
	}
	for _, tt := range tests {
		if got := s.RunsAt(tt.leg, tt.level); got != tt.want {
			t.Errorf("RunsAt(%q, %d) = %v, want %v", tt.leg, tt.level, got, tt.want)
		}
	}
	if got := s.LegLevels("reset"); !slices.Equal(got, []int{2, 3}) {
		t.Errorf("LegLevels(reset) = %v, want sorted [2 3]", got)
	}
	if got := s.LegsAt(1); !slices.Equal(got, []string{"burst"}) {
		t.Errorf("LegsAt(1) = %v, want [burst]", got)
	}
}
