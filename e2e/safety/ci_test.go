package safety

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contested/contested/e2e/internal/e2etest"
	"github.com/contested/contested/internal/workflowtest"
)

// hostile are an adopter's files whose output, names and registry try to
// speak for the GitHub Actions runner: a failing test that prints a
// command, a TestMain that prints one and exits, a failure message with a
// lone carriage return and terminal escapes, output faking a "--- FAIL:"
// frame, a subtest named as a command (go test writes its spaces as _),
// and an owner with a newline.
var hostile = map[string]string{
	"hostile_test.go": `package stock

import (
	"fmt"
	"testing"
)

func TestPrintsACommand(t *testing.T) {
	fmt.Println("::error title=printed::from a test's output")
	fmt.Println("  ::error title=indented::from a test's output")
	fmt.Println("##[error]from a test's output")
	t.Fail()
}

func TestCarriageReturn(t *testing.T) {
	t.Error("fine\r::error title=cr::from a carriage return\x1b[2J\x1b]0;retitled\x07")
}

func TestFakesAFrame(t *testing.T) {
	t.Run("::error title=name::from a test name", func(t *testing.T) {
		t.Error("\n--- FAIL: TestForged (0.00s)\n::error title=frame::from a forged frame")
	})
}
`,
	"tmain/tmain.go": "package tmain\n",
	"tmain/tmain_test.go": `package tmain

import (
	"fmt"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	fmt.Println("::error title=main::from TestMain")
	os.Exit(1)
}

func TestNothing(t *testing.T) {}
`,
}

// githubJob is the environment of a GitHub Actions step: its summary is
// a file the runner made, empty.
func githubJob(t *testing.T) (env []string, summary string) {
	t.Helper()
	summary = filepath.Join(t.TempDir(), "step_summary")
	if err := os.WriteFile(summary, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{"GITHUB_ACTIONS=true", "GITHUB_STEP_SUMMARY=" + summary}, summary
}

// ownCommands checks what the runner would act on in log: only the run's
// own annotations (titled "contested ..."), and at least one of them.
func ownCommands(t *testing.T, log string) {
	t.Helper()
	cs := workflowtest.Commands(log)
	own := 0
	for _, c := range cs {
		if c.Name == "error" && strings.Contains(c.Props, "title=contested") {
			own++
			continue
		}
		t.Errorf("the runner acts on %q, which the run did not write", c.Line)
	}
	if own == 0 {
		t.Errorf("no annotation of the run's own reaches the runner:\n%s", log)
	}
	if workflowtest.Stopped(log) {
		t.Errorf("the log ends with commands stopped: the runner would read no later step's commands")
	}
}

// TestNothingAnAdopterPrintsSpeaksForTheRunner runs validate under GitHub
// Actions on an adopter whose tests, TestMain, test names and registry
// print workflow commands: none reaches the runner as one, no terminal
// escape reaches the log, and validate's own annotations still do.
func TestNothingAnAdopterPrintsSpeaksForTheRunner(t *testing.T) {
	t.Parallel()
	edits := map[string]string{}
	for k, v := range hostile {
		edits[k] = v
	}
	reg, err := os.ReadFile(filepath.Join(e2etest.RepoRoot(t), "testdata", "adopter", "contested-surfaces.toml"))
	if err != nil {
		t.Fatal(err)
	}
	edits["contested-surfaces.toml"] = strings.Replace(string(reg), `owner = "stock-team"`, `owner = "stock-team\n::error title=owner::from the registry"`, 1)
	dir := e2etest.Adopter(t, edits)
	env, summary := githubJob(t)
	out, code := e2etest.Mage(t, dir, env, "validate")
	if code != 1 {
		t.Fatalf("validate: exit %d, want 1 (RED):\n%s", code, out)
	}
	// Not vacuous: the hostile text did reach the log, as data.
	for _, printed := range []string{"from a test's output", "from a carriage return", "from a forged frame", "from_a_test_name", "from TestMain"} {
		if !strings.Contains(out, printed) {
			t.Errorf("the log never shows %q: this case proved nothing", printed)
		}
	}
	ownCommands(t, out)
	if strings.Contains(out, "\x1b") {
		t.Errorf("a terminal escape reaches the log:\n%q", out)
	}
	b, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	if md := string(b); !strings.Contains(md, "### contested validate: RED") || strings.ContainsAny(md, "\r\x1b") {
		t.Errorf("the step summary is not validate's RED, or holds a carriage return or an escape:\n%q", md)
	}
}

// TestACannotRunValidateSaysWhatFailedAndHowToRepair: validate that cannot
// bring up its fault layer (exit 3) under GitHub Actions writes the job's
// summary: CANNOT RUN, the failed check and its repair (a layer refused
// at bring-up kept none until reportUpError noted them), and one
// annotation.
func TestACannotRunValidateSaysWhatFailedAndHowToRepair(t *testing.T) {
	t.Parallel()
	dir := e2etest.Adopter(t, nil)
	env, summary := githubJob(t)
	env = append(env, "CONTESTED_LAYER=external", "CONTESTED_PG_DSN=postgres://contested:contested@127.0.0.1:1/contested_test?sslmode=disable",
		"CONTESTED_TOXIPROXY_URL=http://127.0.0.1:1")
	out, code := e2etest.Mage(t, dir, env, "validate")
	if code != 3 {
		t.Fatalf("validate: exit %d, want 3 (CANNOT RUN):\n%s", code, out)
	}
	ownCommands(t, out)
	b, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	for _, want := range []string{"### contested validate: CANNOT RUN", "exit 3", "**Why:**", "fault-preflight -required"} {
		if !strings.Contains(md, want) {
			t.Errorf("the step summary does not hold %q:\n%s", want, md)
		}
	}
	// What to do names the check that failed and its fix, not only where
	// to look.
	if _, todo, _ := strings.Cut(md, "**What to do:**"); !strings.Contains(todo, "- toxiproxy") || !strings.Contains(todo, "CONTESTED\\_TOXIPROXY\\_URL") {
		t.Errorf("what to do does not name the failed check and its fix:\n%s", md)
	}
	t.Logf("the step summary:\n%s", md)
}
