package command

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contested/contested/faultlayer"
	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/testmodule"
	"github.com/contested/contested/registry"
)

// module writes a minimal module with a registry into a temp dir.
func module(t *testing.T) string {
	t.Helper()
	return testmodule.Write(t, map[string]string{
		"go.mod":                  "module example.com/m\n\ngo 1.24\n",
		"m_test.go":               "package m\nimport \"testing\"\nfunc TestLeg(t *testing.T) {}\n",
		"contested-surfaces.toml": "schema = 1\n[gate]\nrecording_classes = [\"store\"]\nself_tests = [\"TestLeg\"]\n[[surface]]\nid = \"m.store\"\nclass = \"store\"\nowner = \"m-team\"\nbehavior = \"b\"\noracle = \"exactly-once\"\nlegs = [\"reset\"]\ntests = [\"TestLeg\"]\n",
	})
}

func deadAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestValidateRefusesToRunTheBatteryWhenPreflightFails: with a fault layer
// that cannot run, validate exits 3, says why, writes no stamp and deletes
// none of the evidence already on disk.
func TestValidateRefusesToRunTheBatteryWhenPreflightFails(t *testing.T) {
	dir := module(t)
	dead := deadAddr(t)
	t.Setenv(faultlayer.EnvLayer, "")
	t.Setenv(faultlayer.EnvToxiproxyURL, "http://"+dead)
	t.Setenv(faultlayer.EnvPostgresDSN, "postgres://u:p@"+dead+"/db")
	t.Setenv(faultrecord.EnvResultsDir, "")
	t.Setenv(registry.EnvPath, "")
	faultDir := filepath.Join(dir, "test-results", "fault")
	if err := os.MkdirAll(faultDir, 0o755); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(faultDir, "earlier-run.json")
	if err := os.WriteFile(old, []byte(`{"schema":"contested/faultrecord@1"}`), 0o644); err != nil {
		t.Fatal(err)
	}

	var out strings.Builder
	err := Validate(context.Background(), ValidateOptions{Dir: dir, Out: &out})
	if got := ExitCode(err); got != ExitCannotRun {
		t.Fatalf("exit %d (%v), want %d; output:\n%s", got, err, ExitCannotRun, out.String())
	}
	if !strings.Contains(out.String(), "refusing to run the battery") {
		t.Errorf("validate does not say it refused to run the battery:\n%s", out.String())
	}
	if strings.Contains(out.String(), "battery: go test") {
		t.Errorf("the battery ran anyway:\n%s", out.String())
	}
	if _, err := os.Stat(filepath.Join(faultDir, faultrecord.StampName)); err == nil {
		t.Error("a gate stamp was written although preflight failed")
	}
	if _, err := os.Stat(old); err != nil {
		t.Errorf("evidence from an earlier run was deleted: %v", err)
	}
}

func TestValidateOnBadInput(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  int
		says  string
	}{
		{"no go.mod", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "go.mod")) }, ExitUsage, "has no go.mod"},
		{"no registry", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "contested-surfaces.toml")) }, ExitUsage, "create the registry"},
		{"a registry that does not parse", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "contested-surfaces.toml"), []byte("schema = 1\n[gate\n"), 0o644)
		}, ExitUsage, "contested-surfaces.toml:2"},
		{"bogus layer", func(t *testing.T, dir string) { t.Setenv(faultlayer.EnvLayer, "bogus") }, ExitUsage, "CONTESTED_LAYER"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := module(t)
			t.Setenv(faultlayer.EnvLayer, "")
			t.Setenv(registry.EnvPath, "")
			tt.setup(t, dir)
			var out strings.Builder
			err := Validate(context.Background(), ValidateOptions{Dir: dir, Out: &out})
			if got := ExitCode(err); got != tt.want || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("exit %d (%v), want %d saying %q", got, err, tt.want, tt.says)
			}
		})
	}
}

func TestContestedOnBadInput(t *testing.T) {
	tests := []struct {
		name    string
		surface string
		env     map[string]string
		want    int
		says    string
	}{
		{"no surface", "", nil, ExitUsage, "name a surface or all"},
		{"unknown surface", "m.nope", nil, ExitUsage, `surface "m.nope" is not in`},
		{"bad level", "m.store", map[string]string{"CONTESTED_LEVEL": "7"}, ExitUsage, "CONTESTED_LEVEL"},
		{"a registered test that does not exist", "m.store", map[string]string{"REWRITE_TEST": "TestGone"}, ExitUsage, `lists test "TestGone"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := module(t)
			t.Setenv(registry.EnvPath, "")
			t.Setenv("CONTESTED_LEVEL", tt.env["CONTESTED_LEVEL"])
			if name := tt.env["REWRITE_TEST"]; name != "" {
				p := filepath.Join(dir, "contested-surfaces.toml")
				b, _ := os.ReadFile(p)
				os.WriteFile(p, []byte(strings.Replace(string(b), "\ntests = [\"TestLeg\"]", "\ntests = [\""+name+"\"]", 1)), 0o644)
			}
			var out strings.Builder
			err := Contested(context.Background(), ContestedOptions{Dir: dir, Surface: tt.surface, Out: &out})
			if got := ExitCode(err); got != tt.want || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("exit %d (%v), want %d saying %q", got, err, tt.want, tt.says)
			}
		})
	}
}

func TestArbitrateExitCodes(t *testing.T) {
	adopter, err := filepath.Abs("../../testdata/adopter")
	if err != nil {
		t.Fatal(err)
	}
	dead := deadAddr(t)
	tests := []struct {
		name, test string
		want       int
		says       string
	}{
		{"no test named", "", ExitUsage, "name the failing test"},
		{"an unknown test id", "TestNoSuchThing", ExitUsage, "is not a test of"},
		{"the fault layer is down", "TestStockContract/reset", ExitCannotRun, "owner fault layer"},
		{"a test outside the registry", "TestOutsideRegistry", ExitRed, "owner test author"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(faultlayer.EnvLayer, "")
			t.Setenv(faultlayer.EnvToxiproxyURL, "http://"+dead)
			t.Setenv(faultlayer.EnvPostgresDSN, "postgres://u:p@"+dead+"/db")
			t.Setenv(faultrecord.EnvResultsDir, t.TempDir())
			t.Setenv(registry.EnvPath, "")
			var out strings.Builder
			err := Arbitrate(context.Background(), ArbitrateOptions{Dir: adopter, Test: tt.test, Out: &out})
			if got := ExitCode(err); got != tt.want || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("exit %d (%v), want %d saying %q; output:\n%s", got, err, tt.want, tt.says, out.String())
			}
		})
	}
}
