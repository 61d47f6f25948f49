package touched_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/contested/contested/internal/digest"
	"github.com/contested/contested/internal/touched"
)

// BenchmarkSourceOfThisRepository is what reuse adds to a certifying run
// of this repository: every package's source record (touched.Source),
// reading each file once. It reports the seconds for all packages
// (s/source), the packages, and the most variables and paths one
// package's record holds.
func BenchmarkSourceOfThisRepository(b *testing.B) {
	root, err := filepath.Abs("../..")
	if err != nil {
		b.Fatal(err)
	}
	mod, err := digest.Load(context.Background(), root)
	if err != nil {
		b.Fatal(err)
	}
	var most, mostEnv int
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		src := touched.NewSource()
		for _, p := range mod.Packages {
			rec, err := src.Record(touched.Paths{Root: root, Dir: p.Dir, Ignore: []string{filepath.Join(root, "test-results")}}, p.Files)
			if err != nil {
				b.Fatalf("%s: %v", p.ImportPath, err)
			}
			most, mostEnv = max(most, len(rec.Open)), max(mostEnv, len(rec.Env))
		}
	}
	b.ReportMetric(time.Since(start).Seconds()/float64(b.N), "s/source")
	b.ReportMetric(float64(len(mod.Packages)), "packages")
	b.ReportMetric(float64(most), "max-paths")
	b.ReportMetric(float64(mostEnv), "max-vars")
}
