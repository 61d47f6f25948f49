package envvar_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestABuildForAnotherSystemSaysLinuxOnly: every package an adopter
// imports depends on this one, and building it for macOS stops with the
// error that names the platform and where the README says more, not with
// some deeper package's missing symbol.
func TestABuildForAnotherSystemSaysLinuxOnly(t *testing.T) {
	darwin := append(os.Environ(), "GOOS=darwin", "GOARCH=arm64", "CGO_ENABLED=0")
	for _, pkg := range []string{"../../contested", "../../contested/history", "../../cluster", "../../cluster/clustertest", "../../faultrecord", "../../magefiles/targets"} {
		list := exec.Command("go", "list", "-deps", pkg)
		list.Env = darwin
		out, err := list.Output()
		if err != nil {
			t.Fatalf("go list %s for darwin: %v", pkg, err)
		}
		if !strings.Contains(string(out), "github.com/contested/contested/internal/envvar\n") {
			t.Errorf("%s does not depend on internal/envvar: a darwin build of it would not say why it fails", pkg)
		}
	}
	build := exec.Command("go", "build", ".")
	build.Env = darwin
	out, err := build.CombinedOutput()
	if err == nil {
		t.Fatal("a darwin build succeeded")
	}
	if !strings.Contains(string(out), "contested_runs_on_Linux_only__see_the_README_Platform") {
		t.Errorf("a darwin build failed without saying why:\n%s", out)
	}
}
