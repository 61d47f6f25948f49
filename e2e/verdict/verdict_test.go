package verdict

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contested/contested/e2e/internal/e2etest"
	"github.com/contested/contested/internal/faultdir"
	"github.com/contested/contested/internal/gate/ladder"
)

const poisonStale = `package stock

import (
	"os"
	"testing"
	"time"

	"github.com/contested/contested/faultrecord"
)

// A valid record whose mtime predates the gate stamp: evidence of an
// earlier run passed off as this one's.
func TestPoisonStale(t *testing.T) {
	// The run's coordinates, as validate hands them to its battery.
	rec, err := faultrecord.NewRecorder("example.com/adopter", faultrecord.WithResultsDir(os.Getenv("CONTESTED_RESULTS_DIR")), faultrecord.WithRunID(os.Getenv("CONTESTED_RUN_ID")))
	if err != nil {
		t.Fatal(err)
	}
	p, err := rec.Write(faultrecord.Record{Test: "TestStockContract/burst", Surface: "adopter.stock", Class: "store", Leg: "burst",
		Armed: true, ArmedAt: time.Now(), Fired: true, FiredAt: time.Now(), Evidence: faultrecord.Evidence{Injector: "old", Victim: "old"}})
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
}
`

const poisonTruncated = `package stock

import (
	"os"
	"path/filepath"
	"testing"
)

// Half a record, as a writer killed mid-write without the atomic rename
// would leave it.
func TestPoisonTruncated(t *testing.T) {
	p := filepath.Join(os.Getenv("CONTESTED_RESULTS_DIR"), "fault", "truncated.json")
	if err := os.WriteFile(p, []byte(` + "`" + `{"schema":"contested/faultrecord@1","run_id":"x","test":"TestStockContract/reset","surf` + "`" + `), 0o644); err != nil {
		t.Fatal(err)
	}
}
`

const poisonUnfired = `package stock

import (
	"context"
	"testing"

	"github.com/contested/contested/contested"
)

// A reset armed on a proxy that carries no traffic: it never fires.
func TestPoisonUnfired(t *testing.T) {
	ctx := context.Background()
	leg := contested.Start(t, "adopter.stock", contested.Reset)
	leg.Arm(ctx)
	leg.Heal(ctx)
}
`

const zeroFaults = `package stock

import "testing"

func TestMain(m *testing.M) { m.Run() }

// The contract with its legs gone: it checks nothing under fault.
func TestStockContract(t *testing.T) {}
func TestStockReport(t *testing.T)   {}
`

func TestPoisonedVariantsAreRefusedAtTheirPhase(t *testing.T) {
	t.Parallel()
	registry, err := os.ReadFile(filepath.Join(e2etest.RepoRoot(t), "testdata", "adopter", "contested-surfaces.toml"))
	if err != nil {
		t.Fatal(err)
	}
	classAtZero := strings.Replace(string(registry), `recording_classes = ["store"]`, `recording_classes = ["store", "mq-consumer"]`, 1) + `
[[surface]]
id = "adopter.queue"
class = "mq-consumer"
owner = "stock-team"
behavior = "a queued delivery reaches the stock"
oracle = "no-lost-ack"
legs = ["burst"]
tests = ["TestOutsideRegistry"]
`
	selfTestGone := strings.Replace(string(registry), `self_tests = ["TestStockContract", `, `self_tests = ["TestStockContract", "TestRenamedAway", `, 1)
	tests := []struct {
		name  string
		edits map[string]string
		phase int
	}{
		{"stale records", map[string]string{"poison_test.go": poisonStale}, 1},
		{"a truncated record", map[string]string{"poison_test.go": poisonTruncated}, 2},
		{"an armed-but-unfired leg", map[string]string{"poison_test.go": poisonUnfired}, 3},
		{"a battery with zero faults", map[string]string{"stock_test.go": zeroFaults}, 4},
		{"a recording class at zero", map[string]string{"contested-surfaces.toml": classAtZero}, 5},
		{"a deleted self-test", map[string]string{"contested-surfaces.toml": selfTestGone}, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := e2etest.Adopter(t, tt.edits)
			out, code := e2etest.Mage(t, dir, nil, "validate")
			if code != 1 {
				t.Fatalf("exit %d, want 1 (refused):\n%s", code, out)
			}
			var v e2etest.ValidateJSON
			e2etest.ReadJSON(t, filepath.Join(dir, "test-results", "validate.json"), &v)
			for _, f := range v.BatteryFailures {
				if f.What == ladder.NotBuilt || f.What == ladder.NotLoaded {
					t.Fatalf("the poisoned variant itself %s, so it proves nothing: %s", f.What, f.FirstLine)
				}
			}
			r := e2etest.ReadReport(t, dir)
			if r.Certified || r.Phases[tt.phase-1].OK {
				t.Fatalf("phase %d passed: %+v", tt.phase, r.Phases)
			}
			name := r.Phases[tt.phase-1].Name
			if !strings.Contains(out, "phase "+itoa(tt.phase)+" ("+name+")") {
				t.Errorf("the output does not name phase %d (%s):\n%s", tt.phase, name, out)
			}
			if _, err := os.Stat(filepath.Join(dir, "test-results", "fault", faultdir.StampName)); err != nil {
				t.Errorf("a refused run consumed its stamp: %v", err)
			}
		})
	}
}

func TestBadInputExitsTwoWithFileAndLine(t *testing.T) {
	t.Parallel()
	badRegistry := "schema = 1\n[gate]\nrecording_classes = [\"store\"]\n\n[[surface]]\nid = \"adopter.stock\"\nclass = \"store\"\nownr = \"stock-team\"\n"
	b, err := os.ReadFile(filepath.Join(e2etest.RepoRoot(t), "testdata", "adopter", "contested-surfaces.toml"))
	if err != nil {
		t.Fatal(err)
	}
	registry := string(b)
	noCluster, _, found := strings.Cut(registry, "[cluster]")
	if !found {
		t.Fatal("the adopter's registry has no [cluster] table")
	}
	withCluster := func(old, new string) map[string]string {
		return map[string]string{"contested-surfaces.toml": strings.Replace(registry, old, new, 1)}
	}
	// The lines the messages name: the [cluster] table's and its test key's.
	lineOf := func(s string) int { return strings.Count(registry[:strings.Index(registry, s)], "\n") + 1 }
	clusterLine, testLine := lineOf("[cluster]"), lineOf(`test = "TestStockCluster"`)
	tests := []struct {
		name  string
		edits map[string]string
		env   []string
		args  []string
		says  string
	}{
		{"a registry with an unknown key", map[string]string{"contested-surfaces.toml": badRegistry}, nil, []string{"validate"}, "contested-surfaces.toml:8:1"},
		{"a registry that does not parse", map[string]string{"contested-surfaces.toml": "schema = 1\n[gate\n"}, nil, []string{"program-gate"}, "contested-surfaces.toml:2"},
		{"contested without a surface", nil, nil, []string{"contested"}, "not enough arguments"},
		{"contested with an unknown surface", nil, nil, []string{"contested", "adopter.nope"}, `surface "adopter.nope" is not in`},
		{"a bad level", nil, []string{"CONTESTED_LEVEL=9"}, []string{"contested", "all"}, "CONTESTED_LEVEL"},
		{"a bad seed count", nil, []string{"CONTESTED_SEEDS=lots"}, []string{"contested", "all"}, "CONTESTED_SEEDS"},
		{"arbitrate an unknown test", nil, nil, []string{"arbitrate", "TestNoSuchThing"}, "is not a test of"},
		{"an unknown layer", nil, []string{"CONTESTED_LAYER=bogus"}, []string{"fault-preflight"}, `CONTESTED_LAYER="bogus"`},
		{"an unknown target", nil, nil, []string{"no-such-target"}, "Unknown target"},
		{"cluster-tests without a [cluster] table", map[string]string{"contested-surfaces.toml": noCluster}, nil, []string{"cluster-tests"}, "declares no cluster service"},
		{"cluster-tests naming a test that is not there", withCluster(`test = "TestStockCluster"`, `test = "TestStockClusters"`), nil, []string{"cluster-tests"},
			fmt.Sprintf("contested-surfaces.toml:%d: [cluster] test TestStockClusters is not a test of .", clusterLine)},
		{"a [cluster] test that is no test name", withCluster(`test = "TestStockCluster"`, `test = "TestStock/kill-one"`), nil, []string{"cluster-tests"},
			fmt.Sprintf(`contested-surfaces.toml:%d:8: [cluster] test "TestStock/kill-one" is not a Go test name`, testLine)},
		{"cluster-tests with too few replicas", nil, nil, []string{"cluster-tests", "-replicas=2"}, "between 3 and 9"},
		{"mutants of a directory that does not exist", nil, nil, []string{"mutants", "./nope"}, "./nope: stat"},
		{"a [mutants] threshold that is no percentage", map[string]string{"contested-surfaces.toml": "schema = 1\n[[surface]]\nid = \"adopter.stock\"\nclass = \"store\"\nowner = \"o\"\nbehavior = \"b\"\noracle = \"exactly-once\"\nlegs = [\"burst\"]\ntests = [\"TestStockContract\"]\n[mutants]\nthreshold = 101\n"}, nil, []string{"mutants"}, "contested-surfaces.toml:11:13: [mutants] threshold 101 is not a percentage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := e2etest.Adopter(t, tt.edits)
			run := e2etest.Mage
			if tt.name == "an unknown target" {
				run = e2etest.GoToolMage // mage's own refusal, as go tool mage gives it
			}
			out, code := run(t, dir, tt.env, tt.args...)
			if code != 2 || !strings.Contains(out, tt.says) {
				t.Fatalf("mage %v: exit %d, want 2 saying %q:\n%s", tt.args, code, tt.says, out)
			}
		})
	}
}

func itoa(i int) string { return string(rune('0' + i)) }
