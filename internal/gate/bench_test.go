package gate

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/faultdir"
)

// generate writes n valid, fired records across four classes into <b.TempDir()>/fault, behind a
// stamp one hour old, and returns the fault directory. It writes directly (no fsync) because
// the benchmark measures verification, not the writer.
func generate(b *testing.B, n int) string {
	b.Helper()
	dir := faultdir.Of(b.TempDir())
	if err := WriteStamp(dir, "bench"); err != nil {
		b.Fatal(err)
	}
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(dir, faultdir.StampName), past, past); err != nil {
		b.Fatal(err)
	}
	classes := []string{"store", "mq-consumer", "pool", "lease"}
	r := sampleRecord()
	r.Schema, r.RunID, r.Package = faultrecord.Schema, "20261129T101500Z-4f2a", "example.com/ledger/store"
	for i := range n {
		r.Class = classes[i%len(classes)]
		r.Surface = "ledger." + r.Class
		r.Seed = int64(i)
		r.Test = "TestContract/leg-" + strconv.Itoa(i)
		data, err := json.MarshalIndent(&r, "", "  ")
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s--%s--%012x.json", r.RunID, faultdir.SafeName(r.Test), i)), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

func benchOptions(dir string) Options {
	return Options{Dir: dir, Mode: Standalone, RecordingClasses: []string{"store", "mq-consumer"}}
}

// verifyOnce runs one standalone verification and fails the benchmark unless it certified all
// n records, so a fast but wrong verification cannot look good.
func verifyOnce(b *testing.B, dir string, n int) {
	rep, err := Verify(b.Context(), benchOptions(dir))
	if err != nil || rep.RecordsRead != n || rep.Fired != n {
		b.Fatalf("verify %d records: err %v, read %d, fired %d", n, err, rep.RecordsRead, rep.Fired)
	}
}

func benchmarkVerify(b *testing.B, n int) {
	dir := generate(b, n)
	b.ReportAllocs()
	for b.Loop() {
		verifyOnce(b, dir, n)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/record")
}

func BenchmarkVerify10k(b *testing.B)  { benchmarkVerify(b, 10_000) }
func BenchmarkVerify100k(b *testing.B) { benchmarkVerify(b, 100_000) }

// BenchmarkVerifyScaling measures 10k and 100k in the same run and reports the ratio of their
// times: linear growth gives about 10. It also reports the 100k time in seconds, the number
// the 2 s budget is about.
func BenchmarkVerifyScaling(b *testing.B) {
	small, large := generate(b, 10_000), generate(b, 100_000)
	// Warm both sets once so the page cache does not favour whichever runs second.
	verifyOnce(b, small, 10_000)
	verifyOnce(b, large, 100_000)
	var tSmall, tLarge time.Duration
	for b.Loop() {
		start := time.Now()
		verifyOnce(b, small, 10_000)
		tSmall += time.Since(start)
		start = time.Now()
		verifyOnce(b, large, 100_000)
		tLarge += time.Since(start)
	}
	b.ReportMetric(float64(tLarge)/float64(tSmall), "ratio_100k/10k")
	b.ReportMetric(tLarge.Seconds()/float64(b.N), "s/100k")
	b.ReportMetric(tSmall.Seconds()/float64(b.N), "s/10k")
}
