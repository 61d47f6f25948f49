package command

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/contested/contested/internal/faultlayer"
	"github.com/contested/contested/internal/terminal"
	"github.com/contested/contested/internal/workflowtest"
)

// TestTargetsPrintNoSecret: whatever a command prints, in pieces or whole,
// and the error it returns reach the user with every password masked.
func TestTargetsPrintNoSecret(t *testing.T) {
	const pw = "target-Out-secret"
	t.Setenv("CONTESTED_PG_DSN", "host=127.0.0.1 user=postgres password='"+pw+"' dbname=contested")
	var stdout bytes.Buffer
	err := guarded(&stdout, func(out io.Writer) error {
		// One line in three writes, the password split between two.
		fmt.Fprintf(out, "fault layer: external, Postgres host=127.0.0.1 password=%s", pw[:5])
		fmt.Fprintf(out, "%s dbname=contested; the server said ", pw[5:])
		fmt.Fprintf(out, "%s\nlast line without newline: postgres://u:%s@h/db", pw, pw)
		return fmt.Errorf("arbitrate: %w: server said %s", faultlayer.ErrCannotRun, pw)
	})
	if strings.Contains(stdout.String(), pw) || strings.Contains(stdout.String(), pw[:5]) || strings.Contains(stdout.String(), pw[5:]) {
		t.Errorf("the output holds the password:\n%s", stdout.String())
	}
	if !strings.HasSuffix(stdout.String(), "postgres://u:xxxxx@h/db") {
		t.Errorf("the last line was not flushed: %q", stdout.String())
	}
	if ExitCode(err) != ExitCannotRun || strings.Contains(err.Error(), pw) || !strings.Contains(err.Error(), "server said xxxxx") {
		t.Errorf("the error Mage prints: %v", err)
	}
}

// TestUnderGitHubActionsATargetsOutputIsNeverACommand: under GitHub
// Actions, whatever a command prints (a test's line, a name with a carriage
// return, the legacy form, an unfinished last line) is read as no workflow
// command, and the annotation it writes through terminal.Outside is; the
// step's commands are on again once the target returns.
func TestUnderGitHubActionsATargetsOutputIsNeverACommand(t *testing.T) {
	t.Setenv("GITHUB_ACTIONS", "true")
	var stdout bytes.Buffer
	_ = guarded(&stdout, func(out io.Writer) error {
		fmt.Fprintf(out, "::error title=x::from a test\n  ::warning::indented\nbattery: FAIL TestX\r::error::after a CR\n")
		fmt.Fprintf(out, "owner ##[error]legacy\n")
		terminal.Outside(out, func(w io.Writer) error {
			_, err := io.WriteString(w, terminal.Annotation("error", nil, "the run's own"))
			return err
		})
		fmt.Fprintf(out, "::add-mask::x\nno newline ::error::y")
		return nil
	})
	got := workflowtest.Commands(stdout.String())
	if len(got) != 1 || got[0].Data != "the run's own" {
		t.Errorf("the runner acts on %+v, want the run's own annotation alone:\n%s", got, stdout.String())
	}
	if workflowtest.Stopped(stdout.String()) {
		t.Errorf("commands are still stopped after the target:\n%s", stdout.String())
	}
}
