package cisummary

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"github.com/contested/contested/internal/markdown"
	"github.com/contested/contested/internal/secret"
	"github.com/contested/contested/internal/terminal"
)

// End is how a command ended when it gave no verdict of its own: it could
// not run (exit 3), was given bad input (exit 2), was stopped by a
// signal, or its worker was killed or crashed.
type End struct {
	// Command names it: "validate", "validate -shard=1/3".
	Command string
	// Code is the exit code it ends with.
	Code int
	// What says in a few words what happened: "CANNOT RUN", "STOPPED".
	What string
	// Why is what the command or its supervisor said.
	Why string
	// Repair lists what to do, one step per entry.
	Repair []string
}

// published says this process wrote a summary already (Publish or
// PublishEnd): a run shows one end.
var published atomic.Bool

// Published reports whether this process wrote the step summary.
func Published() bool { return published.Load() }

// PublishEnd shows e under c as a run that gave no verdict: under GitHub
// Actions, one ::error annotation on out (outside any stop-commands
// block, see terminal.Outside) and a section of the step summary that
// says what happened, why, the exit code and what to do. Nothing is
// written outside GitHub Actions, or when this process published already.
func PublishEnd(c CI, e End, out io.Writer) error {
	if !c.GitHub || published.Load() {
		return nil
	}
	published.Store(true)
	msg := fmt.Sprintf("contested %s: %s (exit %d): %s", e.Command, e.What, e.Code, e.Why)
	for _, r := range e.Repair {
		msg += "\n" + r
	}
	err := terminal.Outside(out, func(w io.Writer) error {
		_, err := io.WriteString(w, secret.ScrubString(terminal.Annotation("error", [][2]string{{"title", "contested " + e.Command + ": " + e.What}}, msg)))
		return err
	})
	if err != nil {
		return fmt.Errorf("write the annotation: %w", err)
	}
	if c.StepSummary == "" {
		return nil
	}
	return appendTo(c.StepSummary, func(w io.Writer) error { return WriteEnd(w, e) })
}

// WriteEnd writes e as Markdown: a heading with the command and what
// happened, the exit code, why, and what to do, every value escaped.
func WriteEnd(w io.Writer, e End) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "### contested %s: %s\n\n", markdown.Text(e.Command), markdown.Text(e.What))
	fmt.Fprintf(bw, "exit %d: %s\n\n", e.Code, markdown.Text(exitMeaning(e.Code)))
	if e.Why != "" {
		fmt.Fprintf(bw, "**Why:** %s\n\n", markdown.Text(e.Why))
	}
	if len(e.Repair) > 0 {
		fmt.Fprintf(bw, "**What to do:**\n\n")
		for _, r := range e.Repair {
			fmt.Fprintf(bw, "- %s\n", markdown.Text(r))
		}
		fmt.Fprintf(bw, "\n")
	}
	return bw.Flush()
}

// exitMeaning says what an exit code of contested means.
func exitMeaning(code int) string {
	switch code {
	case 0:
		return "green"
	case 1:
		return "red, refused, stopped, or an internal error: no verdict to trust"
	case 2:
		return "usage or bad input"
	case 3:
		return "cannot run: the fault layer is unhealthy"
	}
	return "not an exit code of contested"
}

// appendTo appends what write writes to the step summary at path, which
// the runner made: an existing regular file, never created, never
// followed through a symbolic link, never truncated; scrubbed of secrets.
func appendTo(path string, write func(io.Writer) error) error {
	info, err := os.Lstat(path)
	if err != nil {
		return stepSummaryError(path, err)
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%w: GITHUB_STEP_SUMMARY names %s, which is not a regular file (%s): contested appends only to the regular file the runner creates, and never follows a link; leave GITHUB_STEP_SUMMARY as the runner sets it, or unset it", ErrStepSummary, path, info.Mode().Type())
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return stepSummaryError(path, err)
	}
	w := secret.NewWriter(f)
	err = write(w)
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrStepSummary, path, err)
	}
	return nil
}
