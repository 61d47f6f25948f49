package ladder

import (
	"fmt"
	"io"
	"strings"

	"github.com/contested/contested/gate"
)

// Decision is the outcome's one decision: every writer renders it, so no
// two places name two owners for one failure.
func (o *Outcome) Decision() gate.Decision {
	owner := string(o.Owner)
	if o.OwnerName != "" {
		owner += " (" + o.OwnerName + ")"
	}
	if owner == "" || o.NoFailure() {
		owner = "none"
	}
	return gate.Decision{Test: o.qualified(), Owner: owner, Verdict: o.Verdict, Action: o.Action}
}

// Write prints a readable summary of the outcome.
func (o *Outcome) Write(w io.Writer) {
	fmt.Fprintf(w, "ladder for %s\n", o.qualified())
	if o.Surface != nil {
		fmt.Fprintf(w, "  step 1  surface %s (%s), %s; oracle %s; owner %s\n", o.Surface.ID, o.Surface.Where, o.Surface.Behavior, o.Surface.Oracle, o.Surface.Owner)
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
			fmt.Fprintf(w, "          %-17s %s  %s\n", l.Lever, l.Verdict, l.Reason)
		}
	}
	d := o.Decision()
	fmt.Fprintf(w, "  owner   %s\n  verdict %s\n  action  %s\n", d.Owner, d.Verdict, d.Action)
	for _, e := range o.Evidence {
		fmt.Fprintf(w, "          %s\n", e)
	}
	for _, c := range o.Contended {
		fmt.Fprintf(w, "  contended %s\n", c)
	}
}

func (o *Outcome) qualified() string {
	if o.Package != "" {
		return o.Package + " " + o.Test
	}
	return o.Test
}

// Issue renders a ready-to-paste markdown body for a "fix:" issue.
func (o *Outcome) Issue() string {
	var b strings.Builder
	subject := o.Test
	if o.Surface != nil {
		subject = o.Surface.ID
	}
	fmt.Fprintf(&b, "fix: %s: %s\n\n", subject, headline(o))
	d := o.Decision()
	fmt.Fprintf(&b, "| | |\n| --- | --- |\n")
	fmt.Fprintf(&b, "| owner | %s |\n", d.Owner)
	fmt.Fprintf(&b, "| failing test | `%s` |\n", o.qualified())
	if o.Surface != nil {
		fmt.Fprintf(&b, "| surface | `%s` (%s), class `%s` |\n", o.Surface.ID, o.Surface.Where, o.Surface.Class)
		fmt.Fprintf(&b, "| behaviour | %s |\n| oracle | %s |\n", o.Surface.Behavior, o.Surface.Oracle)
	}
	fmt.Fprintf(&b, "| ladder | step %d: %s |\n", o.Step, d.Verdict)
	if o.Step >= 3 {
		fmt.Fprintf(&b, "| the test alone | failed %d of %d reruns (%s) |\n", o.Reruns.Failures, o.Reruns.Runs, o.Reruns.Class)
	}
	for _, l := range o.Legs {
		if l.Verdict.Fail() {
			fmt.Fprintf(&b, "| leg | `%s`: %s |\n| seed | `%d` |\n| replay | `%s` |\n", l.Lever, l.Verdict, l.FailedRun, l.Replay)
		}
	}
	fmt.Fprintf(&b, "\n**Action:** %s\n", d.Action)
	if len(o.Evidence) > 0 || len(o.Contended) > 0 {
		b.WriteString("\n**Evidence**\n\n")
		for _, e := range append(append([]string(nil), o.Evidence...), o.Contended...) {
			fmt.Fprintf(&b, "- %s\n", e)
		}
	}
	if len(o.Legs) > 0 {
		b.WriteString("\n**Leg verdicts (the contract in isolation)**\n\n| leg | verdict | evidence |\n| --- | --- | --- |\n")
		for _, l := range o.Legs {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", l.Lever, l.Verdict, strings.ReplaceAll(l.Reason, "|", "\\|"))
		}
	}
	return b.String()
}

func headline(o *Outcome) string {
	switch o.Owner {
	case Component:
		for _, l := range o.Legs {
			if l.Verdict.Fail() {
				return fmt.Sprintf("%s leg is %s (seed %d)", l.Lever, l.Verdict, l.FailedRun)
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
