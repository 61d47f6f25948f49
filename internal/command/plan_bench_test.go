package command

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/plan"
)

// BenchmarkPlanThisRepository times a plan of this repository as a
// developer makes one before pushing, warm (the digest's caches filled by
// the first, untimed, plan): the change against the merge base and the
// project-wide plan, each gathered (git, the link graph, the registry,
// the history, the capability probe), built and rendered. The goal is at
// most 5 s; the figure is reported as s/plan beside it.
func BenchmarkPlanThisRepository(b *testing.B) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		b.Fatal(err)
	}
	b.Setenv(envvar.ResultsDir, b.TempDir())
	for _, bb := range []struct {
		name string
		opts PlanOptions
	}{
		{"change", PlanOptions{Dir: root, Out: io.Discard}},
		{"all", PlanOptions{Dir: root, All: true, Out: io.Discard}},
	} {
		b.Run(bb.name, func(b *testing.B) {
			ctx := context.Background()
			ws, err := openWorkspace(root)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := makePlan(ctx, ws, bb.opts); err != nil {
				b.Skipf("no plan of this checkout: %v", err)
			}
			b.ResetTimer()
			start := time.Now()
			for b.Loop() {
				p, err := makePlan(ctx, ws, bb.opts)
				if err != nil {
					b.Fatal(err)
				}
				if err := plan.WriteMarkdown(io.Discard, p); err != nil {
					b.Fatal(err)
				}
				if _, err := json.Marshal(p); err != nil {
					b.Fatal(err)
				}
			}
			per := time.Since(start).Seconds() / float64(b.N)
			b.ReportMetric(per, "s/plan")
			b.ReportMetric(per/5, "of-goal")
		})
	}
}
