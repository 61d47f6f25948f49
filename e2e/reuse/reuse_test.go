package reuse

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contested/contested/e2e/internal/e2etest"
	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/gate"
)

// counterCode and counterTest are a second package of the adopter with a
// surface of its own, adopter.counter, whose contract links the adopter's
// stock package: a library it links.
const (
	counterCode = "package counter\n\n// Item is the item the counter counts.\nconst Item = \"gadget\"\n"
	counterTest = `package counter

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/contested"

	stock "example.com/adopter"
)

func TestMain(m *testing.M) { contested.Main(m) }

func TestCounterContract(t *testing.T) {
	t.Run("burst", func(t *testing.T) {
		ctx := context.Background()
		leg := contested.Start(t, "adopter.counter", contested.Burst)
		db, err := pgxpool.New(ctx, leg.DirectDSN())
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := stock.Migrate(ctx, db); err != nil {
			t.Fatal(err)
		}
		const n = 10
		for w := range leg.Schedule().Windows {
			for _, d := range leg.Deliveries(ctx, n, contested.BurstPlan{}) {
				if err := stock.Apply(ctx, db, stock.Delivery{ID: fmt.Sprintf("c%d-d%d", w, d.Index), Item: Item, Qty: 1}); err != nil {
					t.Fatal(err)
				}
				leg.Consumed(d)
			}
		}
		distinct := n * len(leg.Schedule().Windows)
		q, err := stock.Quantity(ctx, db, Item)
		if err == nil && q != distinct {
			err = fmt.Errorf("exactly-once violated: %d counted after %d distinct deliveries", q, distinct)
		}
		leg.Oracle("exactly-once", distinct, distinct, err)
		if err != nil {
			t.Error(err)
		}
	})
}
`
	counterSurface = `
[[surface]]
id = "adopter.counter"
class = "store"
owner = "counter-team"
behavior = "a delivery is counted exactly once"
oracle = "exactly-once"
legs = ["burst"]
tests = ["TestCounterContract"]
package = "./counter"
`
)

const (
	stockPkg   = "example.com/adopter"
	counterPkg = "example.com/adopter/counter"
)

// twoSurfaces is the adopter with adopter.counter beside adopter.stock.
func twoSurfaces(t *testing.T) string {
	t.Helper()
	registry := read(t, filepath.Join(e2etest.RepoRoot(t), "testdata", "adopter", "contested-surfaces.toml"))
	return e2etest.Adopter(t, map[string]string{
		"counter/counter.go":      counterCode,
		"counter/counter_test.go": counterTest,
		"contested-surfaces.toml": registry + counterSurface + counterReads,
		"expected/counts.txt":     "1\n",
	})
}

// counterReads names a file outside the counter's package that its tests
// are taken to read at run time.
const counterReads = `
[reuse.reads]
"./counter" = ["expected/counts.txt"]
`

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func edit(t *testing.T, dir, name, old, new string) {
	t.Helper()
	p := filepath.Join(dir, name)
	body := read(t, p)
	if !strings.Contains(body, old) {
		t.Fatalf("%s has no %q to change", name, old)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(body, old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// report is the part of validate.json these tests read.
type report struct {
	RunID    string                `json:"run_id"`
	Green    bool                  `json:"green"`
	Surfaces []gate.SurfaceVerdict `json:"surfaces"`
	Battery  *battery.Result       `json:"battery"`
	Gate     *gate.Report          `json:"gate"`
	Reuse    *struct {
		On       bool   `json:"on"`
		Why      string `json:"why"`
		All      bool   `json:"all"`
		Packages []struct {
			Name   string         `json:"name"`
			Reused battery.Reused `json:"reused"`
		} `json:"packages"`
		Surfaces []struct {
			Name string `json:"name"`
		} `json:"surfaces"`
		Ignored   []string `json:"ignored_certificates"`
		Certified int      `json:"certified"`
		Ran       int      `json:"ran"`
	} `json:"reuse"`
}

// validate runs validate in dir, wants it GREEN, and returns its report
// and how long it took.
func validate(t *testing.T, dir string, env []string, args ...string) (report, string, time.Duration) {
	t.Helper()
	e2etest.Targets(t) // compiled once, before the clock starts
	start := time.Now()
	// Each validate gets a run id of its own, as a user's does, not the
	// shared layer's: the run a reused result came from is checked.
	id := "reuse-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	out, code := e2etest.Mage(t, dir, append([]string{"CI=", "CONTESTED_RUN_ID=" + id}, env...), append([]string{"validate"}, args...)...)
	took := time.Since(start)
	if code != 0 || !strings.Contains(out, "validate: GREEN") {
		t.Fatalf("validate %v %v: exit %d, want 0 and GREEN:\n%s", env, args, code, out)
	}
	var r report
	e2etest.ReadJSON(t, filepath.Join(dir, "test-results", "validate.json"), &r)
	if r.Reuse == nil {
		t.Fatalf("validate.json has no reuse:\n%s", out)
	}
	return r, out, took
}

// reused is what a run reused: packages and surfaces, sorted.
func reused(r report) (pkgs, surfaces []string) {
	for _, p := range r.Reuse.Packages {
		pkgs = append(pkgs, p.Name)
	}
	for _, s := range r.Reuse.Surfaces {
		surfaces = append(surfaces, s.Name)
	}
	return pkgs, surfaces
}

// wantReused checks that a run reused exactly the packages and surfaces
// the change could not reach, and that each reused surface says so in
// validate.json with the run it came from.
func wantReused(t *testing.T, what string, r report, from string, pkgs, surfaces []string) {
	t.Helper()
	gotP, gotS := reused(r)
	for _, p := range gotP {
		if p == "example.com/adopter/cmd/stockd" || p == "example.com/adopter/magefiles" {
			gotP = slices.DeleteFunc(gotP, func(s string) bool { return s == p })
		}
	}
	if !slices.Equal(gotP, pkgs) || !slices.Equal(gotS, surfaces) {
		t.Errorf("%s: reused packages %v and surfaces %v; want %v and %v", what, gotP, gotS, pkgs, surfaces)
	}
	for _, s := range r.Surfaces {
		isReused := slices.Contains(surfaces, s.ID)
		if isReused != (s.Reused != nil) {
			t.Errorf("%s: surface %s reused %+v in validate.json, want reused %v", what, s.ID, s.Reused, isReused)
		}
		if s.Reused != nil && s.Reused.RunID != from {
			t.Errorf("%s: surface %s reused from run %s, want %s", what, s.ID, s.Reused.RunID, from)
		}
	}
}

// TestReuseFollowsWhatAChangeCouldReach runs an adopter with two surfaces
// in two packages (adopter.counter's links adopter.stock's package)
// through changes, and checks each validate reused exactly what the
// change could not reach.
func TestReuseFollowsWhatAChangeCouldReach(t *testing.T) {
	t.Parallel()
	dir := twoSurfaces(t)
	full, out, fullTook := validate(t, dir, nil)
	if !full.Reuse.On || len(full.Reuse.Packages) != 0 || full.Reuse.Certified == 0 || !strings.Contains(out, "validate: certified") {
		t.Fatalf("the first validate: reuse %+v; want on, nothing reused (no certificate yet), certificates written:\n%s", full.Reuse, out)
	}

	// Nothing changed: everything reused, nothing ran, and the verdict says so.
	same, out, sameTook := validate(t, dir, nil)
	if !same.Reuse.All || !strings.Contains(out, "all reused") || !strings.Contains(out, "reused from run "+full.RunID) {
		t.Errorf("nothing changed: reuse %+v; want all reused from %s, said in the verdict:\n%s", same.Reuse, full.RunID, out)
	}
	wantReused(t, "nothing changed", same, full.RunID, []string{stockPkg, counterPkg}, []string{"adopter.counter", "adopter.stock"})
	ratio := sameTook.Seconds() / fullTook.Seconds()
	t.Logf("validate with nothing changed: %s against %s full, %.2fx", sameTook.Round(10*time.Millisecond), fullTook.Round(10*time.Millisecond), ratio)
	if ratio > 0.35 {
		t.Errorf("validate with nothing changed took %.2fx the full validate, want at most 0.35x", ratio)
	}

	// The component: counter runs (deeper, over its hardening seeds),
	// stock is reused.
	edit(t, dir, "counter/counter.go", "const Item", "// Item changed.\nconst Item")
	counter, out, _ := validate(t, dir, nil)
	wantReused(t, "the counter changed", counter, full.RunID, []string{stockPkg}, []string{"adopter.stock"})
	var deeper *gate.SurfaceVerdict
	for i := range counter.Surfaces {
		if counter.Surfaces[i].ID == "adopter.counter" {
			deeper = &counter.Surfaces[i]
		}
	}
	if deeper == nil || deeper.Verdict != "GREEN" || !strings.Contains(deeper.Deeper, "inputs changed") || !strings.Contains(out, "hardening budget's 3 seeds") {
		t.Errorf("the changed surface: %+v; want GREEN, run deeper over its hardening seeds, saying why:\n%s", deeper, out)
	} else if l := deeper.Legs[0]; l.Verdict != "PASS-hardening" {
		t.Errorf("the changed surface's leg %+v, want PASS-hardening after its hardening seeds", l)
	}
	if counter.Gate == nil || !counter.Gate.Certified || len(counter.Gate.Reused) != 1 || counter.Gate.Reused[0].Surface != "adopter.stock" {
		t.Errorf("the gate: %+v; want certified, with adopter.stock's faults as the earlier run's evidence", counter.Gate)
	}

	// The shards' timings keep the reused package's time from the last
	// run that ran it.
	if timings := read(t, filepath.Join(dir, "test-results", "shards", "timings.json")); !strings.Contains(timings, `"`+stockPkg+` TestStockContract`) {
		t.Errorf("after a run that reused %s, the shards' timings lost it:\n%s", stockPkg, timings)
	}

	// The library counter links: both run.
	edit(t, dir, "stock.go", "package stock", "// Package stock changed.\npackage stock")
	lib, _, _ := validate(t, dir, nil)
	wantReused(t, "the library changed", lib, "", nil, nil)

	// The registry entry of one surface: that surface's package runs.
	edit(t, dir, "contested-surfaces.toml", `behavior = "a delivery is counted exactly once"`, `behavior = "a delivery is counted once and only once"`)
	entry, _, _ := validate(t, dir, nil)
	wantReused(t, "adopter.counter's entry changed", entry, lib.RunID, []string{stockPkg}, []string{"adopter.stock"})

	// A file the counter's tests read outside their package, named in
	// [reuse] reads: the counter runs again, stock is reused.
	edit(t, dir, "expected/counts.txt", "1", "2")
	reads, _, _ := validate(t, dir, nil)
	wantReused(t, "a file the counter's tests read", reads, lib.RunID, []string{stockPkg}, []string{"adopter.stock"})

	// Build tags and the level reach every package.
	tags, _, _ := validate(t, dir, []string{"GOFLAGS=-tags=reuse_e2e"})
	wantReused(t, "build tags", tags, "", nil, nil)
	level, _, _ := validate(t, dir, []string{"GOFLAGS=-tags=reuse_e2e", "CONTESTED_LEVEL=2"})
	wantReused(t, "the level", level, "", nil, nil)

	// Back to the inputs before the tags and the level, as after a
	// revert or a switch back to a branch: the certificates those inputs
	// earned are still held, each from the run that earned it.
	back, _, _ := validate(t, dir, nil)
	if !back.Reuse.All {
		t.Errorf("back to earlier inputs: reuse %+v; want everything reused", back.Reuse)
	}
	t.Logf("runs: full %s, counter %s, library %s, entry %s, reads %s, tags %s, level %s, back %s", full.RunID, counter.RunID, lib.RunID, entry.RunID, reads.RunID, tags.RunID, level.RunID, back.RunID)
	from := map[string]string{"adopter.stock": lib.RunID, "adopter.counter": reads.RunID}
	for _, s := range back.Surfaces {
		if s.Reused == nil || s.Reused.RunID != from[s.ID] {
			t.Errorf("back to earlier inputs: surface %s reused %+v, want from run %s", s.ID, s.Reused, from[s.ID])
		}
	}
}

// TestCIRunsEverythingAndATamperedCertificateIsIgnored: under CI=true
// validate runs everything unless -reuse; -full runs everything anywhere;
// a certificate edited by hand is ignored with one line, and what it
// certified runs.
func TestCIRunsEverythingAndATamperedCertificateIsIgnored(t *testing.T) {
	t.Parallel()
	dir := e2etest.Adopter(t, nil)
	first, _, _ := validate(t, dir, nil)

	ci, out, _ := validate(t, dir, []string{"CI=true"})
	if ci.Reuse.On || !strings.Contains(ci.Reuse.Why, "CI=true") || len(ci.Reuse.Packages) != 0 || !strings.Contains(out, "reuse off (CI=true") {
		t.Errorf("under CI: reuse %+v; want off, saying CI=true:\n%s", ci.Reuse, out)
	}
	withReuse, _, _ := validate(t, dir, []string{"CI=true"}, "-reuse")
	if !withReuse.Reuse.All {
		t.Errorf("under CI with -reuse: reuse %+v; want everything reused", withReuse.Reuse)
	}
	wantReused(t, "CI with -reuse", withReuse, ci.RunID, []string{stockPkg}, []string{"adopter.stock"})
	forced, _, _ := validate(t, dir, nil, "-full")
	if forced.Reuse.On || !strings.Contains(forced.Reuse.Why, "-full") || len(forced.Reuse.Packages) != 0 || forced.Reuse.Ran != len(forced.Battery.Packages) {
		t.Errorf("-full: reuse %+v; want off, saying -full, with every one of the %d packages ran", forced.Reuse, len(forced.Battery.Packages))
	}
	if first.RunID == "" {
		t.Fatal("no run id")
	}

	certs, _ := filepath.Glob(filepath.Join(dir, "test-results", "history", "certificates", "surface-*.json"))
	if len(certs) != 1 {
		t.Fatalf("surface certificates %v, want one", certs)
	}
	edit(t, dir, filepath.Join("test-results", "history", "certificates", filepath.Base(certs[0])), `"run_id": "`, `"run_id": "x`)
	tampered, out, _ := validate(t, dir, nil)
	if len(tampered.Reuse.Ignored) != 1 || !strings.Contains(out, "ignored: the certificate does not verify: its seal is not this user's") {
		t.Errorf("a tampered certificate: ignored %q; want it ignored saying its seal is not this user's:\n%s", tampered.Reuse.Ignored, out)
	}
	wantReused(t, "a tampered certificate", tampered, "", nil, nil)
}
