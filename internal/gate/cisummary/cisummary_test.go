package cisummary

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/contested/contested/internal/gate/ladder"
	"github.com/contested/contested/internal/secret"
	"github.com/contested/contested/internal/terminal"
	"github.com/contested/contested/internal/testmodule"
)

// hostile is text a run may read from disk (a test's name, its failure
// message) that would end a property, add a line or issue a workflow
// command if it were written as it is.
const hostile = "50% done: a, b\r\n::warning::injected %0A\x1b[31m"

// shown is hostile as a reader must see it: every character as written,
// the control characters as Go escapes.
var shown = strings.NewReplacer("\n", `\n`, "\r", `\r`, "\x1b", `\x1b`).Replace(hostile)

// sampleRun is a RED run with a failing subtest whose failure and action
// are hostile, and a package that does not build.
func sampleRun() Run {
	return Run{
		Command: "validate",
		Failures: []ladder.Plain{
			{Package: "example.com/tiny/a", Test: "TestAlpha/reset", FirstLine: "a_test.go:9: " + hostile, Owner: "component (ledger-team)",
				Action: "fix: " + hostile, Verdict: "FAIL-reproducible", Replay: "CONTESTED_SEED=42 go test ./a -run '^TestAlpha$/^reset$' `x` " + hostile},
			{Package: "example.com/tiny/b", What: ladder.NotBuilt, FirstLine: "b/b.go:3:2: undefined: y", Owner: ladder.PlainOwner, Action: "fix the compile error"},
		},
	}
}

// fixture is a module with two packages: a's test file declares
// TestAlpha at line 5, and b does not build.
func fixture(t *testing.T) string {
	return testmodule.Write(t, map[string]string{
		"go.mod":      "module example.com/tiny\n\ngo 1.26\n",
		"a/a.go":      "package a\n",
		"a/a_test.go": "package a\n\nimport \"testing\"\n\nfunc TestAlpha(t *testing.T) {\n\tt.Run(\"reset\", func(t *testing.T) {\n\t\tt.Fatal(\"boom\")\n\t})\n}\n",
		"b/b.go":      "package b\n\nvar x = y\n",
	})
}

// unescape reads a workflow command's value back as GitHub's runner does.
func unescape(s string) string {
	return strings.NewReplacer("%25", "%", "%0D", "\r", "%0A", "\n", "%3A", ":", "%2C", ",").Replace(s)
}

var command = regexp.MustCompile(`^::error (.*?)::(.*)$`)

// TestAnnotationsPointAtTheTestAndNameItsOwner: one ::error line per
// failure, at the declaration of the failing test's function (a subtest's
// top-level test) or, for a package that does not build, at the file and
// line of its compile error; with the owner and action in its message;
// every value escaped so that nothing from disk ends a property, adds a
// line or issues a command of its own.
func TestAnnotationsPointAtTheTestAndNameItsOwner(t *testing.T) {
	dir := fixture(t)
	run := sampleRun()
	run.Failures = append(run.Failures, ladder.Plain{Package: "example.com/elsewhere", Test: "TestGone", FirstLine: "nowhere", Owner: "o", Action: "a"})
	var out bytes.Buffer
	if err := Publish(context.Background(), CI{GitHub: true}, run, dir, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want one per failure (3):\n%s", len(lines), out.String())
	}
	type annotation struct {
		props map[string]string
		msg   string
	}
	var got []annotation
	for _, l := range lines {
		m := command.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("not an ::error command: %q", l)
		}
		a := annotation{props: map[string]string{}, msg: unescape(m[2])}
		for _, p := range strings.Split(m[1], ",") {
			k, v, ok := strings.Cut(p, "=")
			if !ok || strings.Contains(v, ":") {
				t.Fatalf("property %q is not escaped in %q", p, l)
			}
			a.props[k] = unescape(v)
		}
		got = append(got, a)
	}
	if p := got[0].props; p["file"] != "a/a_test.go" || p["line"] != "5" || p["title"] != "contested: example.com/tiny/a TestAlpha/reset: owner component (ledger-team)" {
		t.Errorf("the failing subtest's annotation: %v", p)
	}
	for _, want := range []string{"a_test.go:9: " + shown, "owner: component (ledger-team)", "action: fix: " + shown, "verdict: FAIL-reproducible", "replay: CONTESTED_SEED=42"} {
		if !strings.Contains(got[0].msg, want) {
			t.Errorf("the message does not hold %q:\n%s", want, got[0].msg)
		}
	}
	if strings.Count(got[0].msg, "\n") != 4 {
		t.Errorf("the message has %d lines, want 5 (failure, owner, action, verdict, replay): text from disk added lines:\n%s", strings.Count(got[0].msg, "\n")+1, got[0].msg)
	}
	if p := got[1].props; p["file"] != "b/b.go" || p["line"] != "3" || !strings.Contains(got[1].msg, "owner: "+ladder.PlainOwner) {
		t.Errorf("the package that does not build: %v %q", p, got[1].msg)
	}
	if p := got[2].props; p["file"] != "" || p["line"] != "" || p["title"] == "" {
		t.Errorf("a test found nowhere is annotated without a place: %v", p)
	}
}

// TestEscapeFollowsGitHubsRules: %, CR and LF in data; also : and , in
// properties.
func TestEscapeFollowsGitHubsRules(t *testing.T) {
	if got := terminal.CommandData("50% a\r\nb: c, d"); got != "50%25 a%0D%0Ab: c, d" {
		t.Errorf("CommandData = %q", got)
	}
	if got := terminal.CommandProperty("50% a\r\nb: c, d"); got != "50%25 a%0D%0Ab%3A c%2C d" {
		t.Errorf("CommandProperty = %q", got)
	}
}

// TestPublishAppendsToTheStepSummary: under GitHub Actions the summary is
// appended to the file the runner made, after what other steps wrote,
// with every known secret masked.
func TestPublishAppendsToTheStepSummary(t *testing.T) {
	const pw = "summary-Secret-pw"
	secret.Add(pw)
	path := filepath.Join(t.TempDir(), "step_summary")
	if err := os.WriteFile(path, []byte("an earlier step's summary\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := sampleRun()
	run.Failures[0].FirstLine = "connect: password " + pw
	var out bytes.Buffer
	ci := Detect(func(k string) string {
		return map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": path}[k]
	})
	if err := Publish(context.Background(), ci, run, fixture(t), &out); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "an earlier step's summary\n### contested validate: RED") {
		t.Errorf("the summary was not appended after the earlier one:\n%s", b)
	}
	if strings.Contains(string(b), pw) || strings.Contains(out.String(), pw) {
		t.Errorf("the summary or the annotations hold the password")
	}
}

// TestPublishNeverFollowsALinkOrCreatesTheSummary: a step summary that is
// a symbolic link or does not exist is refused, and nothing is written
// through it or in its place.
func TestPublishNeverFollowsALinkOrCreatesTheSummary(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	if err := os.WriteFile(target, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "summary-link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{link, filepath.Join(dir, "missing")} {
		err := Publish(context.Background(), CI{GitHub: true, StepSummary: path}, sampleRun(), dir, &bytes.Buffer{})
		if !errors.Is(err, ErrStepSummary) {
			t.Errorf("Publish to %s: %v, want ErrStepSummary", path, err)
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "keep\n" {
		t.Errorf("the link's target was written: %q", b)
	}
	if _, err := os.Lstat(filepath.Join(dir, "missing")); err == nil {
		t.Errorf("a missing step summary was created")
	}
}

// TestOutsideCINothingChanges: without GITHUB_ACTIONS=true, Publish writes
// no annotation and leaves a step summary named by the environment alone,
// and GitLab gets no annotation either (its JUnit carries the owners).
func TestOutsideCINothingChanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "step_summary")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, env := range map[string]map[string]string{
		"no CI":                    {},
		"a summary but no Actions": {"GITHUB_STEP_SUMMARY": path},
		"GITHUB_ACTIONS=false":     {"GITHUB_ACTIONS": "false", "GITHUB_STEP_SUMMARY": path},
		"GitLab":                   {"GITLAB_CI": "true", "GITHUB_STEP_SUMMARY": path},
	} {
		t.Run(name, func(t *testing.T) {
			ci := Detect(func(k string) string { return env[k] })
			var out bytes.Buffer
			if err := Publish(context.Background(), ci, sampleRun(), t.TempDir(), &out); err != nil || out.Len() > 0 {
				t.Errorf("Publish: %v, printed %q", err, out.String())
			}
			if b, _ := os.ReadFile(path); len(b) > 0 {
				t.Errorf("the step summary was written: %q", b)
			}
			if ci.Any() != (name == "GitLab") {
				t.Errorf("Any() = %v", ci.Any())
			}
		})
	}
}

// TestAStepSummaryThatCannotBeWrittenSaysWhyAndWhatToDo: a
// GITHUB_STEP_SUMMARY whose directory does not exist, that names no file,
// that runs through a regular file, or that this user cannot write, is
// refused with what happened (naming the path and the directory) and what
// to do, and nothing is created.
func TestAStepSummaryThatCannotBeWrittenSaysWhyAndWhatToDo(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	publish := func(path string) error {
		return Publish(context.Background(), CI{GitHub: true, StepSummary: path}, sampleRun(), dir, &bytes.Buffer{})
	}
	denied := filepath.Join(dir, "locked", "step_summary")
	for _, tc := range []struct {
		name string
		path string
		err  func(path string) error
		says []string
	}{
		{"a directory that does not exist", filepath.Join(dir, "no-such-dir", "step_summary"), publish,
			[]string{"GITHUB_STEP_SUMMARY names " + filepath.Join(dir, "no-such-dir", "step_summary") + ", whose directory " + filepath.Join(dir, "no-such-dir") + " does not exist", "never creates one", "unset it", "mkdir -p", "the verdict does not change"}},
		{"a file that does not exist", filepath.Join(dir, "step_summary"), publish,
			[]string{"GITHUB_STEP_SUMMARY names " + filepath.Join(dir, "step_summary") + ", which does not exist", "touch", "unset it"}},
		{"a directory that is a regular file", filepath.Join(file, "step_summary"), publish,
			[]string{"whose directory " + file + " does not exist", "unset it"}},
		{"a file this user cannot write", denied, func(path string) error {
			return stepSummaryError(path, &fs.PathError{Op: "open", Path: path, Err: syscall.EACCES})
		}, []string{"GITHUB_STEP_SUMMARY names " + denied + ", which this process", "cannot write", "writable by this user", "unset GITHUB_STEP_SUMMARY"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err(tc.path)
			if !errors.Is(err, ErrStepSummary) {
				t.Fatalf("err = %v, want ErrStepSummary", err)
			}
			for _, want := range tc.says {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error does not say %q:\n%v", want, err)
				}
			}
			if _, serr := os.Lstat(tc.path); serr == nil {
				t.Errorf("%s was created", tc.path)
			}
		})
	}
}

// TestTheSummaryShowsCommandsAsCopyableCode: the step summary shows a
// failure's replay, and the commands its action names, as code spans whose
// content is the command byte for byte: never backslash-escaped, never raw.
func TestTheSummaryShowsCommandsAsCopyableCode(t *testing.T) {
	replay := "CONTESTED_SEED=42 go test ./my_pkg -run '^TestA_b$' -count=1 | tee `out` *<$(x)>"
	run := Run{Command: "validate", Failures: []ladder.Plain{{Package: "example.com/m/my_pkg", Test: "TestA_b", FirstLine: "x", Owner: "test author", Replay: replay,
		Action: "it fails every time alone: reproduce with " + replay + " and fix it, or walk it again: go tool mage arbitrate TestA_b"}}}
	var b bytes.Buffer
	if err := WriteMarkdown(&b, run); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"  - replay: ``" + replay + "``\n",
		"reproduce with ``" + replay + "`` and fix it",
		"walk it again: `go tool mage arbitrate TestA_b`",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the summary lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, `my\_pkg -run`) || strings.Contains(md, `arbitrate TestA\_b`) {
		t.Errorf("the summary backslash-escapes a command:\n%s", md)
	}
}
