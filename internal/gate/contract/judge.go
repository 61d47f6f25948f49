package contract

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/capability"
	"github.com/contested/contested/internal/gate/verdict"
	"github.com/contested/contested/internal/legstart"
	"github.com/contested/contested/internal/registry"
	"github.com/contested/contested/internal/seed"
)

// Evidence is everything a surface's contract is judged from.
type Evidence struct {
	// Level is the CONTESTED_LEVEL the runs ran at (0 means 1).
	Level int
	// Runs are the surface's runs: one per seed under contested, the
	// battery alone under validate.
	Runs []SeedRun
	// EnvMissing, when set, says the fault layer could not run: every leg
	// at this level is INCONCLUSIVE-env.
	EnvMissing string
	// Capabilities is what the machine has: a NOT-RUN leg whose surface
	// needs a missing one, or whose test skipped for one, names it.
	Capabilities capability.Matrix
}

// Judge is the one judge of a surface's contract: `mage contested`,
// validate and program-gate all call it, so the same evidence gets the
// same verdict wherever it was produced. Each leg of s gets one of the ten
// verdicts (verdict.Assign over its runs), or NOT-AT-LEVEL when the
// registry does not run it at ev.Level and no run of it was attempted; the
// surface gets the roll-up of verdict.Surface, which leaves NOT-AT-LEVEL
// legs out.
//
// A leg's evidence in one run: the records that name it, the tests that
// wrote them, and the failing, passing or skipped tests whose last name
// element is the lever (a test that failed before arming, or ran without
// arming). A run failed on its own account when one of its tests failed
// for its own reason (not merely an unfired fault), when a record says its
// test had already failed, or when an oracle in a record was violated.
func Judge(s registry.Surface, ev Evidence) ([]verdict.Leg, verdict.Contract) {
	level := max(ev.Level, 1)
	var legs []verdict.Leg
	var vs []verdict.Verdict
	for _, lever := range s.Legs {
		l := judgeLeg(s, lever, level, ev)
		legs = append(legs, l)
		vs = append(vs, l.Verdict)
	}
	return legs, verdict.Surface(vs)
}

// building is a leg while the judge gathers its evidence.
type building verdict.Leg

func judgeLeg(s registry.Surface, lever string, level int, ev Evidence) verdict.Leg {
	leg := verdict.Leg{Lever: lever}
	lr := (*building)(&leg)
	if _, restricted := s.Levels[lever]; restricted {
		lr.Levels = s.LegLevels(lever)
	}
	dir := s.Package
	if dir == "" {
		dir = "./..."
	}
	attempted := false
	for _, run := range ev.Runs {
		attempted = lr.addRun(run, lever, dir, level) || attempted
	}
	sort.Strings(lr.Tests)
	lr.Thin = lr.Fired < verdict.CoverageFloor
	lr.Schedules = distinctSchedules(lr.Runs)
	lr.decide(s, level, ev, attempted)
	return leg
}

// addRun adds the leg's evidence from one run: its records (armed, fired,
// oracles), its own failures and, for the first failure or unfired fault,
// the replay (at level). It reports whether the run attempted the leg.
func (lr *building) addRun(run SeedRun, lever, dir string, level int) bool {
	vr := verdict.Run{Seed: run.Seed}
	tests := legTests(run, lever)
	vr.Attempted = len(tests) > 0
	lr.addRecords(&vr, run.Records)
	for _, t := range sortedKeys(tests) {
		if !slices.Contains(lr.Tests, t) {
			lr.Tests = append(lr.Tests, t)
		}
		text, how := ownFailure(run, lever, t)
		if how != failedOwn {
			if how == beforeArming {
				if vr.FailedBeforeArming == "" {
					vr.FailedBeforeArming = text
				}
				if lr.Replay == "" {
					lr.Replay = replay(run, lever, t, dir, level)
					lr.FailedRun = seedOf(run, lever, t)
				}
			}
			continue
		}
		vr.Failed = true
		if vr.FailureText == "" {
			vr.FailureText = text
		}
		vr.Reproduced = run.Rerun
		if again, ok := run.RerunTests[t]; ok {
			vr.Reproduced = &again
		}
		if lr.Replay == "" {
			lr.Replay = replay(run, lever, t, dir, level)
			lr.FailedRun = seedOf(run, lever, t)
		}
	}
	if vr.Fired < vr.Armed && lr.Replay == "" {
		for _, t := range sortedKeys(tests) {
			lr.Replay = replay(run, lever, t, dir, level)
			lr.FailedRun = seedOf(run, lever, t)
			break
		}
	}
	lr.Armed += vr.Armed
	lr.Fired += vr.Fired
	lr.Oracles = append(lr.Oracles, vr.Oracles...)
	lr.Runs = append(lr.Runs, vr)
	return vr.Attempted
}

// addRecords counts the leg's records of one run into vr (armed, fired,
// each test's oracles, the tests that reported none, the schedules they
// ran by) and keeps the evidence of an unfired fault, or else the first,
// for lr.
func (lr *building) addRecords(vr *verdict.Run, records []faultrecord.Record) {
	oracleOf := map[string]bool{} // test → its oracles were taken
	var digests []string
	for _, r := range records {
		if r.Leg != lr.Lever {
			continue
		}
		if r.Schedule != nil && r.Schedule.Digest != "" && !slices.Contains(digests, r.Schedule.Digest) {
			digests = append(digests, r.Schedule.Digest)
		}
		if vr.Seed == 0 {
			vr.Seed = r.Seed
		}
		vr.Armed++
		if r.Fired {
			vr.Fired++
		}
		if !oracleOf[r.Test] {
			// Every record of one test's leg carries the same oracles.
			oracleOf[r.Test] = true
			vr.Oracles = append(vr.Oracles, r.Oracles...)
			if len(r.Oracles) == 0 {
				vr.Unchecked = append(vr.Unchecked, r.Test)
			}
		}
		if lr.Injector == "" || !r.Fired {
			lr.Injector, lr.Victim = r.Evidence.Injector, r.Evidence.Victim
		}
	}
	slices.Sort(digests)
	vr.Schedule = strings.Join(digests, "+")
	if len(vr.Unchecked) == len(oracleOf) {
		vr.Unchecked = nil // no test reported an oracle: the plain PARTIAL-surface
	}
	sort.Strings(vr.Unchecked)
}

// decide gives the leg its verdict and reason from its runs, at level.
func (lr *building) decide(s registry.Surface, level int, ev Evidence, attempted bool) {
	levels := joinLevels(s.LegLevels(lr.Lever))
	if !s.RunsAt(lr.Lever, level) {
		if !attempted {
			lr.Verdict = verdict.NotAtLevel
			lr.Reason = fmt.Sprintf("runs only at levels %s (this run: level %d)", levels, level)
			lr.Runs, lr.Thin = nil, false
			return
		}
		// The test ran it anyway: its evidence is judged, and the mismatch
		// is said, since the registry and the test disagree.
		if missing := neededMissing(s, ev); len(missing) > 0 {
			lr.notRunForNeeds(s, missing, attempted)
			return
		}
		lr.Verdict, lr.Reason = verdict.Assign(lr.Runs, s.Budget.Hardening.Seeds)
		lr.Reason += fmt.Sprintf("; the registry runs it only at levels %s, yet it ran at level %d: make the test skip it here, or add level %d to its levels", levels, level, level)
		return
	}
	if missing := neededMissing(s, ev); len(missing) > 0 {
		lr.notRunForNeeds(s, missing, attempted)
		return
	}
	if ev.EnvMissing != "" {
		lr.Runs = []verdict.Run{{EnvMissing: ev.EnvMissing}}
	}
	lr.Verdict, lr.Reason = verdict.Assign(lr.Runs, s.Budget.Hardening.Seeds)
	if lr.Verdict == verdict.NotRun {
		lr.Reason = fmt.Sprintf("declared at level %d, but no run of it was attempted", level)
		if missing := lacked(s, lr.Lever, ev); len(missing) > 0 {
			var says []string
			for _, c := range missing {
				lr.Missing = append(lr.Missing, string(c.Name))
				says = append(says, c.Missing())
			}
			lr.Reason = "cannot run here: " + strings.Join(says, "; ")
		} else if skipped := skippedTests(ev.Runs, lr.Lever); len(skipped) > 0 {
			lr.Reason += fmt.Sprintf(": its test %s was skipped (make it run at level %d, or restrict the leg with levels in the registry)", strings.Join(skipped, ", "), level)
		}
	}
}

// neededMissing returns the capabilities the surface's registry needs names
// that the machine's probe found missing, its matrix row for each.
func neededMissing(s registry.Surface, ev Evidence) []capability.Capability {
	var out []capability.Capability
	for _, n := range s.Needs {
		c, ok := ev.Capabilities.Get(capability.Name(n))
		if ok && !c.Present && !slices.ContainsFunc(out, func(o capability.Capability) bool { return o.Name == c.Name }) {
			out = append(out, c)
		}
	}
	return out
}

// notRunForNeeds makes the leg NOT-RUN because its surface needs a
// capability this machine lacks. The registry's needs say the legs cannot
// be run without it, so whatever a test did without it (it may not check,
// or check something else) is no evidence of the claim: it is not judged,
// and the leg can never count toward a GREEN surface or a certificate.
func (lr *building) notRunForNeeds(s registry.Surface, missing []capability.Capability, attempted bool) {
	var says []string
	lr.Missing = nil
	for _, c := range missing {
		lr.Missing = append(lr.Missing, string(c.Name))
		says = append(says, c.Missing())
	}
	lr.Verdict = verdict.NotRun
	lr.Reason = fmt.Sprintf("cannot run here: surface %s needs %s (registry needs) and this machine lacks it: %s",
		s.ID, strings.Join(lr.Missing, ", "), strings.Join(says, "; "))
	if attempted {
		lr.Reason += fmt.Sprintf("; its test ran anyway (%d of %d armed faults fired), and that run is not judged: a test of a leg that needs %s should call capability.Require or skip without it",
			lr.Fired, lr.Armed, strings.Join(lr.Missing, ", "))
	}
	lr.Runs, lr.Thin, lr.Oracles = nil, false, nil
}

// lacked returns the capabilities a leg that did not run lacked: those its
// surface needs (registry needs) that the machine is missing, and those its
// tests said they lacked when they skipped, the machine's row when it has
// one (what was looked at, and the command that provides it).
func lacked(s registry.Surface, lever string, ev Evidence) []capability.Capability {
	var names []capability.Name
	for _, n := range s.Needs {
		if ev.Capabilities.Lacks(capability.Name(n)) {
			names = append(names, capability.Name(n))
		}
	}
	for _, run := range ev.Runs {
		for _, t := range sortedKeys(run.Lacked) {
			if !isLegTest(t, lever) && !slices.Contains(s.Tests, t) && !slices.ContainsFunc(s.Tests, func(p string) bool { return strings.HasPrefix(t, p+"/") }) {
				continue
			}
			for _, n := range run.Lacked[t] {
				names = append(names, capability.Name(n))
			}
		}
	}
	var out []capability.Capability
	for _, n := range names {
		if slices.ContainsFunc(out, func(c capability.Capability) bool { return c.Name == n }) {
			continue
		}
		c, ok := ev.Capabilities.Get(n)
		if !ok {
			c = capability.Capability{Name: n, Provide: capability.Provide(n)}
		}
		out = append(out, c)
	}
	return out
}

// distinctSchedules counts the schedules the attempted runs ran: one per
// distinct digest, and one per run that recorded none.
func distinctSchedules(runs []verdict.Run) int {
	seen := map[string]bool{}
	n := 0
	for _, r := range runs {
		if !r.Attempted {
			continue
		}
		if r.Schedule == "" || !seen[r.Schedule] {
			n++
		}
		seen[r.Schedule] = r.Schedule != ""
	}
	return n
}

// legTests returns the tests that belong to lever in one run: those whose
// records name it, and the tests that ran (passed or failed) whose last
// name element is the lever's.
func legTests(run SeedRun, lever string) map[string]bool {
	tests := map[string]bool{}
	for _, r := range run.Records {
		if r.Leg == lever {
			tests[r.Test] = true
		}
	}
	for t := range run.Failures {
		if isLegTest(t, lever) {
			tests[t] = true
		}
	}
	for _, t := range run.Ran {
		if isLegTest(t, lever) {
			tests[t] = true
		}
	}
	return tests
}

func isLegTest(test, lever string) bool { return path.Base(test) == lever }

// legFailure is how a leg's test failed in one run.
type legFailure int

const (
	passed       legFailure = iota
	failedOwn               // failed on its own account: the claim under fault
	beforeArming            // failed with no fault armed and no oracle's violation: its setup's
)

// ownFailure says whether test failed in run, and how: its failure output
// when it has one, else the oracle or the record that says so (records
// alone, as program-gate has them). A failure no fault record names (a
// record is written for each armed fault, faultrecord.Record) is the
// leg's own when an oracle said the promise broke: it broke without a
// fault. Else it is beforeArming: its setup failed, or it ended before its
// first Arm, which is evidence about the setup, not the claim.
func ownFailure(run SeedRun, lever, test string) (string, legFailure) {
	out, failed := failedWithin(run, test)
	own := testFailedOwn(run, lever, test)
	if failed {
		text := reasonWithin(run, test, out)
		switch {
		case own:
			return text, failedOwn
		case !hasRecord(run, test) && (violated(text) || violated(out)):
			return text, failedOwn
		case !hasRecord(run, test):
			return text, beforeArming
		}
	}
	for _, r := range run.Records {
		if r.Leg != lever || r.Test != test {
			continue
		}
		for _, o := range r.Oracles {
			if o.Result == "violated" {
				if failed {
					return reasonWithin(run, test, out), failedOwn
				}
				if strings.Contains(o.Detail, o.Name) {
					return o.Detail, failedOwn
				}
				return fmt.Sprintf("oracle %s violated: %s", o.Name, o.Detail), failedOwn
			}
		}
	}
	if own {
		return "the test had failed on its own account when its leg wrote the record (test_failed)", failedOwn
	}
	return "", passed
}

// violated says whether an oracle's verdict in text found the promise
// broken: the oracles print "oracle <name>: VIOLATED".
func violated(text string) bool { return strings.Contains(text, "VIOLATED") }

func testFailedOwn(run SeedRun, lever, test string) bool {
	for _, r := range run.Records {
		if r.Leg == lever && r.Test == test && r.TestFailed {
			return true
		}
	}
	return false
}

func hasRecord(run SeedRun, test string) bool {
	for _, r := range run.Records {
		if r.Test == test {
			return true
		}
	}
	return false
}

// failedWithin returns the failure output of test or any of its subtests.
func failedWithin(run SeedRun, test string) (string, bool) {
	var b strings.Builder
	failed := false
	for _, t := range sortedKeys(run.Failures) {
		if t == test || strings.HasPrefix(t, test+"/") {
			failed = true
			b.WriteString(run.Failures[t])
		}
	}
	return b.String(), failed
}

// reasonWithin is why test (or one of its subtests) failed in run: the
// failure it reported (battery.Test.Failure: its t.Error and t.Fatal
// messages, or its panic), else the first failure line of its output.
func reasonWithin(run SeedRun, test, out string) string {
	for _, t := range sortedKeys(run.Reasons) {
		if t == test || strings.HasPrefix(t, test+"/") {
			if r := Reason(run.Reasons[t], ""); r != "" {
				return r
			}
		}
	}
	return FirstFailureLine(out)
}

// Reason is a failure's reason for a summary line: the failure a test
// reported (battery.Test.Failure), without the leg's unfired-fault report
// when it reported more than that, clipped; else the first failure line of
// its output.
func Reason(failure, output string) string {
	var keep []string
	for _, l := range strings.Split(strings.TrimSpace(failure), "\n") {
		if l != "" && !strings.Contains(l, "ARMED BUT DID NOT FIRE") {
			keep = append(keep, l)
		}
	}
	if len(keep) == 0 && strings.TrimSpace(failure) != "" {
		keep = strings.Split(strings.TrimSpace(failure), "\n")
	}
	if len(keep) > 0 {
		return clip(strings.Join(keep[:min(len(keep), 3)], " | "))
	}
	if output == "" {
		return ""
	}
	return FirstFailureLine(output)
}

// seedOf is the seed test ran lever with: the run's, its record's, or
// the one its leg recorded when it started.
func seedOf(run SeedRun, lever, test string) int64 {
	if run.Seed != 0 {
		return run.Seed
	}
	for _, r := range run.Records {
		if r.Leg == lever && r.Test == test {
			return r.Seed
		}
	}
	if s, ok := legstart.Of(run.Starts, "", test); ok {
		return s.Seed
	}
	return 0
}

// replay is the command that reruns test with the seed and level it ran
// with: its record's (or its start record's) when the run had no seed of
// its own (a battery).
func replay(run SeedRun, lever, test, dir string, level int) string {
	if run.Seed == 0 {
		for _, r := range run.Records {
			if r.Leg == lever && r.Test == test && r.Replay != "" {
				return r.Replay
			}
		}
		if s, ok := legstart.Of(run.Starts, "", test); ok && s.Replay != "" {
			return s.Replay
		}
	}
	return seed.Seed(seedOf(run, lever, test)).Replay(level, dir, test)
}

func skippedTests(runs []SeedRun, lever string) []string {
	var out []string
	for _, run := range runs {
		for _, t := range run.Skipped {
			if isLegTest(t, lever) && !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	sort.Strings(out)
	return out
}

// FirstFailureLine is the line of a test's output that says why it failed:
// the first file:line message that is not the leg's own unfired-fault
// report, else the first line that is not go test's framing.
func FirstFailureLine(out string) string {
	fallback := ""
	for _, line := range strings.Split(out, "\n") {
		l := strings.TrimSpace(line)
		if strings.Contains(l, ".go:") && !strings.Contains(l, "ARMED BUT DID NOT FIRE") && !strings.Contains(l, "contested: leg ") {
			return clip(l)
		}
		if fallback == "" && l != "" && !isFraming(l) {
			fallback = clip(l)
		}
	}
	if fallback != "" {
		return fallback
	}
	return "see the test output"
}

func isFraming(l string) bool {
	for _, p := range []string{"=== ", "--- ", "# ", "FAIL", "PASS", "ok ", "exit status", "coverage:"} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}

func clip(l string) string {
	if len(l) > 300 {
		return l[:300] + "…"
	}
	return l
}

func joinLevels(ls []int) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = fmt.Sprint(l)
	}
	return strings.Join(parts, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
