package reuse

import (
	"strings"
	"testing"
	"time"

	"github.com/contested/contested/e2e/internal/e2etest"
)

// BenchmarkAdopterValidateReused times, in one run, the adopter fixture's
// validate with nothing changed (everything reused) against its full
// validate (-full), and reports the ratio: the target is at most 0.35x.
func BenchmarkAdopterValidateReused(b *testing.B) {
	dir := e2etest.Adopter(b, nil)
	e2etest.Targets(b)
	run := func(args ...string) time.Duration {
		start := time.Now()
		out, code := e2etest.Mage(b, dir, []string{"CI="}, append([]string{"validate"}, args...)...)
		if code != 0 || !strings.Contains(out, "validate: GREEN") {
			b.Fatalf("validate %v: exit %d:\n%s", args, code, out)
		}
		return time.Since(start)
	}
	run("-full") // certifies, and warms the layer and the caches
	var full, reused time.Duration
	b.ResetTimer()
	for range b.N {
		full += run("-full")
		reused += run()
	}
	b.ReportMetric(full.Seconds()/float64(b.N), "s/full")
	b.ReportMetric(reused.Seconds()/float64(b.N), "s/reused")
	b.ReportMetric(reused.Seconds()/full.Seconds(), "reused/full")
}
