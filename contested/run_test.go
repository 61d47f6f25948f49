package contested

import (
	"errors"
	"os"
	"os/exec"
	"regexp"
	"testing"

	"github.com/contested/contested/internal/envvar"
)

// runChildEnv, set in a child test binary, makes
// TestRunLetsTestMainTearDownAndExitWithTheCode fail on purpose after
// printing the results directory its TestMain set up.
const runChildEnv = "CONTESTED_RUN_PROBE"

// TestRunLetsTestMainTearDownAndExitWithTheCode runs this package's test
// binary again with one failing test: its TestMain (which calls Run, then
// removes the results directory it made) must exit with the tests' code,
// 1, and must have removed the directory, which a TestMain that called
// Main (exiting inside) never reaches.
func TestRunLetsTestMainTearDownAndExitWithTheCode(t *testing.T) {
	if os.Getenv(runChildEnv) != "" {
		t.Logf("results dir: %s", os.Getenv(envvar.ResultsDir))
		t.Fatal("failing on purpose, for the parent test")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunLetsTestMainTearDownAndExitWithTheCode$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), runChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("child: err = %v, want exit status 1 (the failing test's code):\n%s", err, out)
	}
	m := regexp.MustCompile(`results dir: (\S+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("child did not print its results directory:\n%s", out)
	}
	if _, err := os.Stat(string(m[1])); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the child's results directory %s is still there (stat: %v): its TestMain's tear-down after Run did not run", m[1], err)
	}
}
