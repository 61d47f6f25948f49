package mutants

import (
	"fmt"
	"io"
	"math"
	"path"
	"strings"
	"time"

	"github.com/fatih/color"
)

// PackageResult is one package's mutation run.
type PackageResult struct {
	Target
	Summary
	// Rate is the package's kill rate of covered mutants, in percent; nil
	// when no covered mutant was tried.
	Rate *float64 `json:"kill_rate"`
	// Coverage is how long gremlins' coverage run took; each mutant's
	// tests were bounded to it times the timeout coefficient.
	Coverage time.Duration `json:"coverage_ns"`
	Took     time.Duration `json:"took_ns"`
	// Error says why the package could not be measured (its tests fail
	// with no mutation, it does not build); its counts are then empty.
	Error string `json:"error,omitempty"`
}

// Report is a mutants run, saved as mutants/mutants.json.
type Report struct {
	Packages []PackageResult `json:"packages"`
	// Totals and Rate are over every package.
	Totals Counts   `json:"totals"`
	Rate   *float64 `json:"kill_rate"`
	// Threshold is the registry's [mutants] threshold; 0 for none.
	Threshold float64 `json:"threshold"`
	Passed    bool    `json:"passed"`
	// Reasons say why the run is not passed.
	Reasons []string `json:"reasons,omitempty"`
	// Stale are accepted entries for files that were mutated that matched
	// no survivor: a test now kills the mutant, or the code moved; update
	// or remove them.
	Stale              []Accepted    `json:"stale_accepted,omitempty"`
	Workers            int           `json:"workers"`
	TimeoutCoefficient int           `json:"timeout_coefficient"`
	Mutations          []string      `json:"mutations"`
	Took               time.Duration `json:"took_ns"`
}

// Judge totals the packages and decides: the run passes when every package
// was measured and, with a threshold, the kill rate of covered mutants
// over all packages is at least the threshold. A threshold with no covered
// mutant tried at all is missed: nothing shows the tests catch anything.
func (r *Report) Judge() {
	r.Totals, r.Reasons = Counts{}, nil
	for _, p := range r.Packages {
		r.Totals.add(p.Counts)
		if p.Error != "" {
			r.Reasons = append(r.Reasons, fmt.Sprintf("%s could not be measured: %s", p.Dir, firstLine(p.Error)))
		}
	}
	r.Rate = nil
	rate, ok := r.Totals.Rate()
	if ok {
		r.Rate = &rate
	}
	switch {
	case r.Threshold <= 0:
	case !ok:
		r.Reasons = append(r.Reasons, fmt.Sprintf("no covered mutant was tried, so nothing shows the tests catch a change (threshold %s%%)", pct(r.Threshold)))
	case rate < r.Threshold:
		r.Reasons = append(r.Reasons, fmt.Sprintf("kill rate %s%% of covered mutants is below the threshold %s%% (%d survived, %d timed out)", pct(rate), pct(r.Threshold), r.Totals.Survived, r.Totals.TimedOut))
	}
	r.Passed = len(r.Reasons) == 0
}

// stale returns the accepted entries for the targets' files that matched
// no survivor.
func stale(accepted []Accepted, used []bool, targets []Target) []Accepted {
	var out []Accepted
	for i, a := range accepted {
		if i < len(used) && used[i] {
			continue
		}
		for _, t := range targets {
			if path.Dir(a.File) == path.Clean(strings.TrimPrefix(t.Dir, "./")) {
				out = append(out, a)
				break
			}
		}
	}
	return out
}

// writePackageLine prints a package's figures in one line.
func writePackageLine(w io.Writer, p PackageResult) {
	if p.Error != "" {
		fmt.Fprintf(w, "mutants: %s: %s: %s\n", p.Dir, color.RedString("NOT MEASURED"), firstLine(p.Error))
		return
	}
	fmt.Fprintf(w, "mutants: %s: %s in %s\n", p.Dir, figures(p.Counts, p.Rate), p.Took.Round(time.Second))
}

func figures(c Counts, rate *float64) string {
	r := "no covered mutant tried"
	if rate != nil {
		r = "kill rate " + pct(*rate) + "%"
	}
	return fmt.Sprintf("%d killed, %d survived, %d timed out, %d not covered, %d not viable, %d accepted: %s",
		c.Killed, c.Survived, c.TimedOut, c.NotCovered, c.NotViable, c.Accepted, r)
}

// WriteSummary prints the run for people: each package's figures, its
// survivors with file:line:column and mutation, the timed-out and accepted
// mutants, stale accepted entries, and the verdict.
func (r *Report) WriteSummary(w io.Writer, registryPath string) {
	fmt.Fprintf(w, "\n%s (kill rate = (killed + timed out) / (killed + survived + timed out): covered mutants, accepted survivors left out)\n", color.New(color.Bold).Sprint("mutants"))
	for _, p := range r.Packages {
		fmt.Fprintf(w, "  %s\n", p.Dir)
		if p.Error != "" {
			fmt.Fprintf(w, "      %s\n%s", color.RedString("not measured"), indent(p.Error, "      "))
			continue
		}
		fmt.Fprintf(w, "      %s\n", figures(p.Counts, p.Rate))
		for _, m := range p.Survivors {
			fmt.Fprintf(w, "      %s %s %s %s\n          %s\n", color.RedString("survived"), m.Where(), m.Mutation, m.Change, m.Code)
		}
		for _, m := range p.TimedOut {
			fmt.Fprintf(w, "      %s %s %s %s\n          %s\n", color.YellowString("timed out"), m.Where(), m.Mutation, m.Change, m.Code)
		}
		for _, m := range p.Accepted {
			fmt.Fprintf(w, "      accepted %s %s %s (%s:%d: %s)\n", m.Where(), m.Mutation, m.Change, registryPath, m.RegistryLine, m.Reason)
		}
	}
	for _, a := range r.Stale {
		fmt.Fprintf(w, "  %s %s:%d accepts %s, which did not survive this run; remove the entry or fix its place\n", color.YellowString("stale:"), registryPath, a.At, a.Where())
	}
	threshold := "no threshold ([mutants] threshold)"
	if r.Threshold > 0 {
		threshold = "threshold " + pct(r.Threshold) + "%"
	}
	fmt.Fprintf(w, "  total: %s; %s\n", figures(r.Totals, r.Rate), threshold)
}

// pct prints a percentage with at most two decimals, rounded down, so a
// rate just below a threshold never prints as the threshold.
func pct(f float64) string {
	s := fmt.Sprintf("%.2f", math.Floor(f*100)/100)
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+prefix) + "\n"
}
