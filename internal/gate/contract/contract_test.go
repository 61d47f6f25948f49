package contract

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/contested/contested/internal/battery/batterytest"
	"github.com/contested/contested/internal/runenv"
	"github.com/contested/contested/internal/testlog"

	"github.com/contested/contested/internal/faultlayer/faulttest"
	"github.com/contested/contested/internal/gate/verdict"
	"github.com/contested/contested/internal/registry"
	"github.com/contested/contested/internal/rundir"
)

func TestMain(m *testing.M) {
	code := m.Run()
	batterytest.Close()
	faulttest.Close()
	os.Exit(code)
}

// adopter returns the adopter fixture's module directory and its surface.
func adopter(t *testing.T) (string, string, registry.Surface) {
	t.Helper()
	dir, err := filepath.Abs("../../../testdata/adopter")
	if err != nil {
		t.Fatal(err)
	}
	regPath := filepath.Join(dir, "contested-surfaces.toml")
	reg, err := registry.Load(regPath)
	if err != nil {
		t.Fatal(err)
	}
	s, ok := reg.Surface("adopter.stock")
	if !ok {
		t.Fatal("adopter.stock is not in the fixture's registry")
	}
	return dir, regPath, s
}

func run(t *testing.T, extraEnv []string, seeds []int64, envMissing string) *Result {
	t.Helper()
	dir, regPath, s := adopter(t)
	opts := Options{Env: runenv.Env{ModuleRoot: dir, Registry: regPath, ResultsDir: rundir.Dir(t.TempDir()), Level: 1}, Seeds: seeds,
		Out: testlog.Writer(t), EnvMissing: envMissing, Binaries: batterytest.Binaries(t)}
	if envMissing == "" {
		l := faulttest.Layer(t)
		opts.Env = opts.Env.Attach(append(l.Env(), extraEnv...), l.RunID)
	}
	res, err := Run(context.Background(), s, opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

func TestRunWithoutALayerCannotRun(t *testing.T) {
	res := run(t, nil, []int64{13}, "fault-preflight failed: lease table missing")
	if res.Contract != verdict.CannotRun {
		t.Fatalf("contract %s, want CANNOT RUN", res.Contract)
	}
	if len(res.Seeds) != 0 {
		t.Errorf("tests ran although the layer cannot run: %+v", res.Seeds)
	}
	for _, l := range res.Legs {
		if l.Verdict != verdict.InconclusiveEnv {
			t.Errorf("leg %s: %s, want INCONCLUSIVE-env", l.Lever, l.Verdict)
		}
	}
}
