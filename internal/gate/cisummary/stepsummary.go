package cisummary

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// stepSummaryError says why the step summary at path could not be
// written (err is what the system said) and what to do, wrapping
// ErrStepSummary. contested appends to the file the runner made and never
// creates one (nor its directory): a summary GitHub does not read would be
// a file nobody asked for. So a missing file or directory is a
// GITHUB_STEP_SUMMARY that names the wrong place, most often a container
// job that does not mount the runner's file-commands directory, or a
// variable copied to a machine that is not the runner.
func stepSummaryError(path string, err error) error {
	dir := filepath.Dir(path)
	const keep = "the verdict does not change, and test-results/ holds it"
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		what := fmt.Sprintf("GITHUB_STEP_SUMMARY names %s, which does not exist", path)
		if info, derr := os.Stat(dir); derr != nil || !info.IsDir() {
			what = fmt.Sprintf("GITHUB_STEP_SUMMARY names %s, whose directory %s does not exist", path, dir)
		}
		return fmt.Errorf("%w: %s; contested appends to the file the runner creates and never creates one: under GitHub Actions leave GITHUB_STEP_SUMMARY as the runner sets it (a container job must mount the runner's file-commands directory), elsewhere unset it, or create the file first (mkdir -p %s && touch %s); %s",
			ErrStepSummary, what, dir, path, keep)
	case errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS):
		return fmt.Errorf("%w: GITHUB_STEP_SUMMARY names %s, which this process (uid %d) cannot write (%v): make the file and its directory %s writable by this user (a container job runs as the runner's user, or mounts the directory read-write), or unset GITHUB_STEP_SUMMARY; %s",
			ErrStepSummary, path, os.Geteuid(), err, dir, keep)
	default:
		return fmt.Errorf("%w: %s: %w; %s", ErrStepSummary, path, err, keep)
	}
}
