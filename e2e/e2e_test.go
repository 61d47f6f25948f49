package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contested/contested/faultlayer/faulttest"
	"github.com/contested/contested/faultlayer/noise"
	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/gate"
	"github.com/contested/contested/gate/contract"
	"github.com/contested/contested/gate/ladder"
	"github.com/contested/contested/internal/fixture"
)

// parallel is how many of these tests run at once unless go test's
// -parallel says otherwise. They spend their time waiting on subprocesses,
// containers and the adopter's own tests rather than on a CPU (a serial
// run of the package kept under a third of one core busy), so more of
// them than the machine has cores overlap their waits.
const parallel = 4

func TestMain(m *testing.M) {
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		flag.Set("test.parallel", strconv.Itoa(max(parallel, runtime.GOMAXPROCS(0))))
	}
	code := m.Run()
	faulttest.Close()
	if compiled.dir != "" {
		os.RemoveAll(compiled.dir)
	}
	os.Exit(code)
}

// repoRoot is this repository's root.
func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// adopter copies testdata/adopter into a temporary directory, points its
// replace directive at this checkout, and applies edits (path → new
// content; "" deletes the file).
func adopter(t *testing.T, edits map[string]string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "adopter")
	if err := fixture.Copy(filepath.Join(repoRoot(t), "testdata", "adopter"), dst, repoRoot(t)); err != nil {
		t.Fatal(err)
	}
	for name, body := range edits {
		p := filepath.Join(dst, name)
		if body == "" {
			os.Remove(p)
			continue
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// compiled is the adopter's magefile compiled once for the package by go
// tool mage -compile: the program go tool mage builds and runs. No test
// edits the magefile, so every copy of the adopter runs the same one, and
// the tests run it directly instead of paying go tool mage's check and
// build on each of some seventy calls (seconds each on a busy machine),
// and instead of racing each other to rebuild mage's cached binary. The
// go tool mage path itself is run by goToolMage.
var compiled struct {
	once     sync.Once
	dir, bin string
	err      error
}

// targets returns the compiled targets, building them on first use.
func targets(t *testing.T) string {
	t.Helper()
	root := repoRoot(t)
	compiled.once.Do(func() {
		if compiled.dir, compiled.err = os.MkdirTemp("", "contested-e2e-targets-"); compiled.err != nil {
			return
		}
		src := filepath.Join(compiled.dir, "adopter")
		if compiled.err = fixture.Copy(filepath.Join(root, "testdata", "adopter"), src, root); compiled.err != nil {
			return
		}
		bin := filepath.Join(compiled.dir, "targets")
		cmd := exec.Command("go", "tool", "mage", "-compile", bin)
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			compiled.err = fmt.Errorf("go tool mage -compile in the adopter: %v\n%s", err, out)
			return
		}
		compiled.bin = bin
	})
	if compiled.err != nil {
		t.Fatal(compiled.err)
	}
	return compiled.bin
}

// mage runs the adopter's targets (the compiled magefile) with args in dir
// against the shared fault layer and returns its output and exit code.
func mage(t *testing.T, dir string, env []string, args ...string) (string, int) {
	t.Helper()
	return runTarget(t, dir, env, append([]string{targets(t)}, args...))
}

// goToolMage is mage through `go tool mage`, as a user types it: mage
// compiles the magefile of dir, then runs it.
func goToolMage(t *testing.T, dir string, env []string, args ...string) (string, int) {
	t.Helper()
	return runTarget(t, dir, env, append([]string{"go", "tool", "mage"}, args...))
}

func runTarget(t *testing.T, dir string, env, argv []string) (string, int) {
	t.Helper()
	args := argv[1:]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), faulttest.Layer(t).Env()...), "NO_COLOR=1", "CONTESTED_RESULTS_DIR=", "CONTESTED_SURFACES=")
	cmd.Env = append(cmd.Env, env...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("%v: %v\n%s", argv, err, out)
	}
	t.Logf("%s %s: exit %d in %s", filepath.Base(argv[0]), strings.Join(args, " "), code, time.Since(start).Round(100*time.Millisecond))
	return string(out), code
}

func readReport(t *testing.T, dir string) *gate.Report {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "test-results", "fault", faultrecord.ReportName))
	if err != nil {
		t.Fatal(err)
	}
	var r gate.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

func TestAdopterValidateIsCertified(t *testing.T) {
	t.Parallel()
	dir := adopter(t, nil)
	out, code := goToolMage(t, dir, nil, "validate") // as a user types it
	if code != 0 || !strings.Contains(out, "CERTIFIED") || !strings.Contains(out, "validate: GREEN") {
		t.Fatalf("validate of the adopter: exit %d, want 0 and CERTIFIED:\n%s", code, out)
	}
	// [battery] packages_per_core = 2: go test runs two packages per core.
	if p := fmt.Sprintf(" -p %d ./... (", 2*runtime.GOMAXPROCS(0)); !strings.Contains(out, p) {
		t.Errorf("the battery's go test does not run with%s:\n%s", strings.TrimSuffix(p, " ./... ("), out)
	}
	r := readReport(t, dir)
	if !r.Certified || !r.StampConsumed || r.Fired == 0 || len(r.ClassesWithZeroFired) != 0 {
		t.Errorf("report: certified %v, stamp consumed %v, fired %d, classes with zero fired %v", r.Certified, r.StampConsumed, r.Fired, r.ClassesWithZeroFired)
	}
	for _, f := range []string{"fault/fault-report.html", "battery/junit.xml", "battery/go-test.json", "validate.json", "capacity.json"} {
		if _, err := os.Stat(filepath.Join(dir, "test-results", f)); err != nil {
			t.Errorf("artifact %s: %v", f, err)
		}
	}

	// One verdict: the surface's, judged from the battery, in validate.json
	// and fault-report.json, and the same as contested's over one seed.
	var v validateJSON
	readJSON(t, filepath.Join(dir, "test-results", "validate.json"), &v)
	if !v.Green || len(v.Surfaces) != 1 || v.Surfaces[0].Verdict != "GREEN" {
		t.Fatalf("validate.json: green %v, surfaces %+v; want one GREEN surface", v.Green, v.Surfaces)
	}
	for _, l := range v.Surfaces[0].Legs {
		if l.Verdict != "PASS-smoke" || l.Armed == 0 || l.Fired != l.Armed || len(l.Oracles) == 0 {
			t.Errorf("leg %+v: want PASS-smoke with its faults and oracles", l)
		}
	}
	if !reflect.DeepEqual(r.Surfaces, v.Surfaces) {
		t.Errorf("fault-report.json surfaces %+v differ from validate.json's %+v", r.Surfaces, v.Surfaces)
	}
	if !strings.Contains(out, "adopter.stock") || !strings.Contains(out, "PASS-smoke") {
		t.Errorf("validate does not print the surface's verdicts:\n%s", out)
	}
	cout, code := mage(t, dir, []string{"CONTESTED_SEEDS=1"}, "contested", "all")
	if code != 0 {
		t.Fatalf("contested all: exit %d, want 0:\n%s", code, cout)
	}
	sameVerdicts(t, dir, "adopter.stock", v.Surfaces)

	// The stamp was consumed: program-gate announces it is missing, and
	// verifies the records on disk standalone.
	out, code = mage(t, dir, nil, "program-gate")
	if code != 0 || !strings.Contains(out, "no gate stamp") || !strings.Contains(out, "CERTIFIED") {
		t.Errorf("program-gate after a certified validate: exit %d:\n%s", code, out)
	}
}

const poisonStale = `package stock

import (
	"os"
	"testing"
	"time"

	"github.com/contested/contested/contested/runenv"
	"github.com/contested/contested/faultrecord"
)

// A valid record whose mtime predates the gate stamp: evidence of an
// earlier run passed off as this one's.
func TestPoisonStale(t *testing.T) {
	env, err := runenv.Process()
	if err != nil {
		t.Fatal(err)
	}
	rec, err := faultrecord.NewRecorder("example.com/adopter", faultrecord.WithResultsDir(env.ResultsDir), faultrecord.WithRunID(env.RunID))
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

	"github.com/contested/contested/contested/runenv"
	"github.com/contested/contested/faultrecord"
)

// Half a record, as a writer killed mid-write without the atomic rename
// would leave it.
func TestPoisonTruncated(t *testing.T) {
	env, err := runenv.Process()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(faultrecord.FaultDir(env.ResultsDir), "truncated.json")
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
	registry, err := os.ReadFile(filepath.Join(repoRoot(t), "testdata", "adopter", "contested-surfaces.toml"))
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
			dir := adopter(t, tt.edits)
			out, code := mage(t, dir, nil, "validate")
			if code != 1 {
				t.Fatalf("exit %d, want 1 (refused):\n%s", code, out)
			}
			r := readReport(t, dir)
			if r.Certified || r.Phases[tt.phase-1].OK {
				t.Fatalf("phase %d passed: %+v", tt.phase, r.Phases)
			}
			name := r.Phases[tt.phase-1].Name
			if !strings.Contains(out, "phase "+itoa(tt.phase)+" ("+name+")") {
				t.Errorf("the output does not name phase %d (%s):\n%s", tt.phase, name, out)
			}
			if _, err := os.Stat(filepath.Join(dir, "test-results", "fault", faultrecord.StampName)); err != nil {
				t.Errorf("a refused run consumed its stamp: %v", err)
			}
		})
	}
}

func TestBadInputExitsTwoWithFileAndLine(t *testing.T) {
	t.Parallel()
	badRegistry := "schema = 1\n[gate]\nrecording_classes = [\"store\"]\n\n[[surface]]\nid = \"adopter.stock\"\nclass = \"store\"\nownr = \"stock-team\"\n"
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "testdata", "adopter", "contested-surfaces.toml"))
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
			dir := adopter(t, tt.edits)
			run := mage
			if tt.name == "an unknown target" {
				run = goToolMage // mage's own refusal, as go tool mage gives it
			}
			out, code := run(t, dir, tt.env, tt.args...)
			if code != 2 || !strings.Contains(out, tt.says) {
				t.Fatalf("mage %v: exit %d, want 2 saying %q:\n%s", tt.args, code, tt.says, out)
			}
		})
	}
}

// TestTheReadmeMagefileIsTheAdopters keeps the README's "Use it in your
// repository" section true: its magefile is the adopter fixture's.
func TestTheReadmeMagefileIsTheAdopters(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	magefile, err := os.ReadFile(filepath.Join(repoRoot(t), "testdata", "adopter", "magefiles", "magefile.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```go\n"+string(magefile)+"```") {
		t.Errorf("the README's magefile differs from testdata/adopter/magefiles/magefile.go; paste the fixture's into the README")
	}
}

func TestAdopterGoModIsTidy(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("go", "mod", "tidy", "-diff")
	cmd.Dir = filepath.Join(repoRoot(t), "testdata", "adopter")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("testdata/adopter's go.mod or go.sum is out of date (run go mod tidy there):\n%s", out)
	}
}

func itoa(i int) string { return string(rune('0' + i)) }

// validateJSON is the part of validate.json these tests read.
type validateJSON struct {
	Green           bool                  `json:"green"`
	Level           int                   `json:"level"`
	Surfaces        []gate.SurfaceVerdict `json:"surfaces"`
	BatteryFailures []ladder.Plain        `json:"battery_failures"`
	Ladder          []*ladder.Outcome     `json:"ladder"`
	Capabilities    []capabilityRow       `json:"capabilities"`
	NotArbitrated   []string              `json:"not_arbitrated"`
	Noise           *noise.Evidence       `json:"noise"`
	Gate            *gate.Report          `json:"gate"`
}

// capabilityRow is one row of validate.json's capability matrix.
type capabilityRow struct {
	Name     string   `json:"name"`
	NeededBy []string `json:"needed_by"`
	Present  bool     `json:"present"`
	Provide  string   `json:"provide"`
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// sameVerdicts compares validate's entry for a surface with contested's
// result for it: the surface's verdict and every leg's.
func sameVerdicts(t *testing.T, dir, surface string, validate []gate.SurfaceVerdict) {
	t.Helper()
	var got *gate.SurfaceVerdict
	for i := range validate {
		if validate[i].ID == surface {
			got = &validate[i]
		}
	}
	if got == nil {
		t.Fatalf("validate.json has no entry for %s: %+v", surface, validate)
	}
	var want contract.Result
	readJSON(t, filepath.Join(dir, "test-results", "contested", surface+".json"), &want)
	if got.Verdict != string(want.Contract) {
		t.Errorf("%s: validate says %s, contested says %s", surface, got.Verdict, want.Contract)
	}
	if len(got.Legs) != len(want.Legs) {
		t.Fatalf("%s: validate has %d legs, contested %d", surface, len(got.Legs), len(want.Legs))
	}
	for i, l := range want.Legs {
		if got.Legs[i].Leg != l.Lever || got.Legs[i].Verdict != string(l.Verdict) {
			t.Errorf("%s leg %s: validate says %s (%s), contested says %s (%s)", surface, l.Lever, got.Legs[i].Verdict, got.Legs[i].Reason, l.Verdict, l.Reason)
		}
	}
}

// TestValidateAndContestedGiveOneVerdict: validate judges each registered
// surface from its battery by contested's rules; contested over one seed
// gives the same verdicts, for an adopter with a planted defect and for one
// whose leg runs only at level 2 (the healthy adopter is compared in
// TestAdopterValidateIsCertified). A failing test no surface lists walks
// the ladder too and is its author's once the evidence is in.
func TestValidateAndContestedGiveOneVerdict(t *testing.T) {
	t.Parallel()
	t.Run("a planted defect and a failing test outside the registry", func(t *testing.T) {
		t.Parallel()
		dir := adopter(t, map[string]string{"machinery_test.go": machineryTest})
		env := []string{"GOFLAGS=-tags=adopter_defect", "CONTESTED_SEEDS=1"}
		out, code := mage(t, dir, env, "validate")
		if code != 1 {
			t.Fatalf("validate: exit %d, want 1:\n%s", code, out)
		}
		var v validateJSON
		readJSON(t, filepath.Join(dir, "test-results", "validate.json"), &v)
		if v.Green || len(v.Surfaces) != 1 || v.Surfaces[0].Verdict != "RED" {
			t.Fatalf("validate.json: green %v, surfaces %+v; want adopter.stock RED", v.Green, v.Surfaces)
		}
		if !strings.Contains(out, "surface adopter.stock is RED (burst FAIL-reproducible)") {
			t.Errorf("validate does not give the surface's verdict as a reason:\n%s", out)
		}
		// Every failure is listed with the evidence of its walk: the
		// defective leg (the component's) and the machinery test no surface
		// lists (its author's, after its reruns, never "register it").
		failures := map[string]ladder.Plain{}
		for _, p := range v.BatteryFailures {
			failures[p.Test] = p
		}
		if m, ok := failures["TestMachineryBringsUpItsProvider"]; !ok || !strings.Contains(m.FirstLine, "the provider never came up") ||
			m.Owner != "test author" || !m.Arbitrated || m.Class != ladder.Consistent || m.Reruns == nil || m.Reruns.Failed != m.Reruns.Ran {
			t.Errorf("the machinery test's entry %+v; want its failure line, walked, consistent over its reruns, owner test author", m)
		}
		if b, ok := failures["TestStockContract/burst"]; !ok || !strings.HasPrefix(b.Owner, "component") || b.Seed == 0 || !strings.Contains(b.Replay, fmt.Sprint(b.Seed)) {
			t.Errorf("the defective leg's entry %+v; want the component's, with the seed it ran with and its replay", b)
		}
		if strings.Contains(strings.ToLower(out), "register testmachinery") || strings.Contains(out, "register it") {
			t.Errorf("validate tells the user to register a machinery test:\n%s", out)
		}
		out, code = mage(t, dir, env, "contested", "all")
		if code != 1 {
			t.Fatalf("contested all: exit %d, want 1:\n%s", code, out)
		}
		sameVerdicts(t, dir, "adopter.stock", v.Surfaces)
		out, code = mage(t, dir, nil, "arbitrate", "TestMachineryBringsUpItsProvider")
		if code != 1 || !strings.Contains(out, "owner   test author") || !strings.Contains(out, "-run '^TestMachineryBringsUpItsProvider$'") {
			t.Errorf("arbitrate on a machinery test: exit %d, want 1, its author's, saying how to run it:\n%s", code, out)
		}
		// The defect fixed (the build no longer plants it): the leg passes
		// its reruns, and the last validate ran other code, so there is
		// nothing to arbitrate, whatever the history holds, and nothing
		// is saved.
		os.RemoveAll(filepath.Join(dir, "test-results", "ladder"))
		out, code = mage(t, dir, nil, "arbitrate", "TestStockContract/burst")
		if code != 0 || !strings.Contains(out, "NO FAILURE") || !strings.Contains(out, "ran other code") || !strings.Contains(out, "for context, the flake history") {
			t.Errorf("arbitrate on the fixed leg: exit %d, want 0, NO FAILURE, saying the last validate ran other code and what the history held:\n%s", code, out)
		}
		if _, err := os.Stat(filepath.Join(dir, "test-results", "ladder", ladder.FileName("TestStockContract/burst")+".json")); err == nil {
			t.Error("arbitrate saved an outcome for a test that did not fail")
		}
	})

	t.Run("a leg that runs only at level 2", func(t *testing.T) {
		t.Parallel()
		registry, err := os.ReadFile(filepath.Join(repoRoot(t), "testdata", "adopter", "contested-surfaces.toml"))
		if err != nil {
			t.Fatal(err)
		}
		tests, err := os.ReadFile(filepath.Join(repoRoot(t), "testdata", "adopter", "stock_test.go"))
		if err != nil {
			t.Fatal(err)
		}
		const reset = "t.Run(\"reset\", func(t *testing.T) {\n"
		if !strings.Contains(string(tests), reset) {
			t.Fatal("the adopter's stock_test.go has no reset subtest to restrict")
		}
		// In the surface's table: the registry ends with other tables.
		const legs = "legs = [\"burst\", \"reset\"]\n"
		if !strings.Contains(string(registry), legs) {
			t.Fatal("the adopter's registry has no legs line to add levels beside")
		}
		dir := adopter(t, map[string]string{
			"contested-surfaces.toml": strings.Replace(string(registry), legs, legs+"levels = { reset = [2, 3] }\n", 1),
			"stock_test.go": strings.Replace(string(tests), reset, reset+
				"\t\tif l, _ := contested.Level(); l < 2 {\n\t\t\tt.Skip(\"reset runs from level 2\")\n\t\t}\n", 1),
		})
		out, code := mage(t, dir, []string{"CONTESTED_SEEDS=1"}, "contested", "all")
		if code != 0 || strings.Contains(out, "NOT-RUN") || !strings.Contains(out, "NOT-AT-LEVEL") || !strings.Contains(out, "contract: GREEN") {
			t.Fatalf("contested all at level 1: exit %d; want 0, GREEN, reset NOT-AT-LEVEL and no NOT-RUN:\n%s", code, out)
		}
		out, code = mage(t, dir, nil, "validate")
		if code != 0 {
			t.Fatalf("validate at level 1: exit %d, want 0:\n%s", code, out)
		}
		var v validateJSON
		readJSON(t, filepath.Join(dir, "test-results", "validate.json"), &v)
		sameVerdicts(t, dir, "adopter.stock", v.Surfaces)
	})
}

// machineryTest is a test of the adopter's own machinery that fails: no
// surface lists it.
const machineryTest = `package stock

import "testing"

func TestMachineryBringsUpItsProvider(t *testing.T) {
	t.Fatal("the provider never came up: debootstrap is not installed")
}
`

// TestAValidateThatTimesOutNamesTheTest: a battery test that sleeps past
// the battery's timeout (CONTESTED_TEST_TIMEOUT, go test's -timeout) turns
// validate RED with the timeout and the test it was running as a reason,
// and lists that test with the cause as its first line and an action that
// says how to find where it waits and how to raise the timeout; never as a
// package that failed outside any test.
func TestAValidateThatTimesOutNamesTheTest(t *testing.T) {
	t.Parallel()
	// Tests run in file order: TestHang runs first, whatever else is slow.
	dir := adopter(t, map[string]string{"a_hang_test.go": "package stock\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n\nfunc TestHang(t *testing.T) {\n\tt.Run(\"waits\", func(t *testing.T) { time.Sleep(time.Hour) })\n}\n"})
	out, code := mage(t, dir, []string{"CONTESTED_TEST_TIMEOUT=10s"}, "validate")
	if code != 1 {
		t.Fatalf("validate: exit %d, want 1:\n%s", code, out)
	}
	for _, want := range []string{
		fmt.Sprintf("battery: go test -json -count=1 -timeout=10s -p %d ./...", 2*runtime.GOMAXPROCS(0)),
		"package example.com/adopter timed out after 10s while running TestHang/waits: make the test faster or raise the battery's timeout (CONTESTED_TEST_TIMEOUT",
		"go test example.com/adopter -run '^TestHang$/^waits$' -count=1 -v",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("validate does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "failed outside any test") {
		t.Errorf("validate blames the package, not the test:\n%s", out)
	}
	var v validateJSON
	readJSON(t, filepath.Join(dir, "test-results", "validate.json"), &v)
	if len(v.BatteryFailures) != 1 || v.BatteryFailures[0].Test != "TestHang/waits" ||
		!strings.Contains(v.BatteryFailures[0].FirstLine, "timed out: still running when go test's -timeout of 10s ended the test binary") {
		t.Errorf("battery failures %+v; want TestHang/waits with the timeout as its first line", v.BatteryFailures)
	}
}
