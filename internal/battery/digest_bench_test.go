package battery

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/contested/contested/internal/testmodule"
)

// BenchmarkContentCheck measures what the check of a test binary's content
// costs against the run it guards: hashing the binary through its
// descriptor (the check before each run, and again once it runs) against
// running it for one trivial test. It reports check-ms, run-ms and
// check/run, measured in one run, for a binary of a package that imports
// nothing and one of a package that serves HTTP (nearer the size of a
// service's).
func BenchmarkContentCheck(b *testing.B) {
	for _, bb := range []struct{ name, test string }{
		{"bare", "package a\nimport \"testing\"\nfunc TestA(t *testing.T) {}\n"},
		{"http", "package a\nimport (\"testing\"; \"net/http/httptest\"; _ \"database/sql\"; _ \"html/template\"; _ \"encoding/json\"; _ \"net/smtp\")\n" +
			"func TestA(t *testing.T) { httptest.NewServer(nil).Close() }\n"},
	} {
		b.Run(bb.name, func(b *testing.B) { benchContentCheck(b, bb.test) })
	}
}

func benchContentCheck(b *testing.B, test string) {
	dir := testmodule.Write(b, map[string]string{
		"go.mod":      "module example.com/digest\n\ngo 1.24\n",
		"a/a_test.go": test,
	})
	bin := filepath.Join(b.TempDir(), "a.test")
	build := exec.Command("go", "test", "-c", "-o", bin, "-ldflags=-s -w", "./a")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go test -c: %v\n%s", err, out)
	}
	fi, err := os.Stat(bin)
	if err != nil {
		b.Fatal(err)
	}
	var check, run time.Duration
	for b.Loop() {
		start := time.Now()
		for range 2 {
			f, _, err := openDigest(bin)
			if err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
		check += time.Since(start)
		start = time.Now()
		if out, err := exec.Command(bin, "-test.run=^TestA$", "-test.count=1").CombinedOutput(); err != nil {
			b.Fatalf("run: %v\n%s", err, out)
		}
		run += time.Since(start)
	}
	n := float64(b.N)
	b.ReportMetric(float64(fi.Size())/(1<<20), "binary-MiB")
	b.ReportMetric(check.Seconds()*1000/n, "check-ms")
	b.ReportMetric(run.Seconds()*1000/n, "run-ms")
	b.ReportMetric(check.Seconds()/run.Seconds(), "check/run")
}
