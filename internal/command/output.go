package command

import (
	"io"
	"os"
	"sync/atomic"

	"github.com/contested/contested/internal/faultlayer"

	"github.com/contested/contested/internal/supervise"
	"github.com/contested/contested/internal/terminal"
)

// Output is the writer a command prints to, over w: under GitHub Actions
// (GITHUB_ACTIONS=true) a terminal.Guard that wraps everything in
// stop-commands blocks, so that no text from a test, its name or the
// registry is read as a workflow command; elsewhere w as it is. In a
// worker, each block's token goes to the supervisor, which ends a block
// the worker left open when it was killed. The caller closes it.
func Output(w io.Writer) *terminal.Guard {
	g := terminal.NewGuard(w, terminal.GitHubActions(os.Getenv), terminal.OnBlock(supervise.BlockOpened, supervise.BlockClosed))
	output.Store(g)
	return g
}

// output is the last Output made: where a forced exit writes its
// annotation, outside the block it may be in.
var output atomic.Pointer[terminal.Guard]

// currentOutput is the command's output (Output), or os.Stdout before
// there is one.
func currentOutput() io.Writer {
	if g := output.Load(); g != nil {
		return g
	}
	return os.Stdout
}

// cannotRun holds the repair steps of the fault layer's failed checks,
// for the CI's summary of a run that cannot run.
var cannotRun atomic.Pointer[[]string]

// noteCannotRun keeps the failed checks of p, each with its fix.
func noteCannotRun(p faultlayer.Preflight) {
	var steps []string
	for _, c := range p.Checks {
		if !c.OK {
			step := c.Name + ": " + c.Detail
			if c.Fix != "" {
				step += "; " + c.Fix
			}
			steps = append(steps, step)
		}
	}
	cannotRun.Store(&steps)
}

// cannotRunRepair is what noteCannotRun kept.
func cannotRunRepair() []string {
	if s := cannotRun.Load(); s != nil {
		return *s
	}
	return nil
}
