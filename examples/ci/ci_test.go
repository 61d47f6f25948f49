package ci

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/contested/contested/internal/magetest"
	"github.com/contested/contested/internal/tier"
)

// root is the module root, where go tool runs the pinned tools.
const root = "../.."

// The CI files an adopter copies: one job, and shards with a merge, for
// each CI system.
var (
	githubFiles = []string{"github/contested.yml", "github/contested-shards.yml"}
	gitlabFiles = []string{"gitlab/contested.gitlab-ci.yml", "gitlab/contested-shards.gitlab-ci.yml"}
)

// TestTheCIFilesAreTheOnesDocumented: these are all the CI files, and the
// README points at each.
func TestTheCIFilesAreTheOnesDocumented(t *testing.T) {
	found, _ := filepath.Glob("*/*.yml")
	if want := append(slices.Clone(githubFiles), gitlabFiles...); !sameSet(found, want) {
		t.Errorf("the CI files are %v; the tests check %v", found, want)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		if !strings.Contains(string(readme), "examples/ci/"+f) {
			t.Errorf("the README does not point at examples/ci/%s", f)
		}
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// actionlint runs the actionlint go.mod pins (go tool actionlint) on
// files and returns its output and whether it passed.
func actionlint(t *testing.T, files ...string) (string, bool) {
	t.Helper()
	var abs []string
	for _, f := range files {
		p, err := filepath.Abs(f)
		if err != nil {
			t.Fatal(err)
		}
		abs = append(abs, p)
	}
	cmd := exec.Command("go", append([]string{"tool", "actionlint", "-no-color", "-oneline"}, abs...)...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if _, failed := err.(*exec.ExitError); err != nil && !failed {
		t.Fatalf("go tool actionlint: %v\n%s", err, out)
	}
	return string(out), err == nil
}

// TestTheGitHubWorkflowsPassActionlint lints the workflows with actionlint
// (syntax, expressions, the matrix and strategy contexts, the inputs of
// the actions they use); a workflow with a misspelt input and an unknown
// context fails it, so the check can fail.
func TestTheGitHubWorkflowsPassActionlint(t *testing.T) {
	if out, ok := actionlint(t, githubFiles...); !ok {
		t.Errorf("actionlint:\n%s", out)
	}
	bad := filepath.Join(t.TempDir(), "bad.yml")
	src, err := os.ReadFile(githubFiles[1])
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(strings.Replace(string(src), "go-version-file:", "go-verison-file:", 1), "matrix.shard }}/", "matrix.shards }}/", 1)
	if err := os.WriteFile(bad, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	out, ok := actionlint(t, bad)
	if ok || !strings.Contains(out, "go-verison-file") || !strings.Contains(out, "shards") {
		t.Errorf("actionlint passed a broken workflow (%v):\n%s", ok, out)
	}
}

// TestTheGitLabFilesFollowGitLabsSchema checks the GitLab files against
// the schema in gitlab_test.go; each way of breaking a file is refused
// with its line, so the check can fail.
func TestTheGitLabFilesFollowGitLabsSchema(t *testing.T) {
	for _, f := range gitlabFiles {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range gitlabProblems(f, src) {
			t.Error(p)
		}
	}
	src, err := os.ReadFile(gitlabFiles[1])
	if err != nil {
		t.Fatal(err)
	}
	breaks := []struct{ name, old, new, says string }{
		{"an unknown job keyword", "  parallel: 3\n", "  paralel: 3\n", `job contested-shard has no keyword "paralel"`},
		{"an unknown artifacts keyword", "    when: always\n    paths:\n      - shards/", "    when: always\n    path:\n      - shards/", `artifacts has no keyword "path"`},
		{"a job's when", "  when: always\n  variables:", "  when: allways\n  variables:", `when is "allways"`},
		{"artifacts' when", "    when: always\n    paths:\n      - shards/", "    when: manual\n    paths:\n      - shards/", `artifacts when is "manual"`},
		{"a cache policy", "policy: pull\n", "policy: fetch\n", `cache policy is "fetch"`},
		{"a need of no job", "    - contested-shard\n", "    - contested-shards\n", `needs "contested-shards", which this file does not define`},
		{"parallel out of range", "  parallel: 3\n", "  parallel: 201\n", "parallel must be a number from 1 to 200"},
		{"a job that runs nothing", "  script:\n    # A shard whose artifacts are missing is refused by name.\n    - go tool mage -compile \"$PWD/bin/contested-mage\"\n    - ./bin/contested-mage program-gate -merge shards/*\n", "", "runs nothing"},
		{"a timeout that is no duration", "timeout: 30m", "timeout: half an hour", "is not a duration"},
		{"a stage that does not exist", "  timeout: 30m\n", "  timeout: 30m\n  stage: verify\n", `stage "verify" is not one of the stages`},
		{"a variable's name", "    CONTESTED_LAYER: embedded", "    CONTESTED-LAYER: embedded", `variable name "CONTESTED-LAYER"`},
		{"an unknown report", "      junit: test-results", "      junitxml: test-results", `artifacts reports has no keyword "junitxml"`},
	}
	for _, b := range breaks {
		t.Run(b.name, func(t *testing.T) {
			if !strings.Contains(string(src), b.old) {
				t.Fatalf("the file no longer holds %q", b.old)
			}
			got := gitlabProblems("shards.yml", []byte(strings.Replace(string(src), b.old, b.new, 1)))
			if len(got) != 1 || !strings.Contains(got[0], b.says) || !regexp.MustCompile(`^shards\.yml:\d+: `).MatchString(got[0]) {
				t.Errorf("problems %q; want one, with its line, saying %q", got, b.says)
			}
		})
	}
}

// ciFile is what the tests read of a CI file: the commands its jobs run,
// the actions it uses, and what it keeps as artifacts.
type ciFile struct {
	commands  []string
	jobs      map[string][]string // each job's commands, in order
	uses      []string
	artifacts []string // the paths uploaded whatever the verdict
}

// readGitHub reads a workflow's steps.
func readGitHub(t *testing.T, path string) ciFile {
	t.Helper()
	var wf struct {
		Jobs map[string]struct {
			Steps []struct {
				Uses string            `yaml:"uses"`
				Run  string            `yaml:"run"`
				If   string            `yaml:"if"`
				With map[string]string `yaml:"with"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	readYAML(t, path, &wf)
	f := ciFile{jobs: map[string][]string{}}
	for name, job := range wf.Jobs {
		for _, s := range job.Steps {
			if s.Run != "" {
				lines := strings.Split(strings.TrimSpace(s.Run), "\n")
				f.commands = append(f.commands, lines...)
				f.jobs[name] = append(f.jobs[name], lines...)
			}
			if s.Uses != "" {
				f.uses = append(f.uses, s.Uses)
			}
			if strings.HasPrefix(s.Uses, "actions/upload-artifact@") && s.If == "always()" {
				f.artifacts = append(f.artifacts, s.With["path"])
			}
		}
	}
	return f
}

// readGitLab reads a GitLab file's jobs.
func readGitLab(t *testing.T, path string) ciFile {
	t.Helper()
	var jobs map[string]struct {
		Script    []string `yaml:"script"`
		Artifacts struct {
			When  string   `yaml:"when"`
			Paths []string `yaml:"paths"`
		} `yaml:"artifacts"`
	}
	readYAML(t, path, &jobs)
	f := ciFile{jobs: map[string][]string{}}
	for name, j := range jobs {
		f.commands = append(f.commands, j.Script...)
		f.jobs[name] = j.Script
		if j.Artifacts.When == "always" {
			f.artifacts = append(f.artifacts, j.Artifacts.Paths...)
		}
	}
	return f
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func readCI(t *testing.T, path string) ciFile {
	if strings.HasPrefix(path, "github/") {
		return readGitHub(t, path)
	}
	return readGitLab(t, path)
}

// TestEveryCommandTheCIFilesRunExists holds every command of the CI files
// that runs a target to the targets the magefile has (by name or alias)
// and the flags each takes; the single-job files run validate, the shard
// files validate -shard and program-gate -merge. Each job runs its targets
// from the binary an earlier line of it compiled, never through go tool
// mage, whose go command a SIGTERM to the process group can end with exit
// 0 (magetest's tests show each form refused).
func TestEveryCommandTheCIFilesRunExists(t *testing.T) {
	tier.Full(t, "the magefile compiled")
	targets := magetest.Compile(t, root).Targets()
	for _, path := range append(slices.Clone(githubFiles), gitlabFiles...) {
		t.Run(path, func(t *testing.T) {
			var ran []string
			for job, commands := range readCI(t, path).jobs {
				calls, problems := jobCalls(targets, job, commands)
				ran = append(ran, calls...)
				for _, p := range problems {
					t.Error(p)
				}
			}
			want := []string{"validate"}
			if strings.Contains(path, "shards") {
				want = []string{"validate -shard", "programGate -merge"}
			}
			if !sameSet(ran, want) {
				t.Errorf("the file runs %q, want %q", ran, want)
			}
		})
	}
	for _, bad := range []struct {
		commands []string
		says     string
	}{
		{[]string{"go tool mage validate"}, "runs a target through go tool"},
		{[]string{"go tool mage -compile ./bin/contested-mage", "./bin/contested-mage validate"}, "lands there"},
		{[]string{"go tool mage -compile \"$PWD/bin/contested-mage\"", "./bin/contested-mage validate -shards=1/2"}, "takes no flag -shards"},
		{[]string{"go tool vet ./..."}, "a tool other than mage"},
	} {
		if _, problems := jobCalls(targets, "bad", bad.commands); len(problems) != 1 || !strings.Contains(problems[0], bad.says) {
			t.Errorf("%q: problems %q, want one saying %q", bad.commands, problems, bad.says)
		}
	}
}

// jobCalls are the targets one job's commands run, each checked: the
// binary that runs it was compiled by an earlier line of the job.
func jobCalls(targets map[string]magetest.Target, job string, commands []string) (ran, problems []string) {
	var compiled []string
	for _, c := range commands {
		if strings.HasPrefix(strings.TrimSpace(c), "go tool ") && !strings.Contains(c, "go tool mage") {
			problems = append(problems, fmt.Sprintf("job %s: %q runs a tool other than mage", job, c))
		}
		call, wrong, found := magetest.ParseCall(targets, c, compiled...)
		for _, p := range wrong {
			problems = append(problems, fmt.Sprintf("job %s: %s", job, p))
		}
		if call.Compiled != "" {
			compiled = append(compiled, call.Compiled)
		}
		if !found || call.Target == "" {
			continue
		}
		ran = append(ran, call.String())
		if strings.Contains(c, "go tool mage") {
			problems = append(problems, fmt.Sprintf("job %s: %q runs a target through go tool, which a SIGTERM to the process group can end with exit 0; compile the targets once (go tool mage -compile \"$PWD/bin/contested-mage\") and run the binary", job, c))
		}
	}
	return ran, problems
}

// The actions the workflows may use, and the packages the GitLab files may
// install: what the README says an adopter needs (Go; a Docker engine, or
// the Postgres binaries of the embedded layer; Chromium only for the
// degraded stage), and keeping test-results.
var (
	allowedActions = []string{"actions/checkout", "actions/setup-go", "actions/upload-artifact", "actions/download-artifact", "actions/cache/restore", "actions/cache/save"}
	allowedPackage = []string{"postgresql", "chromium"}
	installs       = regexp.MustCompile(`\b(apt-get|apt|apk|yum|dnf|brew|pip3?|npm|curl|wget|go install|go get)\b`)
	aptInstall     = regexp.MustCompile(`apt-get install ((?:-\S+\s+)*)(.+)$`)
)

// TestTheCIFilesInstallOnlyWhatAnAdopterNeeds: the workflows use only the
// checkout, Go, cache and artifact actions and install nothing; the GitLab
// files install only Debian's postgresql (the embedded layer's binaries);
// every file keeps the results directory as an artifact whatever the
// verdict.
func TestTheCIFilesInstallOnlyWhatAnAdopterNeeds(t *testing.T) {
	for _, path := range append(slices.Clone(githubFiles), gitlabFiles...) {
		t.Run(path, func(t *testing.T) {
			f := readCI(t, path)
			for _, u := range f.uses {
				name, _, _ := strings.Cut(u, "@")
				if !slices.Contains(allowedActions, name) {
					t.Errorf("uses %s, which an adopter does not need", u)
				}
			}
			for _, c := range f.commands {
				for _, part := range strings.Split(c, "&&") {
					if !installs.MatchString(part) || strings.Contains(part, "apt-get update") {
						continue
					}
					m := aptInstall.FindStringSubmatch(strings.TrimSpace(part))
					if m == nil || strings.HasPrefix(path, "github/") {
						t.Errorf("%q installs something the README does not ask for", c)
						continue
					}
					for _, p := range strings.Fields(m[2]) {
						if !slices.Contains(allowedPackage, p) {
							t.Errorf("%q installs %s", c, p)
						}
					}
				}
			}
			kept := false
			for _, a := range f.artifacts {
				kept = kept || a == "test-results/" || a == "shards/"
			}
			if !kept {
				t.Errorf("the results directory is not kept as an artifact whatever the verdict (kept: %v)", f.artifacts)
			}
		})
	}
}
