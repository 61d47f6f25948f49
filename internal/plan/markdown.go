package plan

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/contested/contested/internal/markdown"
)

// maxFileRows is how many touched files plan.md lists; plan.json has all.
const maxFileRows = 60

// WriteMarkdown renders the plan as plan.md: Markdown that reads on a
// code host as it is. Every string that came from the registry, the
// repository or the history is escaped (internal/markdown), so none of it
// becomes markup.
func WriteMarkdown(w io.Writer, p *Plan) error {
	var b strings.Builder
	t, code := markdown.Text, markdown.Code
	title := "change-scoped"
	if p.Change.Mode == ModeProject {
		title = "project-wide"
	}
	fmt.Fprintf(&b, "# Test plan (%s): %s\n\n", title, t(p.Module))
	fmt.Fprintf(&b, "Plan sha256 %s, made %s from %s.", code(p.SHA256), p.Made.Format("2006-01-02 15:04 UTC"), code(p.Registry))
	if p.Change.Mode == ModeChange {
		fmt.Fprintf(&b, " Compared with %s, %s.", code(short(p.Change.Base)), t(p.Change.BaseWhy))
	}
	if p.Change.Head != "" {
		dirty := ""
		if p.Change.Dirty {
			dirty = ", with changes not committed yet"
		}
		fmt.Fprintf(&b, " Head %s%s.", code(short(p.Change.Head)), dirty)
	}
	b.WriteString("\n\n")
	if p.EarlyExit != "" {
		fmt.Fprintf(&b, "**No plan needed.** %s\n\n", t(p.EarlyExit))
	}

	b.WriteString("## 1. Blast radius\n\n")
	fmt.Fprintf(&b, "%s\n\n", t(p.Radius.Summary))
	if len(p.Radius.Files) > 0 {
		b.WriteString("| file | kind | packages (route) | surfaces | lease, fence or lock code |\n| --- | --- | --- | --- | --- |\n")
		for i, f := range p.Radius.Files {
			if i == maxFileRows {
				fmt.Fprintf(&b, "| and %d more files (plan.json lists them) | | | | |\n", len(p.Radius.Files)-maxFileRows)
				break
			}
			lease := ""
			if f.Lease != "" {
				lease = "yes (" + markdown.CellCode(f.Lease) + ")"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", markdown.CellCode(f.Path), f.Kind, markdown.List(clip(withRoutes(f), 3)), markdown.List(f.Surfaces), lease)
		}
		b.WriteString("\n")
	}
	if p.EarlyExit != "" {
		return write(w, b.String())
	}

	b.WriteString("## 2. Claims at risk\n\n")
	b.WriteString("| claim | category | text | legs at this level | tests | how the change reaches it |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, c := range p.Claims {
		legs := markdown.List(c.Legs)
		if len(c.NotAtLevel) > 0 {
			legs += " (not at this level: " + markdown.List(c.NotAtLevel) + ")"
		}
		cat := string(c.Category)
		if c.Serious {
			cat += " (serious)"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", t(c.Key), cat, t(c.Text), orNone(legs), markdown.List(c.Tests), t(strings.Join(c.Why, "; ")))
	}
	b.WriteString("\n")
	for _, c := range p.Claims {
		if c.Implicit {
			fmt.Fprintf(&b, "- %s: category %s, %s. %s.\n", t(c.Key), c.Category, t(c.Inferred), t(strings.ToUpper(c.Split[:1])+c.Split[1:]))
		}
	}
	b.WriteString("\n## 3. Hypotheses\n\n")
	if len(p.Hypotheses) == 0 {
		b.WriteString("No pitfall of the catalog applies to the claims at risk.\n\n")
	} else {
		b.WriteString("| id | claim | pitfall | how it could fail | levers that can force it | models that can check it |\n| --- | --- | --- | --- | --- | --- |\n")
		for _, h := range p.Hypotheses {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", h.ID, t(h.Claim), t(h.Title), t(h.Text), orNone(markdown.List(h.Levers)), orNone(markdown.List(h.Models)))
		}
		b.WriteString("\n")
	}
	b.WriteString("Not applicable:\n\n")
	if len(p.NotApplicable) == 0 {
		b.WriteString("Every pitfall of the catalog applies.\n\n")
	} else {
		b.WriteString("| claim | pitfalls judged not to apply (n/a: reason) |\n| --- | --- |\n")
		var keys []string
		byClaim := map[string][]NotApplicable{}
		for _, na := range p.NotApplicable {
			if _, ok := byClaim[na.Claim]; !ok {
				keys = append(keys, na.Claim)
			}
			byClaim[na.Claim] = append(byClaim[na.Claim], na)
		}
		for _, k := range keys {
			c, _ := p.Claim(k)
			var other, parts []string
			for _, na := range byClaim[k] {
				switch na.By {
				case "category":
					other = append(other, na.Title)
				case "registry":
					parts = append(parts, markdown.Text(na.Title+": n/a: "+na.Reason+" (the registry)"))
				default:
					parts = append(parts, markdown.Text(na.Title+": n/a: "+na.Reason))
				}
			}
			if len(other) > 0 {
				parts = append(parts, markdown.Text(fmt.Sprintf("n/a, they falsify claims of other categories than %s: %s", c.Category, strings.Join(other, ", "))))
			}
			fmt.Fprintf(&b, "| %s | %s |\n", t(k), strings.Join(parts, "; "))
		}
		b.WriteString("\n")
	}

	b.WriteString("## 4. Coverage matrix\n\n")
	b.WriteString("Gaps first (no test, no fault variant, oracle too weak, smoke only), serious claims first among them. The last verdict is the flake history's.\n\n")
	b.WriteString("| claim | hypothesis | legs that force it | tests | last verdict | gap | why | scenario |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range sortedRows(p) {
		gap := r.Gap
		if gap == GapNone {
			gap = "covered"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | **%s** | %s | %s |\n", t(r.Claim), r.Hypothesis, orNone(markdown.List(r.Legs)), markdown.List(r.Tests), t(r.Last), gap, t(r.Why), orNone(r.Scenario))
	}
	b.WriteString("\n## 5. Level\n\n")
	fmt.Fprintf(&b, "%s Run with %s.\n\n", t(p.Level.Why), markdown.Command(fmt.Sprintf("CONTESTED_LEVEL=%d", p.Level.Level)))

	b.WriteString("## 6. Environment requirements\n\n")
	if len(p.Environment) == 0 {
		b.WriteString("No lever is planned: nothing to provide.\n\n")
	} else {
		b.WriteString("| capability | needed by | what | on this machine when planned | provide it |\n| --- | --- | --- | --- | --- |\n")
		for _, r := range p.Environment {
			here := "not asked"
			if r.Probed {
				here = "missing"
				if len(r.NotRun) > 0 {
					here += "; these legs will be NOT-RUN here: " + strings.Join(r.NotRun, "; ")
				}
				if r.Present {
					here = strings.TrimSpace("present " + r.Version)
				}
			}
			what := r.Requirement
			if r.Alternative != "" {
				what += "; or " + r.Alternative
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.Name, markdown.List(clip(r.NeededBy, 6)), t(what), t(here), t(r.Provide))
		}
		b.WriteString("\n")
	}

	b.WriteString("## 7. Scenarios\n\n")
	if len(p.Scenarios) == 0 {
		b.WriteString("No gap a lever can close: no scenario.\n\n")
	}
	for _, s := range p.Scenarios {
		fmt.Fprintf(&b, "### %s: %s\n\n", s.ID, t(s.Name))
		field := func(name, value string) { fmt.Fprintf(&b, "- **%s**: %s\n", name, value) }
		field("Falsifies if it fails", markdown.List(s.Falsifies))
		field("Closes", strings.Join(s.Closes, ", ")+" (gap: "+s.Gap+")")
		field("Workload", t(s.Workload))
		field("Faults", t(s.Faults))
		oracle := t(s.Oracle.Checker)
		if s.Oracle.Model != "" {
			oracle = "model " + code(s.Oracle.Model) + "; checker: " + oracle
		}
		field("Oracle", oracle)
		field("Landing evidence", t(s.Landing))
		field("Ambiguous outcomes", t(s.Ambiguity))
		field("Smoke budget", t(orNone(s.Budget.Smoke)))
		field("Hardening budget", t(orNone(s.Budget.Hardening)))
		field("Release budget", t(orNone(s.Budget.Release)))
		target := code(s.Target)
		if s.Existing != "" {
			target += " (the existing " + code(s.Existing) + ": this gap needs a deeper run, not a new test)"
		}
		field("Target test file", target)
		field("Test", code(s.Test))
		field("Run it", markdown.Command(s.Run))
		if s.Skeleton != "" {
			b.WriteString("\n" + markdown.Block(s.Skeleton, 1<<16))
		}
		b.WriteString("\n")
	}

	b.WriteString("## 8. Missing claims\n\n")
	if len(p.MissingClaims) == 0 {
		b.WriteString("Every check the surfaces' oracles name is a promise some claim states.\n\n")
	} else {
		for _, m := range p.MissingClaims {
			fmt.Fprintf(&b, "- %s: %s.\n", t(m.Surface), t(m.Evidence))
		}
		b.WriteString("\n")
	}
	b.WriteString("## 9. Coverage adequacy\n\n")
	for _, a := range p.Adequacy {
		fmt.Fprintf(&b, "- %s\n", t(a.Argument))
	}
	b.WriteString("\n## 10. Residual uncertainty\n\n")
	if len(p.Residual) == 0 {
		b.WriteString("None stated.\n")
	}
	for _, r := range p.Residual {
		fmt.Fprintf(&b, "- %s\n", t(r))
	}
	return write(w, b.String())
}

// gapRank orders gaps for the matrix: the worst first.
var gapRank = map[string]int{GapNoTest: 0, GapNoFault: 1, GapOracleWeak: 2, GapSmokeOnly: 3, GapNone: 4}

// sortedRows are the coverage rows with gaps first, serious claims first
// among equal gaps, otherwise in plan order.
func sortedRows(p *Plan) []Row {
	rows := slices.Clone(p.Coverage)
	serious := map[string]bool{}
	for _, c := range p.Claims {
		serious[c.Key] = c.Serious
	}
	slices.SortStableFunc(rows, func(a, b Row) int {
		if c := cmp.Compare(gapRank[a.Gap], gapRank[b.Gap]); c != 0 {
			return c
		}
		switch {
		case serious[a.Claim] && !serious[b.Claim]:
			return -1
		case !serious[a.Claim] && serious[b.Claim]:
			return 1
		}
		return 0
	})
	return rows
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func write(w io.Writer, s string) error {
	_, err := io.WriteString(w, s)
	return err
}

// withRoutes is each package a file reaches with the routes it takes:
// "example.com/bank/deposit (package directory, touched record)".
func withRoutes(f File) []string {
	out := make([]string, 0, len(f.Packages))
	for _, ip := range f.Packages {
		var routes []Reach
		for _, rc := range f.Routes {
			if rc.Package == ip {
				routes = append(routes, rc)
			}
		}
		out = append(out, fmt.Sprintf("%s (%s)", ip, strings.Join(routeNames(routes), ", ")))
	}
	return out
}
