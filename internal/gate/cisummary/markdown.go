package cisummary

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/contested/contested/internal/gate/ladder"
	"github.com/contested/contested/internal/markdown"
)

// Bounds of what one summary shows: GitHub keeps at most 1 MiB of a step's
// summary, and a page of ten thousand failures helps no one. What is left
// out is counted and the summary says where the rest is.
const (
	maxFailures = 50
	maxReasons  = 50
	maxSurfaces = 200
)

// WriteMarkdown writes run as GitHub-flavoured Markdown: the verdict and
// its reasons, a table of the surfaces (each leg's verdict), the failing
// tests with owner, verdict, failure, action and replay command, and the
// capabilities that are missing with who needs them and what provides
// them. Every text that came from a run (test names, messages, commands)
// is escaped (internal/markdown): it shows as written and never becomes
// markup, a link or HTML.
func WriteMarkdown(w io.Writer, run Run) error {
	bw := bufio.NewWriter(w)
	p := func(format string, a ...any) { fmt.Fprintf(bw, format, a...) }
	verdict := "RED"
	if run.Green {
		verdict = "GREEN"
	}
	if run.Confirming {
		verdict += " (confirming)"
	}
	p("### contested %s: %s\n\n", markdown.Text(run.Command), verdict)
	if run.Confirming {
		p("Given the moment the battery ended: each failure's owner below is the likely one, from its own evidence. The ladder confirms them next, in a section below; if the job stops first, this verdict stands, unconfirmed.\n\n")
	}
	var facts []string
	if run.RunID != "" {
		facts = append(facts, "run "+markdown.Code(run.RunID))
	}
	if run.Layer != "" {
		facts = append(facts, "layer "+markdown.Text(run.Layer))
	}
	if run.Took > 0 {
		facts = append(facts, "took "+run.Took.Round(time.Second).String())
	}
	if len(facts) > 0 {
		p("%s\n\n", strings.Join(facts, " · "))
	}
	if len(run.Reasons) > 0 {
		p("**Not GREEN because:**\n\n")
		for i, r := range run.Reasons {
			if i == maxReasons {
				p("- and %d more reasons (validate.json `reasons`)\n", len(run.Reasons)-i)
				break
			}
			p("- %s\n", markdown.Text(r))
		}
		p("\n")
	}
	if run.Reuse != "" {
		p("%s\n\n", markdown.Text(run.Reuse))
	}
	writeSurfaces(p, run)
	writeFailures(p, run)
	writeMissing(p, run)
	return bw.Flush()
}

// writeSurfaces writes the surfaces' table: one row per surface, its legs'
// verdicts in one cell.
func writeSurfaces(p func(string, ...any), run Run) {
	if len(run.Surfaces) == 0 {
		return
	}
	p("#### Surfaces\n\n| surface | verdict | legs |\n| --- | --- | --- |\n")
	for i, s := range run.Surfaces {
		if i == maxSurfaces {
			p("| and %d more | | |\n", len(run.Surfaces)-i)
			break
		}
		var legs []string
		for _, l := range s.Legs {
			leg := markdown.Text(l.Lever) + ": " + markdown.Text(string(l.Verdict))
			if d := l.Decision; d != nil {
				leg += " (arbitrated: " + markdown.Text(d.Say()) + ")"
			}
			legs = append(legs, leg)
		}
		verdict := markdown.Text(string(s.Verdict))
		switch {
		case s.Reused != nil:
			verdict += " (reused from run " + markdown.Code(s.Reused.RunID)
			if s.Reused.Commit != "" {
				verdict += ", commit " + markdown.Code(s.Reused.Commit[:min(12, len(s.Reused.Commit))])
			}
			verdict += ", " + s.Reused.At.UTC().Format(time.DateTime) + " UTC)"
		case s.Deeper != "":
			verdict += " (ran deeper: " + markdown.Text(s.Deeper) + ")"
		}
		p("| %s | %s | %s |\n", markdown.Text(s.ID), verdict, strings.Join(legs, "<br>"))
	}
	p("\n")
}

// writeFailures lists every failure of the battery with what its ladder
// walk found: owner, verdict, the failure as reported, the action and
// the command that replays it.
func writeFailures(p func(string, ...any), run Run) {
	if len(run.Failures) == 0 {
		return
	}
	evidence := map[string][]string{}
	for _, o := range run.Ladder {
		evidence[o.Package+"."+o.Test] = o.Evidence
	}
	p("#### Failing tests (%d)\n\n", len(run.Failures))
	for i, f := range run.Failures {
		if i == maxFailures {
			p("- and %d more: validate.json `battery_failures`\n", len(run.Failures)-i)
			break
		}
		p("- **%s** · owner **%s**", markdown.Text(failureName(f)), markdown.Text(f.Owner))
		if f.Verdict != "" {
			p(" · %s", markdown.Text(f.Verdict))
		}
		p("\n  - failure: %s\n  - action: %s\n", markdown.Text(f.FirstLine), markdown.Prose(f.Action, f.Commands()...))
		if f.Replay != "" {
			p("  - replay: %s\n", markdown.Command(f.Replay))
		}
		if f.Test != "" {
			for _, e := range evidence[f.Package+"."+f.Test] {
				p("  - evidence: %s\n", markdown.Text(e))
			}
		}
	}
	p("\n")
}

// failureName is a failure as a reader looks for it: its package and test,
// or the package and what happened to it.
func failureName(f ladder.Plain) string {
	switch {
	case f.Test != "":
		return f.Package + " " + f.Test
	case f.What != "":
		return "package " + f.Package + " " + f.What
	}
	return "package " + f.Package
}

// writeMissing lists the capabilities someone needed and this machine
// lacks, with the command that provides each.
func writeMissing(p func(string, ...any), run Run) {
	header := false
	for _, c := range run.Capabilities {
		if c.Present || len(c.NeededBy) == 0 {
			continue
		}
		if !header {
			p("#### Missing capabilities\n\n| capability | needed by | provide it |\n| --- | --- | --- |\n")
			header = true
		}
		var who []string
		for _, n := range c.NeededBy {
			who = append(who, markdown.Text(n))
		}
		p("| %s | %s | %s |\n", markdown.Text(string(c.Name)), strings.Join(who, ", "), markdown.Text(c.Provide))
	}
	if header {
		p("\n")
	}
}
