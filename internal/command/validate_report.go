package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/fatih/color"

	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/capability"
	"github.com/contested/contested/internal/gate"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gate/ladder"
	"github.com/contested/contested/internal/gate/report"
	"github.com/contested/contested/internal/rundir"
	"github.com/contested/contested/internal/terminal"
)

// summarize prints the six phases, the surfaces, the battery, the ladder
// and the registry's problems.
func (v *validation) summarize(res *battery.Result, verified *gate.Report, judged []*contract.Result) {
	fmt.Fprintln(v.out)
	verified.WriteSummary(v.out)
	note := ""
	switch {
	case v.shard != nil:
		note = "shard " + v.shard.spec.String() + ", a share of the battery: NOT-RUN legs do not count against it; program-gate -merge judges the union"
	case !v.whole:
		note = "a selected battery: NOT-RUN legs do not count against it"
	}
	writeSurfaceSummary(v.out, judged, v.env.Level, note)
	writeReusedSummary(v.out, v.rep.Surfaces, v.reuse.rep)
	writeCapabilities(v.out, v.caps, v.reg)
	writeBatterySummary(v.out, res, v.rep.BatteryFailures)
	writeLadderSummary(v.out, v.rep)
	if len(v.rep.Registry) > 0 {
		fmt.Fprintf(v.out, "\n%s\n", bold("registry"))
		for _, line := range v.rep.Registry {
			fmt.Fprintf(v.out, "  %s\n", terminal.Escape(line))
		}
	}
}

// finish writes the reports and validate.json and returns the verdict.
func (v *validation) finish(res *battery.Result, verified *gate.Report, judged []*contract.Result, contracts map[string]*contract.Result) error {
	rep, root := v.rep, v.env.ResultsDir
	if v.shard == nil && v.whole && v.noise == nil && len(v.reuse.pkgs) == 0 {
		// A battery beside a neighbour ran slower than its own pace: its
		// times would mislead the shards' split and the next comparison.
		// One that reused packages has no times for them, and the split
		// keeps the last full run's.
		saveTimings(root, v.out, res)
	}
	recs, _ := contract.ReadRecords(v.faultDir())
	appendHistory(context.Background(), root, v.reg.Guard.CanonicalDatabases, "validate", rep.RunID, rep.Shard, res, recs, rep.Revision, v.out)
	writeReports(root, report.Page{Title: "contested validate", RunID: rep.RunID, Layer: rep.Layer, Green: rep.Green,
		Reasons: rep.Reasons, Gate: verified, Battery: res, Surfaces: judged, Level: v.env.Level, Plain: rep.BatteryFailures,
		Ladder: rep.Ladder, Contracts: contractList(contracts), Capacity: rep.Capacity,
		Records: recs, History: reportHistory(context.Background(), root, v.reg.Guard.CanonicalDatabases, v.out)}, v.out)
	if rep.Battery != nil && len(v.reuse.pkgs) > 0 {
		b := *rep.Battery
		b.Packages = append(slices.Clone(b.Packages), v.reuse.packages()...)
		rep.Battery = &b
	}
	classes := map[string]string{}
	for _, s := range v.reg.Surfaces {
		classes[s.ID] = s.Class
	}
	v.reuse.write(context.Background(), root, v.reg.Guard.CanonicalDatabases, v.env.Environ(), rep, res, judged, classes, v.out)
	rep.Confirming, rep.Unconfirmed = false, unconfirmed(rep.BatteryFailures)
	v.writeFindings(res)
	if path, err := saveJSON(root, rundir.ValidateJSON, rep); err != nil {
		notSaved(v.out, "validate", path, err)
	} else {
		fmt.Fprintf(v.out, "validate: saved %s\n", path)
	}
	publishCI(v.env.ModuleRoot, rep.ciRun(), v.out)
	if rep.Green {
		fmt.Fprintf(v.out, "\nvalidate: %s in %s%s\n", color.GreenString("GREEN"), rep.Took.Round(time.Second), v.reuse.rep.verdictNote())
		return nil
	}
	state := ""
	if len(rep.Unconfirmed) > 0 {
		state = fmt.Sprintf(" (%s unconfirmed: the ladder did not finish walking them)", count(len(rep.Unconfirmed), "failure"))
	}
	fmt.Fprintf(v.out, "\nvalidate: %s%s: %s\n", color.RedString("RED"), state, terminal.Escape(strings.Join(rep.Reasons, "; ")))
	return fmt.Errorf("%w: %s", ErrRed, strings.Join(rep.Reasons, "; "))
}

// writeBatterySummary prints the battery's outcome: every failure with
// its reason (what the test reported, never a log line); the arbitration
// below gives each one's owner and action.
func writeBatterySummary(out io.Writer, res *battery.Result, failures []ladder.Plain) {
	fmt.Fprintf(out, "\n%s\n", bold("battery"))
	if res.OK() {
		fmt.Fprintf(out, "  %s: %s (%s)\n", color.GreenString("passed"), res.Tally(), res.Elapsed.Round(time.Second))
		return
	}
	for _, p := range failures {
		what := "package " + p.Package
		switch {
		case p.Test != "":
			what = p.Package + " " + p.Test
		case p.What != "":
			what += ": " + p.What
		}
		fmt.Fprintf(out, "  %s %s\n      %s\n", color.RedString("FAIL"), terminal.Escape(what), terminal.Escape(p.FirstLine))
		if p.Test == "" {
			fmt.Fprintf(out, "      owner %s; action: %s\n", terminal.Escape(p.Owner), terminal.Escape(p.Action))
		}
	}
}

// writeSurfaceSummary prints each registered surface's contract verdict
// from this battery, leg by leg.
func writeSurfaceSummary(out io.Writer, judged []*contract.Result, level int, note string) {
	fmt.Fprintf(out, "\n%s (level %d; the rules of mage contested; one battery is one seed, so a pass is PASS-smoke)\n", bold("surfaces"), level)
	if len(judged) == 0 {
		fmt.Fprintf(out, "  no registered surface ran\n")
		return
	}
	for _, r := range judged {
		fmt.Fprintf(out, "  %-22s %s\n", terminal.Escape(r.Surface), paintContract(r.Contract))
		for _, l := range r.Legs {
			fmt.Fprintf(out, "      %-17s %-30s %s\n", terminal.Escape(l.Lever), paintVerdict(l.Verdict), terminal.Escape(l.Reason))
			if d := l.Decision; d != nil {
				fmt.Fprintf(out, "      %-17s arbitrated: %s\n", "", terminal.Escape(d.Say()))
			}
			if l.Replay != "" && !l.Verdict.Pass() {
				fmt.Fprintf(out, "      %-17s replay: %s\n", "", terminal.Escape(l.Replay))
			}
		}
	}
	if note != "" {
		fmt.Fprintf(out, "  (%s)\n", note)
	}
}

// validateReasons is validate's verdict: the reasons it is not GREEN, none
// when it is. GREEN needs the battery to pass, the six phases to certify,
// every registered leg that ran to pass (no FAIL, INCONCLUSIVE or PARTIAL;
// in a whole battery no NOT-RUN either) and the registry's tests to exist.
func validateReasons(res *battery.Result, verified *gate.Report, judged []*contract.Result, whole bool, registryProblems []string, caps capability.Matrix) []string {
	var out []string
	if !res.OK() {
		out = append(out, "battery failed"+batteryFailures(res))
	}
	for _, p := range res.TimedOut() {
		out = append(out, ladder.TimeoutReason(p))
	}
	if !verified.Certified {
		out = append(out, "gate refused: "+failedPhases(verified))
	}
	out = append(out, surfaceReasons(judged, whole, caps)...)
	if len(registryProblems) > 0 {
		out = append(out, "registry names tests that do not exist")
	}
	return out
}

// batteryFailures says, after "battery failed", what failed: the failing
// tests and subtests (the most specific, a contract's leg rather than its
// parent) and the packages they are in, then each package that failed
// outside its tests and why, as in " (1 test and 2 subtests in 1 package;
// 1 package failed outside its tests: example.com/m/broken does not
// build)".
func batteryFailures(res *battery.Result) string {
	var parts []string
	if leaves := contract.LeafFailures(res); len(leaves) > 0 {
		// A failing leg is a subtest: counted as such, never as a test
		// of its own, so that the count's unit is what it counts.
		pkgs := map[string]bool{}
		tests, subtests := 0, 0
		for _, t := range leaves {
			pkgs[t.Package] = true
			if strings.Contains(t.Name, "/") {
				subtests++
			} else {
				tests++
			}
		}
		var what []string
		if tests > 0 {
			what = append(what, count(tests, "test"))
		}
		if subtests > 0 {
			what = append(what, count(subtests, "subtest"))
		}
		parts = append(parts, fmt.Sprintf("%s in %s", strings.Join(what, " and "), count(len(pkgs), "package")))
	}
	if failed := res.FailedPackages(); len(failed) > 0 {
		var why []string
		for _, p := range failed {
			why = append(why, p.Name+" "+ladder.PlainPackage(p, testsRan(res, p.Name)).What)
		}
		their := "their"
		if len(failed) == 1 {
			their = "its"
		}
		parts = append(parts, fmt.Sprintf("%s failed outside %s tests: %s", count(len(failed), "package"), their, strings.Join(why, "; ")))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// count is n and noun, the noun plural unless n is 1.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// surfaceReasons says which surfaces keep validate from GREEN, and, for
// legs that could not run for a missing capability, which one and the
// command that provides it.
func surfaceReasons(judged []*contract.Result, whole bool, caps capability.Matrix) []string {
	var out []string
	for _, r := range judged {
		var legs, missing []string
		for _, l := range r.Blocking(whole) {
			legs = append(legs, l.Lever+" "+string(l.Verdict))
			for _, n := range l.Missing {
				if !slices.Contains(missing, n) {
					missing = append(missing, n)
				}
			}
		}
		if len(legs) == 0 {
			continue
		}
		reason := fmt.Sprintf("surface %s is %s (%s)", r.Surface, r.Contract, strings.Join(legs, ", "))
		for _, n := range missing {
			c, ok := caps.Get(capability.Name(n))
			if !ok {
				c = capability.Capability{Name: capability.Name(n), Provide: capability.Provide(capability.Name(n))}
			}
			reason += ": " + c.Missing()
		}
		out = append(out, reason)
	}
	return out
}

// writeReports writes the run in every report format (report.Formats:
// fault/fault-report.html for people, battery/junit.xml for CI systems
// when a battery ran), and names what it saved and, apart, what it could
// not save. Under a CI the formats a CI reads carry each failure's owner
// and action (GitLab shows them in its test report); outside one they do
// not.
func writeReports(root rundir.Dir, p report.Page, out io.Writer) {
	p.Visualizations = report.Visualizations(root.String())
	if p.Degraded == nil {
		p.Degraded = report.Degraded(root.String())
	}
	p.CI = ciSystem().Any()
	var saved []string
	for _, f := range report.Formats {
		if path, err := saveReport(root, f, p); errors.Is(err, report.ErrNothingToShow) {
			continue
		} else if err != nil {
			notSaved(out, "report", path, err)
		} else {
			saved = append(saved, path)
		}
	}
	if len(saved) > 0 {
		fmt.Fprintf(out, "reports: %s\n", strings.Join(saved, ", "))
	}
}

// saveReport renders p in format f and saves it at its path under root.
func saveReport(root rundir.Dir, f report.Format, p report.Page) (string, error) {
	var b strings.Builder
	if err := f.Write(&b, p); err != nil {
		return root.Join(f.Path()), fmt.Errorf("render %s: %w", f.Path(), err)
	}
	return saveArtifact(root, f.Path(), []byte(b.String()))
}

func contractList(m map[string]*contract.Result) []*contract.Result {
	var out []*contract.Result
	for _, r := range m {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Surface < out[j].Surface })
	return out
}
