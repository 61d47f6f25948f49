package validate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contested/contested/e2e/internal/e2etest"
)

// TestValidateUnderGitHubActionsSummarizesAndAnnotates runs validate on
// the adopter with a failing test, as a GitHub Actions job does: the job's
// summary gets the verdict, the surfaces' table and the failing test with
// its owner and action, its message escaped; the log gets an ::error at
// the test's declaration; the JUnit carries the owner.
func TestValidateUnderGitHubActionsSummarizesAndAnnotates(t *testing.T) {
	t.Parallel()
	dir := e2etest.Adopter(t, map[string]string{"a_ci_test.go": "package stock\n\nimport \"testing\"\n\nfunc TestFailsForCI(t *testing.T) {\n\tt.Fatal(\"the | report <b>broke</b>\")\n}\n"})
	summary := filepath.Join(t.TempDir(), "step_summary")
	if err := os.WriteFile(summary, []byte("earlier step\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := e2etest.Mage(t, dir, []string{"GITHUB_ACTIONS=true", "GITHUB_STEP_SUMMARY=" + summary, "GITHUB_WORKSPACE=" + dir}, "validate")
	if code != 1 {
		t.Fatalf("validate: exit %d, want 1:\n%s", code, out)
	}
	if !strings.Contains(out, "::error file=a_ci_test.go,line=5,title=contested%3A example.com/adopter TestFailsForCI%3A owner test author") ||
		!strings.Contains(out, "::a_ci_test.go:6: the | report <b>broke</b>%0Aowner: test author") {
		t.Errorf("no annotation at the failing test's declaration:\n%s", out)
	}
	b, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	for _, want := range []string{
		"earlier step\n### contested validate: RED",
		"| surface | verdict | legs |", "| adopter.stock | GREEN | burst: PASS-smoke<br>reset: PASS-smoke |",
		"example.com/adopter TestFailsForCI** · owner **test author",
		"the \\| report \\<b\\>broke\\</b\\>",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the step summary does not hold %q:\n%s", want, md)
		}
	}
	junit, err := os.ReadFile(filepath.Join(dir, "test-results", "battery", "junit.xml"))
	if err != nil || !strings.Contains(string(junit), `<property name="contested.owner" value="test author`) {
		t.Errorf("the JUnit does not carry the owner (%v):\n%s", err, junit)
	}
}
