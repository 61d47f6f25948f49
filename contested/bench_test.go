package contested

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// BenchmarkLegOverhead measures what a leg adds around the test's own work:
// arming, healing and writing the record (the setup of the victim database
// and proxy is excluded). It reports p50 and p99 over the iterations.
func BenchmarkLegOverhead(b *testing.B) {
	ctx := context.Background()
	for _, lever := range []Lever{Reset, Disconnect, PoolExhaustion} {
		b.Run(string(lever), func(b *testing.B) {
			var ds []time.Duration
			for range b.N {
				t := &testing.T{}
				p := &probe{T: t, name: "BenchmarkLegOverhead/" + string(lever)}
				func() {
					defer func() { recover() }()
					leg := Start(p, "test.store", lever)
					start := time.Now()
					leg.Arm(ctx)
					leg.Heal(ctx)
					leg.mu.Lock()
					leg.current = nil
					leg.faults[0].Injector("bench", true)
					leg.faults[0].Victim("bench", true, time.Now())
					leg.mu.Unlock()
					leg.record()
					ds = append(ds, time.Since(start))
				}()
				for i := len(p.cleanups) - 1; i >= 0; i-- {
					p.cleanups[i]()
				}
			}
			sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
			if len(ds) == 0 {
				b.Fatal("no leg completed")
			}
			b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(ds[(len(ds)*99)/100].Microseconds())/1000, "p99-ms")
		})
	}
}

// BenchmarkProxiedVsDirect runs the same query loop through a proxy with no
// toxic and directly, in the same run, and reports the throughput ratio:
// what putting Toxiproxy in the path costs when nothing is armed.
func BenchmarkProxiedVsDirect(b *testing.B) {
	ctx := context.Background()
	p := &probe{T: &testing.T{}, name: "BenchmarkProxiedVsDirect"}
	defer func() {
		for i := len(p.cleanups) - 1; i >= 0; i-- {
			p.cleanups[i]()
		}
	}()
	leg := Start(p, "test.store", Reset)
	proxied, err := pgx.Connect(ctx, leg.DSN())
	if err != nil {
		b.Fatal(err)
	}
	defer proxied.Close(ctx)
	direct, err := pgx.Connect(ctx, leg.DirectDSN())
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close(ctx)
	const queries = 500
	loop := func(c *pgx.Conn) time.Duration {
		start := time.Now()
		for range queries {
			var n int
			if err := c.QueryRow(ctx, "SELECT 1").Scan(&n); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	var tp, td time.Duration
	b.ResetTimer()
	for range b.N {
		tp += loop(proxied)
		td += loop(direct)
	}
	qps := func(d time.Duration) float64 { return float64(queries*b.N) / d.Seconds() }
	b.ReportMetric(qps(tp), "proxied-q/s")
	b.ReportMetric(qps(td), "direct-q/s")
	b.ReportMetric(qps(tp)/qps(td), "proxied/direct")
	// The leg never armed: mark it so its cleanup has nothing to complain of.
	leg.Arm(ctx)
	leg.Heal(ctx)
	leg.mu.Lock()
	leg.faults[0].Injector("bench", true)
	leg.faults[0].Victim("bench", true, time.Now())
	leg.mu.Unlock()
}
