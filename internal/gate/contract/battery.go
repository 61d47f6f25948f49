package contract

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/capability"
	"github.com/contested/contested/internal/gate"
	"github.com/contested/contested/internal/gate/verdict"
	"github.com/contested/contested/internal/legstart"
	"github.com/contested/contested/internal/registry"
)

// Battery is what one battery (validate's go test run over the module, or
// the records a program-gate finds on disk) says of the registered
// surfaces.
type Battery struct {
	Registry *registry.Registry
	// Module is the module's path (go.mod), to match a surface's package to
	// the import paths tests and records carry; empty matches any package.
	Module string
	// Result is the battery's test outcomes; nil judges from records alone.
	Result  *battery.Result
	Records []faultrecord.Record
	Level   int
	// Reruns says, per failing test id (battery.Test.ID), whether it failed
	// again on every rerun alone with its leg's seed (the ladder's reruns);
	// a failing test without an entry was not rerun.
	Reruns map[string]bool
	// Capabilities is what the machine has (capability.Work); nil when
	// nobody worked it out.
	Capabilities capability.Matrix
	// Starts are the legs' start records of the battery: the seed a leg
	// that failed before it armed ran with, for its replay.
	Starts []legstart.Start
}

// JudgeBattery judges every registered surface that ran in the battery (one
// of its tests ran, passed, failed or was skipped, or a record names one of
// its tests) with Judge: one battery is one run, so a leg that passes is
// PASS-smoke unless its surface's hardening budget is one seed. Surfaces
// that did not run are left out.
func JudgeBattery(b Battery) []*Result {
	var out []*Result
	for _, s := range b.Registry.Surfaces {
		run, ran := b.run(s)
		if !ran {
			continue
		}
		level := max(b.Level, 1)
		res := &Result{Surface: s.ID, Class: s.Class, Owner: s.Owner, Behavior: s.Behavior, Oracle: s.Oracle, Level: level, Seeds: []SeedRun{run}}
		res.Legs, res.Contract = Judge(s, Evidence{Level: level, Runs: res.Seeds, Capabilities: b.Capabilities})
		out = append(out, res)
	}
	return out
}

// run gathers a surface's evidence from the battery.
func (b Battery) run(s registry.Surface) (SeedRun, bool) {
	run := SeedRun{Passed: true, Failures: map[string]string{}, RerunTests: map[string]bool{}, Starts: b.Starts}
	ran := false
	if b.Result != nil {
		mine := func(t battery.Test) bool {
			got, ok := SurfaceOf(b.Registry, b.Module, t.Package, t.Name)
			return ok && got.ID == s.ID
		}
		for _, t := range b.Result.Tests {
			if !mine(t) {
				continue
			}
			ran = true
			if again, ok := b.Reruns[t.ID()]; ok && t.Action == "fail" {
				run.RerunTests[t.Name] = again
			}
		}
		addOutcomes(&run, b.Result.Tests, mine)
	}
	for _, r := range b.Records {
		if got, ok := SurfaceOf(b.Registry, b.Module, r.Package, r.Test); ok && got.ID == s.ID {
			run.Records = append(run.Records, r)
			ran = true
		}
	}
	return run, ran
}

// addOutcomes adds the outcomes of the tests keep selects to run.
func addOutcomes(run *SeedRun, tests []battery.Test, keep func(battery.Test) bool) {
	for _, t := range tests {
		if !keep(t) {
			continue
		}
		switch t.Action {
		case "fail":
			run.Passed = false
			run.Failed = append(run.Failed, t.Name)
			run.Failures[t.Name] = t.Output
			if t.Failure != "" {
				if run.Reasons == nil {
					run.Reasons = map[string]string{}
				}
				run.Reasons[t.Name] = t.Failure
			}
			run.Ran = append(run.Ran, t.Name)
		case "pass":
			run.Ran = append(run.Ran, t.Name)
		case "skip":
			run.Skipped = append(run.Skipped, t.Name)
		}
		if len(t.Missing) > 0 {
			if run.Lacked == nil {
				run.Lacked = map[string][]string{}
			}
			run.Lacked[t.Name] = t.Missing
		}
	}
}

// SurfaceOf maps a test, as a battery or a record names it (import path
// and test name), to the surface that registered it: a tests entry of the
// surface matches the name (registry.SurfaceForTest), and the surface's
// package, when it names one, is the test's. A test no surface maps to is
// not a contract test.
func SurfaceOf(reg *registry.Registry, module, pkg, name string) (registry.Surface, bool) {
	s, ok := reg.SurfaceForTest(name)
	if !ok || !packageMatches(module, s.Package, pkg) {
		return registry.Surface{}, false
	}
	return s, true
}

// packageMatches reports whether the import path pkg is what the
// registry's package (a go test pattern: "./examples/ledger", ".",
// "./cluster/...", or an import path) names in module.
func packageMatches(module, pattern, pkg string) bool {
	if pattern == "" || pkg == "" {
		return true
	}
	want := pattern
	if strings.HasPrefix(pattern, ".") {
		if module == "" {
			return true
		}
		want = module
		if rel := path.Clean(strings.TrimPrefix(pattern, "./")); rel != "." {
			want = module + "/" + rel
		}
	}
	if prefix, ok := strings.CutSuffix(want, "/..."); ok {
		return pkg == prefix || strings.HasPrefix(pkg, prefix+"/")
	}
	return pkg == want
}

// ModulePath reads the module path from dir/go.mod.
func ModulePath(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("read the module path: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "//")
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			if p, err := strconv.Unquote(f[1]); err == nil {
				return p, nil
			}
			return f[1], nil
		}
	}
	return "", fmt.Errorf("read the module path: %s has no module line", filepath.Join(dir, "go.mod"))
}

// LeafFailures returns the failing tests that have no failing subtest: the
// most specific ids, which map to legs and surfaces.
func LeafFailures(res *battery.Result) []battery.Test {
	failed := res.Failed()
	var out []battery.Test
	for _, t := range failed {
		leaf := true
		for _, u := range failed {
			if u.Package == t.Package && strings.HasPrefix(u.Name, t.Name+"/") {
				leaf = false
				break
			}
		}
		if leaf {
			out = append(out, t)
		}
	}
	return out
}

// Blocking returns the legs that keep validate from GREEN: every FAIL,
// INCONCLUSIVE and PARTIAL leg, and, when the whole battery ran (no -run
// or package selection), every NOT-RUN leg: a leg its surface declares at
// this level that the battery did not run. PASS and NOT-AT-LEVEL legs
// never block.
func (r *Result) Blocking(wholeBattery bool) []verdict.Leg {
	var out []verdict.Leg
	for _, l := range r.Legs {
		switch {
		case l.Verdict.Pass(), l.Verdict == verdict.NotAtLevel:
		case l.Verdict == verdict.NotRun && !wholeBattery:
		default:
			out = append(out, l)
		}
	}
	return out
}

// Verdict is the surface's entry in validate.json and fault-report.json:
// its legs are the same values, not copies of their fields.
func (r *Result) Verdict() gate.SurfaceVerdict {
	legs := append([]verdict.Leg{}, r.Legs...)
	return gate.SurfaceVerdict{ID: r.Surface, Verdict: r.Contract, Owner: r.Owner, Level: r.Level, Legs: legs}
}

// Verdicts lists the surfaces' entries, in registry order.
func Verdicts(rs []*Result) []gate.SurfaceVerdict {
	out := []gate.SurfaceVerdict{}
	for _, r := range rs {
		out = append(out, r.Verdict())
	}
	return out
}
