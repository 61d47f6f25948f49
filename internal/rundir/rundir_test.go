package rundir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func write(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// TestARunStartsWithOnlyItsOwnEvidence: the pages and issue bodies a RED
// run left are moved under previous/<its run id>/ before the next run
// writes its own; what every run shares (the history, the records the
// gate purges itself) stays; the last three runs' are kept, older ones
// removed.
func TestARunStartsWithOnlyItsOwnEvidence(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "linearizability", "TestQueue_isolate.html"))
	write(t, filepath.Join(root, "ladder", "TestQueueContract_isolate.md"))
	write(t, filepath.Join(root, "ladder", "reruns", "TestQueueContract_isolate", "run-1", "linearizability", "x.html"))
	write(t, filepath.Join(root, "history", "outcomes.jsonl"))
	var out strings.Builder
	moved, err := Dir(root).Rotate("red-1", &out)
	if err != nil {
		t.Fatal(err)
	}
	if len(moved) != 2 {
		t.Errorf("moved %v, want linearizability and ladder", moved)
	}
	for _, gone := range []string{"linearizability", "ladder"} {
		if exists(filepath.Join(root, gone)) {
			t.Errorf("%s is still in the results directory", gone)
		}
	}
	for _, kept := range []string{"previous/red-1/linearizability/TestQueue_isolate.html", "previous/red-1/ladder/TestQueueContract_isolate.md", "history/outcomes.jsonl"} {
		if !exists(filepath.Join(root, kept)) {
			t.Errorf("%s is missing", kept)
		}
	}
	if !strings.Contains(out.String(), "previous/red-1") {
		t.Errorf("the move is not said: %q", out.String())
	}
	for i := 2; i <= 5; i++ {
		time.Sleep(20 * time.Millisecond) // distinct modification times
		write(t, filepath.Join(root, "ladder", "TestX.md"))
		if _, err := Dir(root).Rotate("red-"+string(rune('0'+i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(root, Previous))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "red-3,red-4,red-5" {
		t.Errorf("previous/ holds %v, want the last three runs: red-3, red-4, red-5", names)
	}
}

// TestRotateFollowsNoLink: a results directory whose ladder/ is a link to
// somewhere else has the link moved aside, and what it pointed at is left
// as it was; an odd run id stays one path element inside previous/.
func TestRotateFollowsNoLink(t *testing.T) {
	root, elsewhere := t.TempDir(), t.TempDir()
	write(t, filepath.Join(elsewhere, "keep.md"))
	if err := os.Symlink(elsewhere, filepath.Join(root, "ladder")); err != nil {
		t.Fatal(err)
	}
	if _, err := Dir(root).Rotate("../../escape", nil); err != nil {
		t.Fatal(err)
	}
	if !exists(filepath.Join(elsewhere, "keep.md")) {
		t.Error("the link's target lost its file")
	}
	fi, err := os.Lstat(filepath.Join(root, Previous, "_.._escape", "ladder"))
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was not moved as a link under previous/: %v", err)
	}
}

// TestNothingToRotate: a fresh results directory, or none at all, is
// left as it is.
func TestNothingToRotate(t *testing.T) {
	root := t.TempDir()
	if moved, err := Dir(root).Rotate("r", nil); err != nil || len(moved) > 0 || exists(filepath.Join(root, Previous)) {
		t.Errorf("moved %v, %v; previous/ made: %v", moved, err, exists(filepath.Join(root, Previous)))
	}
	if _, err := Dir(filepath.Join(root, "none")).Rotate("r", nil); err != nil {
		t.Error(err)
	}
}

// TestTheFindingsMoveAsideAndThePlanStays: a run's findings are its own
// and move aside with its pages; the plan is no run's, and stays for
// validate -plan to read.
func TestTheFindingsMoveAsideAndThePlanStays(t *testing.T) {
	root := t.TempDir()
	for _, f := range append([]string{"findings.md", "findings.json"}, Plans...) {
		write(t, filepath.Join(root, f))
	}
	if _, err := Dir(root).Rotate("run-1", nil); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"findings.md", "findings.json"} {
		if exists(filepath.Join(root, f)) || !exists(filepath.Join(root, Previous, "run-1", f)) {
			t.Errorf("%s was not moved under previous/run-1", f)
		}
	}
	for _, f := range Plans {
		if !exists(filepath.Join(root, f)) {
			t.Errorf("%s was moved aside", f)
		}
	}
}
