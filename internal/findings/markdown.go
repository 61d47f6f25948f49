package findings

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/contested/contested/internal/markdown"
)

// The files findings are saved as, beside validate.json.
const (
	MarkdownName = "findings.md"
	JSONName     = "findings.json"
)

// WriteMarkdown renders the findings as findings.md. Every string that
// came from the registry, the plan, a test or its failure is escaped
// (internal/markdown), so none of it becomes markup.
func WriteMarkdown(w io.Writer, f *Findings) error {
	var b strings.Builder
	t, code := markdown.Text, markdown.Code
	fmt.Fprintf(&b, "# Findings: run %s\n\n", t(f.RunID))
	commit := "unknown"
	if f.Commit != "" {
		commit = code(short(f.Commit))
		if f.Dirty {
			commit += " with changes not committed"
		}
	}
	plan := t(planSaid(f.Plan))
	if f.Plan.SHA256 != "" {
		plan += ", sha256 " + code(f.Plan.SHA256)
	}
	verdict := "GREEN"
	if !f.Green {
		verdict = "RED: " + t(strings.Join(f.Reasons, "; "))
	}
	fmt.Fprintf(&b, "Commit %s, level %d. Plan: %s. Validate: %s.\n\n", commit, f.Level, plan, verdict)
	fmt.Fprintf(&b, "## Summary\n\n%s\n\n", t(f.Summary))

	b.WriteString("## Claims\n\n")
	if len(f.Claims) == 0 {
		b.WriteString("No claim was in scope.\n\n")
	} else {
		b.WriteString("| claim | category | text | verdict | budget met | legs | why |\n| --- | --- | --- | --- | --- | --- | --- |\n")
		for _, c := range f.Claims {
			var legs []string
			for _, l := range c.Legs {
				legs = append(legs, markdown.Text(l.Lever)+" "+string(l.Verdict))
			}
			why := c.Reason
			if c.Reused != "" {
				why += " (reused from " + c.Reused + ")"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | **%s** | %s | %s | %s |\n", t(c.Key), c.Category, t(c.Text), c.Verdict, c.Budget, orNone(strings.Join(legs, ", ")), t(why))
		}
		b.WriteString("\n")
	}

	b.WriteString("## Evidence chains\n\n")
	serious := false
	for _, c := range f.Claims {
		if !c.Serious || len(c.Chain) == 0 && c.Broken == "" {
			continue
		}
		serious = true
		fmt.Fprintf(&b, "- %s (%s):\n", t(c.Key), c.Category)
		for _, line := range c.Chain {
			fmt.Fprintf(&b, "  - %s\n", t(line))
		}
		if c.Broken != "" {
			fmt.Fprintf(&b, "  - chain broken: %s\n", t(c.Broken))
		}
	}
	if !serious {
		b.WriteString("No serious claim (safety, durability, idempotency, isolation, ordering, membership) ran a leg.\n")
	}

	b.WriteString("\n## Failures and blame\n\n")
	if len(f.Failures) == 0 {
		b.WriteString("No leg failed or stayed undecided, and no test failed.\n\n")
	} else {
		b.WriteString("| what | verdict | blame | why | claims | action |\n| --- | --- | --- | --- | --- | --- |\n")
		for _, fl := range f.Failures {
			why := fl.Why
			if fl.Pending != "" {
				why += "; pending: " + fl.Pending
			}
			action := fl.Action
			if fl.Replay != "" && !strings.Contains(action, fl.Replay) {
				action = strings.TrimSpace(action + " Replay: " + fl.Replay)
			}
			// A command in a cell would need its pipes escaped: each is
			// listed below the table instead, as code.
			cmds := commands(fl)
			why, action = belowTable(why, cmds), belowTable(action, cmds)
			fmt.Fprintf(&b, "| %s | %s | **%s** | %s | %s | %s |\n", t(fl.What), t(fl.Verdict), fl.Blame, t(why), orNone(markdown.List(fl.Claims)), t(orNone(action)))
		}
		b.WriteString("\n")
		replays(&b, f.Failures)
	}

	var notReached, missing []string
	for _, n := range f.NotReached {
		notReached = append(notReached, t(n.Claim)+": "+t(n.Why))
	}
	bullets(&b, "Claims not reached", "Every claim in scope was reached by a leg of this run.", notReached)
	for _, m := range f.Missing {
		missing = append(missing, t(m.Surface)+": "+t(m.Evidence))
	}
	bullets(&b, "Missing claims", "Every behaviour the oracles check is a promise some claim states.", missing)

	b.WriteString("## Coverage adequacy\n\n")
	if len(f.Adequacy) > 0 {
		b.WriteString("| claim | the plan | what ran | adequacy after this run |\n| --- | --- | --- | --- |\n")
		for _, a := range f.Adequacy {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", t(a.Claim), t(a.Planned), t(a.Ran), t(a.After))
		}
		b.WriteString("\n")
	}
	b.WriteString("## Release-budget disclosures\n\n")
	if len(f.Disclosures) == 0 {
		b.WriteString("Every surface in scope declares a release budget.\n\n")
	} else {
		b.WriteString("| surface | why no release budget | revisit when |\n| --- | --- | --- |\n")
		for _, d := range f.Disclosures {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", t(d.Surface), t(d.Reason), t(d.RevisitWhen))
		}
		b.WriteString("\n")
	}
	b.WriteString("## Confidence\n\n")
	fmt.Fprintf(&b, "%s\n\n", t(f.Confidence.Statement))
	if len(f.Confidence.Aspects) > 0 {
		b.WriteString("| claim | confidence | reason |\n| --- | --- | --- |\n")
		for _, a := range f.Confidence.Aspects {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", t(a.Claim), a.Confidence, t(a.Reason))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// bullets writes a section of items, or, when it has none, the sentence
// that says so: a section is never left empty.
func bullets(b *strings.Builder, title, none string, items []string) {
	fmt.Fprintf(b, "## %s\n\n", title)
	if len(items) == 0 {
		b.WriteString(none + "\n\n")
		return
	}
	for _, it := range items {
		fmt.Fprintf(b, "- %s\n", it)
	}
	b.WriteString("\n")
}

// replays lists, below the failures' table, each failure's commands (its
// replay, the arbitrate command its action or pending names), each as a
// code span a reader copies byte for byte (markdown.Command): in a table
// cell its pipes would have to be escaped, and the escapes copied.
func replays(b *strings.Builder, fs []Failure) {
	var lines []string
	for _, fl := range fs {
		for _, c := range commands(fl) {
			lines = append(lines, fmt.Sprintf("- %s: %s\n", markdown.Text(fl.What), markdown.Command(c)))
		}
	}
	if len(lines) == 0 {
		return
	}
	b.WriteString("Commands the table names:\n\n" + strings.Join(lines, "") + "\n")
}

// arbitrateCommand is the ladder's command as an action or pending names
// it: a Go test name holds no space.
var arbitrateCommand = regexp.MustCompile(`go tool mage arbitrate [^\s;,]+`)

// commands are the commands a failure's row names: its replay, and each
// arbitrate command of its action and pending, once each, longest first
// (so that belowTable replaces a command before any command inside it).
func commands(fl Failure) []string {
	var out []string
	add := func(c string) {
		if c != "" && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	add(fl.Replay)
	for _, s := range []string{fl.Action, fl.Pending} {
		for _, c := range arbitrateCommand.FindAllString(s, -1) {
			add(c)
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// belowTable is a cell's text with each of cmds replaced by a pointer to
// the list below the table.
func belowTable(s string, cmds []string) string {
	for _, c := range cmds {
		s = strings.ReplaceAll(s, c, "the command below")
	}
	return s
}
