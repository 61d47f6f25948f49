package stages

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contested/contested/e2e/internal/e2etest"
)

// TestTheReadmeMagefileIsTheAdopters keeps the README's "Use it in your
// repository" section true: its magefile is the adopter fixture's.
func TestTheReadmeMagefileIsTheAdopters(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join(e2etest.RepoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	magefile, err := os.ReadFile(filepath.Join(e2etest.RepoRoot(t), "testdata", "adopter", "magefiles", "magefile.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```go\n"+string(magefile)+"```") {
		t.Errorf("the README's magefile differs from testdata/adopter/magefiles/magefile.go; paste the fixture's into the README")
	}
}

func TestAdopterGoModIsTidy(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("go", "mod", "tidy", "-diff")
	cmd.Dir = filepath.Join(e2etest.RepoRoot(t), "testdata", "adopter")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("testdata/adopter's go.mod or go.sum is out of date (run go mod tidy there):\n%s", out)
	}
}
