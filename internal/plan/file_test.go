package plan

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/contested/contested/internal/rundir"
)

// TestTheFilesAreTheLayouts: plan.md and plan.json are the names the
// results directory's layout keeps (and never moves aside).
func TestTheFilesAreTheLayouts(t *testing.T) {
	if !slices.Equal(rundir.Plans, []string{MarkdownName, JSONName}) {
		t.Errorf("rundir.Plans = %v, want %s and %s", rundir.Plans, MarkdownName, JSONName)
	}
	for _, a := range rundir.Artifacts {
		if slices.Contains(rundir.Plans, a) {
			t.Errorf("%s is among the artifacts a run moves aside: validate -plan could not read it", a)
		}
	}
}

// TestCheckRefusesAScenarioWithoutAnOracleOrABudget: validate -plan must
// never improvise what the plan should have decided.
func TestCheckRefusesAScenarioWithoutAnOracleOrABudget(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*Scenario)
		says  string
		fails bool
	}{
		{"a whole scenario passes", func(*Scenario) {}, "", false},
		{"no oracle", func(s *Scenario) { s.Oracle = Oracle{Model: "idempotent"} }, "has no oracle", true},
		{"no smoke budget", func(s *Scenario) { s.Budget.Smoke = "" }, "no budget", true},
		{"no release and no disclosure", func(s *Scenario) { s.Budget.Release, s.Budget.ReleaseNotProvided = "", "" }, "no budget", true},
		{"a disclosed release is a budget", func(s *Scenario) { s.Budget.Release = "" }, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Build(input(t, depositRegistry, "deposit/deposit.go"))
			tt.edit(&p.Scenarios[0])
			err := Check(p)
			if tt.fails != (err != nil) || tt.fails && (!errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), "go back to go tool mage plan")) {
				t.Errorf("Check = %v, want an error: %v", err, tt.fails)
			}
			if tt.fails && !strings.Contains(err.Error(), "scenario "+p.Scenarios[0].ID+" ") {
				t.Errorf("the error does not name the scenario: %v", err)
			}
		})
	}
}

// TestReadAPlan: plan.json reads back as it was written, from its own
// path or from the plan.md beside it; anything else is refused.
func TestReadAPlan(t *testing.T) {
	dir := t.TempDir()
	p := Build(input(t, depositRegistry, "deposit/deposit.go"))
	b, _ := json.Marshal(p)
	if err := os.WriteFile(filepath.Join(dir, JSONName), b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(dir, JSONName), filepath.Join(dir, MarkdownName)} {
		got, err := Read(path)
		if err != nil {
			t.Fatalf("Read(%s): %v", path, err)
		}
		if got.SHA256 != p.SHA256 || got.Edited() {
			t.Errorf("Read(%s): sum %s (edited %v), want %s", path, got.SHA256, got.Edited(), p.SHA256)
		}
	}
	bad := map[string]string{
		"not json":       "# a plan",
		"another schema": `{"schema": "contested/plan@9"}`,
	}
	for name, content := range bad {
		path := filepath.Join(dir, name+".json")
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Read(path); !errors.Is(err, ErrRead) {
			t.Errorf("Read(%s) = %v, want ErrRead", name, err)
		}
	}
	if _, err := Read(filepath.Join(dir, "missing.json")); !errors.Is(err, ErrRead) {
		t.Errorf("a missing plan: %v", err)
	}
}

// TestAuthorNeverOverwritesAndCommitsNothing: author mode writes each
// skeleton at its target, leaves an existing file or a link alone, refuses
// a skeleton without the generated header, and says which is which.
func TestAuthorNeverOverwritesAndCommitsNothing(t *testing.T) {
	in := input(t, depositRegistry, "deposit/deposit.go", "lock/lease.go")
	p := Build(in)
	var news []Scenario
	for _, s := range p.Scenarios {
		if s.Skeleton != "" {
			news = append(news, s)
		}
	}
	if len(news) < 4 {
		t.Fatalf("want four skeletons to author, have %d", len(news))
	}
	for _, d := range []string{"deposit", "lock"} {
		if err := os.MkdirAll(filepath.Join(in.Root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mine := filepath.Join(in.Root, filepath.FromSlash(news[0].Target))
	if err := os.WriteFile(mine, []byte("package deposit // mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "elsewhere.go")
	if err := os.Symlink(outside, filepath.Join(in.Root, filepath.FromSlash(news[1].Target))); err != nil {
		t.Fatal(err)
	}
	for i := range p.Scenarios {
		if p.Scenarios[i].ID == news[2].ID {
			p.Scenarios[i].Skeleton = strings.TrimPrefix(p.Scenarios[i].Skeleton, Header)
		}
	}
	got, err := Author(in.Root, p)
	if err != nil {
		t.Fatal(err)
	}
	says := map[string]string{}
	wrote := 0
	for _, a := range got {
		says[a.Scenario] = a.Why
		if a.Wrote {
			wrote++
			b, err := os.ReadFile(filepath.Join(in.Root, filepath.FromSlash(a.Target)))
			if err != nil || !strings.HasPrefix(string(b), Header) {
				t.Errorf("%s: wrote %q, %v", a.Target, b, err)
			}
		}
	}
	if b, _ := os.ReadFile(mine); string(b) != "package deposit // mine\n" {
		t.Errorf("an existing file was overwritten: %q", b)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Errorf("a link was followed out of the module")
	}
	for id, want := range map[string]string{news[0].ID: "never overwritten", news[1].ID: "never overwritten", news[2].ID: "lacks the generated header"} {
		if !strings.Contains(says[id], want) {
			t.Errorf("scenario %s: %q, want it to say %q", id, says[id], want)
		}
	}
	if wrote != len(news)-3 {
		t.Errorf("wrote %d skeletons, want %d", wrote, len(news)-3)
	}
	if _, err := os.Stat(filepath.Join(in.Root, ".git")); err == nil {
		t.Errorf("author mode made a repository")
	}
}
