package command

import (
	"context"
	"errors"
	"fmt"
	"github.com/contested/contested/internal/rundir"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// ignoreHintMarker is the file, inside the results directory, that says
// the hint of hintIgnore was given for that directory.
const ignoreHintMarker = ".contested-ignore-hint"

// ignoreProbe is a name no generic pattern (*.json, *.log) matches: when
// git ignores it inside the results directory, it ignores what a run
// writes there.
const ignoreProbe = "contested-ignore-probe"

// hintIgnore says, once per results directory, that git does not ignore
// the results directory of a module in a git work tree, and what line to
// add to .gitignore. It never edits .gitignore: it leaves a marker file in
// the results directory so the hint is not repeated. It is silent when git
// is not installed, the directory is not in a work tree (or outside the
// module's), git ignores it, or the hint was given before.
func hintIgnore(ctx context.Context, moduleRoot string, resultsDir rundir.Dir, out io.Writer) {
	if _, err := os.Lstat(resultsDir.Join(ignoreHintMarker)); err == nil {
		return
	}
	if ignored(ctx, moduleRoot, resultsDir) {
		return
	}
	line := resultsDir.String()
	if rel, err := filepath.Rel(moduleRoot, resultsDir.String()); err == nil && filepath.IsLocal(rel) {
		line = "/" + filepath.ToSlash(rel) + "/"
	}
	fmt.Fprintf(out, "hint: git does not ignore %s, so every run leaves untracked files: add the line %s to %s (contested never edits it; this hint is shown once for this results directory)\n",
		resultsDir, line, filepath.Join(moduleRoot, ".gitignore"))
	text := []byte("contested said once that git does not ignore this directory; delete this file to be told again\n")
	if path, err := saveArtifact(resultsDir, ignoreHintMarker, text); err != nil {
		notSaved(out, "hint", path, err)
	}
}

// ignored reports whether git ignores what a run writes in resultsDir,
// and true when it cannot tell (no git, no work tree, a directory outside
// it): the hint is for a repository that is known to track it.
func ignored(ctx context.Context, moduleRoot string, resultsDir rundir.Dir) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, p := range []string{resultsDir.String(), resultsDir.Join(ignoreProbe)} {
		cmd := exec.CommandContext(ctx, "git", "check-ignore", "-q", p)
		cmd.Dir = moduleRoot
		err := cmd.Run()
		var exit *exec.ExitError
		switch {
		case err == nil:
			return true // ignored
		case errors.As(err, &exit) && exit.ExitCode() == 1:
			continue // not ignored
		default:
			return true // 128: not a work tree, outside it; or no git
		}
	}
	return false
}
