// Package cisummary shows a run's verdict where a CI system shows it: under
// GitHub Actions a Markdown summary in the job's page ($GITHUB_STEP_SUMMARY)
// and an ::error annotation per failing test at its file and line; outside
// a CI it does nothing.
package cisummary

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/contested/contested/internal/capability"
	"github.com/contested/contested/internal/gate"
	"github.com/contested/contested/internal/gate/ladder"
	"github.com/contested/contested/internal/secret"
	"github.com/contested/contested/internal/terminal"
)

// Run is one verdict as CI shows it: what validate.json (or merge.json)
// holds of it.
type Run struct {
	// Command names what judged: "validate", "validate -shard=2/3",
	// "program-gate -merge".
	Command string
	RunID   string
	Layer   string
	Green   bool
	Reasons []string
	// Surfaces are the registered surfaces' verdicts, leg by leg.
	Surfaces []gate.SurfaceVerdict
	// Failures are the battery's failures with the owner, action and
	// replay their ladder walk gave (validate.json's battery_failures).
	Failures []ladder.Plain
	// Ladder are the walks, for their evidence.
	Ladder []*ladder.Outcome
	// Capabilities is the capability matrix; the summary lists what is
	// missing and who needs it.
	Capabilities capability.Matrix
	Took         time.Duration
	// Reuse says what the run reused from earlier certified runs instead
	// of running it, in one sentence; empty when it reused nothing.
	Reuse string
	// Confirming says the verdict is the one given the moment the battery
	// ended, with each failure's likely owner, before the ladder confirms
	// them: the summary says so, and no annotation is written yet (the
	// confirmed verdict writes them).
	Confirming bool
}

// CI is the CI system a run is under, read from its environment.
type CI struct {
	// GitHub: GITHUB_ACTIONS=true.
	GitHub bool
	// StepSummary is $GITHUB_STEP_SUMMARY: the file GitHub renders on the
	// job's page.
	StepSummary string
	// Workspace is $GITHUB_WORKSPACE, the checkout the annotations' paths
	// are relative to.
	Workspace string
	// GitLab: GITLAB_CI=true.
	GitLab bool
}

// Detect reads the CI system from getenv (os.Getenv).
func Detect(getenv func(string) string) CI {
	return CI{
		GitHub:      getenv("GITHUB_ACTIONS") == "true",
		StepSummary: getenv("GITHUB_STEP_SUMMARY"),
		Workspace:   getenv("GITHUB_WORKSPACE"),
		GitLab:      getenv("GITLAB_CI") == "true",
	}
}

// Any reports whether the run is under a CI system this package speaks
// to. Outside one, nothing it does changes anything.
func (c CI) Any() bool { return c.GitHub || c.GitLab }

// ErrStepSummary: the step summary could not be written.
var ErrStepSummary = errors.New("cannot write the step summary")

// Publish shows run under c: under GitHub Actions it appends the Markdown
// summary to c.StepSummary (when set) and writes one ::error annotation
// per failing test to out, located at the test's declaration in the
// module in dir (Locate). Under GitLab the JUnit carries the owners (see
// report.JUnit) and Publish writes nothing; outside CI it does
// nothing. What it writes is scrubbed of every known secret.
func Publish(ctx context.Context, c CI, run Run, dir string, out io.Writer) error {
	if !c.GitHub {
		return nil
	}
	published.Store(true)
	if run.Confirming {
		if c.StepSummary == "" {
			return nil
		}
		return appendSummary(c.StepSummary, run)
	}
	loc := Locate(ctx, dir, c.Workspace, run.Failures)
	// Outside the stop-commands block what the command printed is in
	// (terminal.Guard), so that the runner reads them.
	err := terminal.Outside(out, func(out io.Writer) error {
		w := secret.NewWriter(out)
		err := writeAnnotations(w, run, loc)
		if ferr := w.Flush(); err == nil {
			err = ferr
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("write the annotations: %w", err)
	}
	if c.StepSummary == "" {
		return nil
	}
	return appendSummary(c.StepSummary, run)
}

// appendSummary appends run's Markdown to the step summary file
// (appendTo).
func appendSummary(path string, run Run) error {
	return appendTo(path, func(w io.Writer) error { return WriteMarkdown(w, run) })
}
