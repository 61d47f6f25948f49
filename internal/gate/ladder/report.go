package ladder

import (
	"fmt"
	"io"
	"strings"

	"github.com/contested/contested/internal/gate/verdict"
	"github.com/contested/contested/internal/markdown"
	"github.com/contested/contested/internal/replayenv"
	"github.com/contested/contested/internal/seed"
	"github.com/contested/contested/internal/terminal"
)

// Decision is the outcome's one decision: every writer renders it, so no
// two places name two owners for one failure.
func (o *Outcome) Decision() verdict.Decision {
	owner := string(o.Owner)
	if o.OwnerName != "" {
		owner += " (" + o.OwnerName + ")"
	}
	if owner == "" || o.NoFailure() {
		owner = "none"
	}
	return verdict.Decision{Test: o.qualified(), Owner: owner, Verdict: string(o.Verdict), Action: o.Action}
}

// Write prints a readable summary of the outcome.
func (o *Outcome) Write(w io.Writer) {
	fmt.Fprintf(w, "ladder for %s\n", terminal.Escape(o.qualified()))
	if o.Surface != nil {
		fmt.Fprintf(w, "  step 1  surface %s (%s), %s; oracle %s; owner %s\n", terminal.Escape(o.Surface.ID), terminal.Escape(o.Surface.Where), terminal.Escape(o.Surface.Behavior), terminal.Escape(o.Surface.Oracle), terminal.Escape(o.Surface.Owner))
	} else {
		fmt.Fprintf(w, "  step 1  no surface in the registry lists this test\n")
	}
	if o.Step >= 2 {
		state := "passed"
		if o.Step == 2 {
			state = "FAILED"
		}
		fmt.Fprintf(w, "  step 2  fault-layer preflight %s\n", state)
	}
	if o.Step >= 3 {
		contract := string(o.Contract)
		if contract == "" {
			contract = "not run"
		}
		fmt.Fprintf(w, "  step 3  the test alone: %d of %d reruns failed (%s); the contract in isolation: %s\n", o.Reruns.Failures, o.Reruns.Runs, o.Reruns.Class, contract)
		for _, l := range o.Legs {
			fmt.Fprintf(w, "          %-17s %s  %s\n", terminal.Escape(l.Lever), l.Verdict, terminal.Escape(l.Reason))
		}
	}
	d := o.Decision()
	fmt.Fprintf(w, "  owner   %s\n  verdict %s\n  action  %s\n", terminal.Escape(d.Owner), terminal.Escape(d.Verdict), terminal.Escape(d.Action))
	for _, e := range o.Evidence {
		fmt.Fprintf(w, "          %s\n", terminal.Escape(e))
	}
	for _, c := range o.Contended {
		fmt.Fprintf(w, "  contended %s\n", terminal.Escape(c))
	}
}

func (o *Outcome) qualified() string {
	if o.Package != "" {
		return o.Package + " " + o.Test
	}
	return o.Test
}

// Issue renders a ready-to-paste markdown body for a "fix:" issue. Every
// value in it came from a test, its output or the registry, and is
// escaped (internal/markdown): a name or a failure shows as written and
// never becomes HTML, a link, an image or a line of its own.
func (o *Outcome) Issue() string {
	var b strings.Builder
	subject := o.Test
	if o.Surface != nil {
		subject = o.Surface.ID
	}
	fmt.Fprintf(&b, "fix: %s: %s\n\n", markdown.Text(subject), markdown.Text(headline(o)))
	d := o.Decision()
	fmt.Fprintf(&b, "| | |\n| --- | --- |\n")
	fmt.Fprintf(&b, "| owner | %s |\n", markdown.Text(d.Owner))
	fmt.Fprintf(&b, "| failing test | %s |\n", markdown.CellCode(o.qualified()))
	if o.Surface != nil {
		fmt.Fprintf(&b, "| surface | %s (%s), class %s |\n", markdown.CellCode(o.Surface.ID), markdown.Text(o.Surface.Where), markdown.CellCode(o.Surface.Class))
		fmt.Fprintf(&b, "| behaviour | %s |\n| oracle | %s |\n", markdown.Text(o.Surface.Behavior), markdown.Text(o.Surface.Oracle))
	}
	fmt.Fprintf(&b, "| ladder | step %d: %s |\n", o.Step, markdown.Text(d.Verdict))
	if o.Reason != "" {
		fmt.Fprintf(&b, "| failure | %s |\n", markdown.Text(o.Reason))
	}
	if o.Step >= 3 {
		fmt.Fprintf(&b, "| the test alone | failed %d of %d reruns (%s) |\n", o.Reruns.Failures, o.Reruns.Runs, markdown.Text(string(o.Reruns.Class)))
	}
	var replays []string
	for _, l := range o.Legs {
		if !l.Verdict.Fail() {
			continue
		}
		fmt.Fprintf(&b, "| leg | %s: %s |\n", markdown.CellCode(l.Lever), markdown.Text(string(l.Verdict)))
		if l.FailedRun != 0 {
			fmt.Fprintf(&b, "| seed | `%d` |\n", l.FailedRun)
		} else {
			b.WriteString("| seed | unknown: no record named it, so no replay repeats its schedule |\n")
		}
		if l.Replay != "" {
			// Below the table: in a cell its pipes would be escaped, and
			// the escapes copied with it.
			replays = append(replays, fmt.Sprintf("**Replay (%s):** %s\n", markdown.Text(l.Lever), markdown.Command(l.Replay)))
		}
	}
	if len(replays) > 0 {
		b.WriteString("\n" + strings.Join(replays, "\n"))
	}
	fmt.Fprintf(&b, "\n**Action:** %s\n", markdown.Prose(d.Action, o.Commands()...))
	if len(o.Evidence) > 0 || len(o.Contended) > 0 {
		b.WriteString("\n**Evidence**\n\n")
		for _, e := range append(append([]string(nil), o.Evidence...), o.Contended...) {
			fmt.Fprintf(&b, "- %s\n", markdown.Text(e))
		}
	}
	if len(o.Legs) > 0 {
		b.WriteString("\n**Leg verdicts (the contract in isolation)**\n\n| leg | verdict | evidence |\n| --- | --- | --- |\n")
		for _, l := range o.Legs {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", markdown.Text(l.Lever), markdown.Text(string(l.Verdict)), markdown.Text(l.Reason))
		}
	}
	return b.String()
}

func headline(o *Outcome) string {
	switch o.Owner {
	case Component:
		for _, l := range o.Legs {
			if l.Verdict.Fail() {
				return fmt.Sprintf("%s leg is %s (%s)", l.Lever, l.Verdict, seed.Seed(l.FailedRun).Say())
			}
		}
		return "contract RED"
	case FaultLayer:
		return "the fault layer cannot run"
	case Capacity:
		return "failed in a saturated run (capacity attribution)"
	case Infrastructure:
		return "interference from another run on this Docker host"
	}
	if o.Surface == nil {
		return "the test is not in the registry"
	}
	if o.Reruns.Class == PackageFails && o.PackageFailure != nil {
		return "its package " + o.PackageFailure.What
	}
	return fmt.Sprintf("%s while the contract is %s", o.Verdict, o.Contract)
}

// Commands are the commands the outcome's action can name for a reader to
// run: its replay, each failing leg's, and the command that walks it
// again. A Markdown writer shows them as code (markdown.Prose).
func (o *Outcome) Commands() []string {
	cmds := []string{o.Replay}
	for _, l := range o.Legs {
		if l.Replay != "" {
			cmds = append(cmds, replayenv.Prefix(l.Replay, o.replay), l.Replay)
		}
	}
	if o.Test != "" {
		cmds = append(cmds, "go tool mage arbitrate "+o.Test)
	}
	return cmds
}
