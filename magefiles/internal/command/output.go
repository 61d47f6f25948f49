package command

import (
	"io"
	"os"

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
	return terminal.NewGuard(w, terminal.GitHubActions(os.Getenv), terminal.OnBlock(supervise.BlockOpened, supervise.BlockClosed))
}
