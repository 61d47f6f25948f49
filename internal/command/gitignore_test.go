package command

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/rundir"
)

// gitRepo makes dir a git work tree with the given .gitignore ("" for
// none), or skips when git is not installed.
func gitRepo(t *testing.T, dir, gitignore string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	if gitignore != "" {
		if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte(gitignore), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTheIgnoreHintIsGivenOncePerResultsDirectory: in a work tree that
// does not ignore the results directory the hint names the line to add,
// once; it is never given where git ignores the directory or there is no
// work tree; .gitignore is never touched.
func TestTheIgnoreHintIsGivenOncePerResultsDirectory(t *testing.T) {
	tests := []struct {
		name      string
		git       bool
		gitignore string
		hint      bool
	}{
		{"a work tree that tracks it", true, "", true},
		{"a .gitignore that ignores other things", true, "*.log\n*.json\n", true},
		{"ignored as a directory", true, "test-results/\n", false},
		{"ignored by its contents", true, "/test-results/*\n", false},
		{"no work tree", false, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mod := t.TempDir()
			if tt.git {
				gitRepo(t, mod, tt.gitignore)
			}
			results := filepath.Join(mod, "test-results")
			if err := os.Mkdir(results, 0o755); err != nil {
				t.Fatal(err)
			}
			var first, second strings.Builder
			hintIgnore(context.Background(), mod, rundir.Dir(results), &first)
			hintIgnore(context.Background(), mod, rundir.Dir(results), &second)
			if got := strings.Contains(first.String(), "hint: git does not ignore"); got != tt.hint {
				t.Fatalf("hint given %v, want %v:\n%s", got, tt.hint, first.String())
			}
			if tt.hint && !strings.Contains(first.String(), "add the line /test-results/ to "+filepath.Join(mod, ".gitignore")) {
				t.Errorf("the hint does not say what line to add where:\n%s", first.String())
			}
			if second.Len() != 0 {
				t.Errorf("the hint was given twice:\n%s", second.String())
			}
			_, err := os.Stat(filepath.Join(results, ignoreHintMarker))
			if marked := err == nil; marked != tt.hint {
				t.Errorf("marker present %v, want %v", marked, tt.hint)
			}
			b, _ := os.ReadFile(filepath.Join(mod, ".gitignore"))
			if string(b) != tt.gitignore {
				t.Errorf(".gitignore changed: %q, was %q", b, tt.gitignore)
			}
		})
	}
}

// TestTargetsGiveTheIgnoreHint: a target run in a module whose git work
// tree does not ignore test-results/ says so before it runs, once (here
// program-gate and validate against a layer that cannot run, so nothing
// else happens).
func TestTargetsGiveTheIgnoreHint(t *testing.T) {
	mod := module(t)
	gitRepo(t, mod, "")
	dead := deadAddr(t)
	t.Setenv(envvar.Layer, "")
	t.Setenv(envvar.ToxiproxyURL, "http://"+dead)
	t.Setenv(envvar.PostgresDSN, "postgres://u:p@"+dead+"/db")
	t.Setenv(envvar.ResultsDir, "")
	t.Setenv(envvar.Surfaces, "")
	t.Chdir(mod)
	var first, second strings.Builder
	if err := ProgramGate(context.Background(), ProgramGateOptions{Dir: mod, Out: &first}); ExitCode(err) != ExitCannotRun {
		t.Fatalf("program-gate: %v, want exit 3:\n%s", err, first.String())
	}
	if err := Validate(context.Background(), ValidateOptions{Dir: mod, Out: &second}); ExitCode(err) != ExitCannotRun {
		t.Fatalf("validate: %v, want exit 3:\n%s", err, second.String())
	}
	if n := strings.Count(first.String(), "hint: git does not ignore"); n != 1 {
		t.Errorf("program-gate gave the hint %d times, want once:\n%s", n, first.String())
	}
	if strings.Contains(second.String(), "hint:") {
		t.Errorf("validate gave the hint again for the same results directory:\n%s", second.String())
	}
}
