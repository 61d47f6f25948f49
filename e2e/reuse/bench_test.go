package reuse

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

// BenchmarkThisRepositoryAfterOneExample times, in one run, this
// repository's full validate against its validate after a change confined
// to one example package (a comment appended to examples/pglock), and
// reports the ratio: the target is at most 0.3x. The repository is a
// clone of this checkout's HEAD, so the change is the only one.
func BenchmarkThisRepositoryAfterOneExample(b *testing.B) {
	e2etest.Targets(b)
	dir := filepath.Join(b.TempDir(), "contested")
	if out, err := exec.Command("git", "clone", "-q", e2etest.RepoRoot(b), dir).CombinedOutput(); err != nil {
		b.Fatalf("git clone: %v\n%s", err, out)
	}
	const changed = "github.com/contested/contested/examples/pglock"
	run := func(args ...string) (report, time.Duration) {
		start := time.Now()
		out, code := e2etest.GoToolMage(b, dir, []string{"CI="}, append([]string{"validate"}, args...)...)
		took := time.Since(start)
		if code != 0 || !strings.Contains(out, "validate: GREEN") {
			b.Fatalf("validate %v: exit %d:\n%s", args, code, out)
		}
		var r report
		e2etest.ReadJSON(b, filepath.Join(dir, "test-results", "validate.json"), &r)
		if r.Reuse == nil {
			b.Fatalf("validate %v: validate.json has no reuse:\n%s", args, out)
		}
		return r, took
	}
	var full, one time.Duration
	var ran, kept int
	b.ResetTimer()
	for i := range b.N {
		_, took := run("-full") // certifies every package
		full += took
		appendFile(b, filepath.Join(dir, "examples", "pglock", "pglock.go"), fmt.Sprintf("\n// Changed by the benchmark, iteration %d.\n", i))
		r, took := run()
		one += took
		pkgs, _ := reused(r)
		if slices.Contains(pkgs, changed) || len(pkgs) == 0 {
			b.Fatalf("after a change to examples/pglock, validate reused %v: want every package but %s", pkgs, changed)
		}
		ran, kept = r.Reuse.Ran, len(pkgs)
	}
	b.ReportMetric(full.Seconds()/float64(b.N), "s/full")
	b.ReportMetric(one.Seconds()/float64(b.N), "s/one-example")
	b.ReportMetric(one.Seconds()/full.Seconds(), "one-example/full")
	b.ReportMetric(float64(ran), "packages-ran")
	b.ReportMetric(float64(kept), "packages-reused")
}

func appendFile(tb testing.TB, path, text string) {
	tb.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}
