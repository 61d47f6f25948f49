package command

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/gate/ladder"
	"github.com/contested/contested/internal/gate/report"
	"github.com/contested/contested/internal/gate/shard"
	"github.com/contested/contested/internal/rundir"
)

// ciReport is a RED validate with one failing test, as finish holds it.
func ciReport() *ValidateReport {
	return &ValidateReport{RunID: "gh-7-1", Layer: "containers", Reasons: []string{"battery failed (1 test in 1 package)"},
		BatteryFailures: []ladder.Plain{{Package: "example.com/m", Test: "TestB", FirstLine: "b_test.go:3: boom",
			Owner: "component (ledger-team)", Action: "fix the store", Replay: "CONTESTED_SEED=7 go test ./ -run '^TestB$'"}},
		Battery: &battery.Result{Elapsed: time.Second,
			Packages: []battery.Package{{Name: "example.com/m", Action: "fail"}},
			Tests:    []battery.Test{{Package: "example.com/m", Name: "TestB", Action: "fail", Output: "b_test.go:3: boom"}}},
	}
}

// finishCI does what validate's finish does for CI (the JUnit and the
// summary) in a results directory of its own, and returns what it printed
// and the JUnit it wrote.
func finishCI(t *testing.T, rep *ValidateReport) (printed, junit string) {
	t.Helper()
	root := t.TempDir()
	var out strings.Builder
	writeReports(rundir.Dir(root), report.Page{Title: "contested validate", Battery: rep.Battery, Plain: rep.BatteryFailures}, &out)
	publishCI(t.TempDir(), rep.ciRun(), &out)
	b, err := os.ReadFile(filepath.Join(root, "battery", "junit.xml"))
	if err != nil {
		t.Fatal(err)
	}
	return out.String(), string(b)
}

// clearCI unsets every variable by which a CI is detected.
func clearCI(t *testing.T) {
	for _, k := range []string{"GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_WORKSPACE", "GITLAB_CI"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

// TestValidateSpeaksCIOnlyUnderCI: outside CI validate prints no workflow
// command, writes no step summary and its JUnit names no owner; under
// GitHub Actions it appends the summary and annotates the failing test;
// under GitLab its JUnit carries the owner and action.
func TestValidateSpeaksCIOnlyUnderCI(t *testing.T) {
	summary := filepath.Join(t.TempDir(), "step_summary")
	if err := os.WriteFile(summary, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Run("outside CI", func(t *testing.T) {
		clearCI(t)
		t.Setenv("CI", "true") // a CI this project does not speak to changes nothing either
		printed, junit := finishCI(t, ciReport())
		if strings.Contains(printed, "::") || strings.Contains(junit, "contested.owner") || strings.Contains(junit, "component (ledger-team)") {
			t.Errorf("outside CI the output changed:\n%s\n%s", printed, junit)
		}
		if b, _ := os.ReadFile(summary); len(b) > 0 {
			t.Errorf("outside CI the step summary was written")
		}
	})
	t.Run("GitHub Actions", func(t *testing.T) {
		clearCI(t)
		t.Setenv("GITHUB_ACTIONS", "true")
		t.Setenv("GITHUB_STEP_SUMMARY", summary)
		printed, _ := finishCI(t, ciReport())
		if !strings.Contains(printed, "::error title=contested%3A example.com/m TestB%3A owner component (ledger-team)::b_test.go:3: boom%0Aowner: component (ledger-team)%0Aaction: fix the store") {
			t.Errorf("no annotation for the failing test:\n%s", printed)
		}
		b, _ := os.ReadFile(summary)
		if !strings.Contains(string(b), "### contested validate: RED") || !strings.Contains(string(b), "owner **component \\(ledger-team\\)**") {
			t.Errorf("the step summary:\n%s", b)
		}
	})
	t.Run("GitLab", func(t *testing.T) {
		clearCI(t)
		t.Setenv("GITLAB_CI", "true")
		printed, junit := finishCI(t, ciReport())
		if strings.Contains(printed, "::") || !strings.Contains(junit, `<property name="contested.owner" value="component (ledger-team)">`) ||
			!strings.Contains(junit, "action: fix the store") {
			t.Errorf("under GitLab the JUnit does not carry the owner:\n%s\n%s", printed, junit)
		}
	})
}

// TestMergeShowsTheShardsFailures: under a CI the merge's failures are
// the ones the shards' validate.json list, with the owner their ladder
// gave, then each failure of the union's battery that none lists; outside
// CI it has none, and its reports stay as they were.
func TestMergeShowsTheShardsFailures(t *testing.T) {
	one, two := t.TempDir(), t.TempDir()
	walked := ladder.Plain{Package: "example.com/m", Test: "TestB", Owner: "component (ledger-team)", Action: "fix the store"}
	if _, err := saveJSON(rundir.Dir(one), "validate.json", map[string]any{"battery_failures": []ladder.Plain{walked}}); err != nil {
		t.Fatal(err)
	}
	res := &shard.Result{SharedRunID: "gh-7-1", Shards: []shard.Shard{{Dir: one}, {Dir: two}}, Battery: &battery.Result{
		Packages: []battery.Package{{Name: "example.com/m", Action: "fail"}, {Name: "example.com/n", Action: "fail", Output: "n.go:1:1: undefined: x\nFAIL example.com/n [build failed]"}},
		Tests:    []battery.Test{{Package: "example.com/m", Name: "TestB", Action: "fail"}, {Package: "example.com/m", Name: "TestC", Action: "fail", Output: "c_test.go:9: boom"}},
	}}
	rep := &MergeReport{Green: false, Reasons: []string{"battery failed in a shard"}}
	clearCI(t)
	if run := mergeRun(res, rep); len(run.Failures) != 0 || run.Command != "program-gate -merge" {
		t.Errorf("outside CI the merge lists failures: %+v", run.Failures)
	}
	t.Setenv("GITHUB_ACTIONS", "true")
	var got []string
	for _, f := range mergeRun(res, rep).Failures {
		got = append(got, f.Package+" "+f.Test+" "+f.What+": "+f.Owner)
	}
	want := []string{"example.com/m TestB : component (ledger-team)", "example.com/m TestC : " + ladder.PlainOwner, "example.com/n  " + ladder.NotBuilt + ": " + ladder.PlainOwner}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the merge's failures:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
