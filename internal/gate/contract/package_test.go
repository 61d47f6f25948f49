package contract

import (
	"context"
	"testing"

	"github.com/contested/contested/internal/registry"
	"github.com/contested/contested/internal/rundir"
	"github.com/contested/contested/internal/runenv"
	"github.com/contested/contested/internal/testlog"
	"github.com/contested/contested/internal/testmodule"
)

// TestRunRunsOnlyTheSurfacesPackage: a surface that names its package has
// its tests run there only, not across the module: another package's test
// of the same name (here one that fails) is not the surface's, and must
// not fail its seed.
func TestRunRunsOnlyTheSurfacesPackage(t *testing.T) {
	t.Parallel()
	dir := testmodule.Write(t, map[string]string{
		"go.mod":              "module example.com/m\n\ngo 1.26.0\n",
		"stock/stock_test.go": "package stock\n\nimport \"testing\"\n\nfunc TestStock(t *testing.T) { t.Run(\"burst\", func(t *testing.T) {}) }\n",
		"other/other_test.go": "package other\n\nimport \"testing\"\n\nfunc TestStock(t *testing.T) { t.Fatal(\"not the surface's package\") }\n",
	})
	reg, err := registry.Parse("contested-surfaces.toml", []byte(`schema = 1
[[surface]]
id = "m.stock"
class = "store"
owner = "stock-team"
behavior = "b"
oracle = "exactly-once"
legs = ["burst"]
tests = ["TestStock"]
package = "./stock"
`))
	if err != nil {
		t.Fatal(err)
	}
	s, ok := reg.Surface("m.stock")
	if !ok {
		t.Fatal("no surface m.stock")
	}
	res, err := Run(context.Background(), s, Options{Env: runenv.Env{ModuleRoot: dir, ResultsDir: rundir.Dir(t.TempDir()), Level: 1}, Seeds: []int64{1}, Out: testlog.Writer(t)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Seeds) != 1 || !res.Seeds[0].Passed || len(res.Seeds[0].Failed) != 0 {
		t.Fatalf("seeds %+v; want one passing seed: only ./stock's TestStock is the surface's", res.Seeds)
	}
}
