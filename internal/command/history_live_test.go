package command

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contested/contested/internal/dockerenv"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/gate/flakes"
)

// TestAContestedRunLandsInTheHistory runs the adopter's store surface over
// one seed through a real fault layer: the history then holds one row per
// test and subtest it ran, under the run's id, the legs with their leg and
// seed.
func TestAContestedRunLandsInTheHistory(t *testing.T) {
	dockerenv.Require(t)
	adopter, err := filepath.Abs("../../testdata/adopter")
	if err != nil {
		t.Fatal(err)
	}
	results := t.TempDir()
	t.Setenv(envvar.ResultsDir, results)
	t.Setenv(envvar.Surfaces, "")
	t.Setenv(envvar.Seeds, "1")
	var out strings.Builder
	if err := Contested(context.Background(), ContestedOptions{Dir: adopter, Surface: "adopter.stock", Out: &out}); err != nil {
		t.Fatalf("contested: %v\n%s", err, out.String())
	}
	got, err := flakes.NewFile(results).Read(context.Background())
	if err != nil || len(got) != 4 {
		t.Fatalf("the history holds %d rows (%v); want 4 (TestStockContract, its burst and reset legs, TestStockReport):\n%s", len(got), err, out.String())
	}
	legs := map[string]bool{}
	for _, o := range got {
		if o.Command != "contested" || o.RunID != got[0].RunID || o.RunID == "" || o.Verdict != "pass" || o.Seed == 0 {
			t.Errorf("row %+v: want contested, one run id, pass, a seed", o)
		}
		if o.Leg != "" {
			legs[o.Test+" "+o.Leg] = true
		}
	}
	if !legs["TestStockContract/burst burst"] || !legs["TestStockContract/reset reset"] {
		t.Errorf("legs %v; want burst and reset on their subtests", legs)
	}
}
