package contested

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2/client"
	"github.com/jackc/pgx/v5"
)

// legSamples is the fewest legs BenchmarkLegOverhead times per lever,
// whatever -benchtime asks: a p99 of fewer is only their slowest.
const legSamples = 200

// BenchmarkLegOverhead measures what a leg adds around the test's own work:
// arming, healing and writing the record (the setup of the victim database
// and proxy is excluded). It times max(b.N, legSamples) legs and reports
// their p50 and p99 (nearest rank) and, as ns/op, the mean time per leg
// with its setup and cleanup.
func BenchmarkLegOverhead(b *testing.B) {
	ctx := context.Background()
	for _, lever := range []Lever{Reset, Disconnect, PoolExhaustion} {
		b.Run(string(lever), func(b *testing.B) {
			n := max(b.N, legSamples)
			var ds []time.Duration
			began := time.Now()
			for range n {
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
			if len(ds) < n {
				b.Fatalf("%d of %d legs completed", len(ds), n)
			}
			slices.Sort(ds)
			b.ReportMetric(float64(time.Since(began).Nanoseconds())/float64(n), "ns/op")
			b.ReportMetric(float64(rank(ds, 0.50).Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(rank(ds, 0.99).Microseconds())/1000, "p99-ms")
		})
	}
}

// rank is the nearest-rank q-quantile of sorted ds: the smallest value
// that at least q of them do not exceed.
func rank(ds []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(ds)))) - 1
	return ds[max(0, min(i, len(ds)-1))]
}

// BenchmarkProxiedVsDirect runs the same query loop through the layer's
// Toxiproxy (a proxy with no toxic), through a bare Toxiproxy binary built
// from the module this repository depends on and run on the host in front
// of the same Postgres, and directly, in the same run: what putting the
// layer's Toxiproxy in the path costs when nothing is armed, and whether it
// costs more than Toxiproxy itself does.
//
// The bare Toxiproxy fronts Postgres twice: at the layer's published
// address (CONTESTED_PG_DSN's, where a bare Toxiproxy a user runs points:
// "bare"), and at Postgres' address on the layer's network when this host
// reaches it (the best a Toxiproxy outside the layer can do:
// "bare-direct"). The direct loop goes where the victims' DirectDSN goes.
//
// The loops take turns, in a rotating order, in rounds of 200 queries
// (twenty rounds per iteration), so that a load that comes and goes on the
// machine falls on all of them alike. proxied/bare, proxied/bare-direct
// and proxied/direct are the medians of the rounds' ratios;
// proxied/bare-iqr is the spread of the rounds' proxied/bare (75th minus
// 25th percentile), and proxied/bare-se the standard error of its median
// estimated from that spread (1.253 × IQR/1.349 / √rounds): a proxied/bare
// below 1 by less than two of those is within this run's noise (mage bench
// judges it so).
func BenchmarkProxiedVsDirect(b *testing.B) {
	ctx := context.Background()
	p := &probe{T: &testing.T{}, name: "BenchmarkProxiedVsDirect"}
	defer func() {
		for i := len(p.cleanups) - 1; i >= 0; i-- {
			p.cleanups[i]()
		}
	}()
	leg := Start(p, "test.store", Reset)
	if p.Failed() {
		b.Fatalf("start a leg: %s", p.errors())
	}
	direct := leg.DirectDSN()
	cfg, err := pgx.ParseConfig(leg.layer.PostgresDSN)
	if err != nil {
		b.Fatal(err)
	}
	published := leg.victim.DSN(net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port)))
	bare := bareToxiproxy(b, published, direct)
	conns := map[string]*pgx.Conn{}
	for name, dsn := range map[string]string{"proxied": leg.DSN(), "bare": bare[0], "bare-direct": bare[1], "direct": direct} {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			b.Fatalf("connect %s: %v", name, err)
		}
		defer c.Close(ctx)
		conns[name] = c
	}
	const queries, rounds = 200, 20
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
	order := []string{"proxied", "bare", "bare-direct", "direct"}
	total := map[string]time.Duration{}
	var overBare, overBareDirect, overDirect []float64
	b.ResetTimer()
	for i := range b.N * rounds {
		took := map[string]time.Duration{}
		for k := range order {
			name := order[(i+k)%len(order)]
			took[name] = loop(conns[name])
			total[name] += took[name]
		}
		// Throughput ratios: time of the other over time through the layer.
		overBare = append(overBare, took["bare"].Seconds()/took["proxied"].Seconds())
		overBareDirect = append(overBareDirect, took["bare-direct"].Seconds()/took["proxied"].Seconds())
		overDirect = append(overDirect, took["direct"].Seconds()/took["proxied"].Seconds())
	}
	b.StopTimer()
	qps := func(d time.Duration) float64 { return float64(queries*b.N*rounds) / d.Seconds() }
	b.ReportMetric(qps(total["proxied"]), "proxied-q/s")
	b.ReportMetric(qps(total["bare"]), "bare-q/s")
	b.ReportMetric(qps(total["bare-direct"]), "bare-direct-q/s")
	b.ReportMetric(qps(total["direct"]), "direct-q/s")
	b.ReportMetric(quantile(overDirect, 0.5), "proxied/direct")
	b.ReportMetric(quantile(overBare, 0.5), "proxied/bare")
	b.ReportMetric(quantile(overBareDirect, 0.5), "proxied/bare-direct")
	iqr := quantile(overBare, 0.75) - quantile(overBare, 0.25)
	b.ReportMetric(iqr, "proxied/bare-iqr")
	b.ReportMetric(1.253*iqr/1.349/math.Sqrt(float64(len(overBare))), "proxied/bare-se")
	// The leg never armed: mark it so its cleanup has nothing to complain of.
	leg.Arm(ctx)
	leg.Heal(ctx)
	leg.mu.Lock()
	leg.faults[0].Injector("bench", true)
	leg.faults[0].Victim("bench", true, time.Now())
	leg.mu.Unlock()
}

// quantile is the q-quantile of xs (nearest rank), xs left unsorted.
func quantile(xs []float64, q float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// bareToxiproxy builds the Toxiproxy server of the module go.mod requires,
// runs it on the host on loopback, puts on it a proxy to each DSN's
// Postgres and returns each DSN through its proxy. The server is killed
// when the benchmark ends, and by the kernel if this process dies first.
func bareToxiproxy(b *testing.B, dsns ...string) []string {
	b.Helper()
	dir := b.TempDir()
	bin := filepath.Join(dir, "toxiproxy-server")
	build := exec.Command("go", "build", "-o", bin, "github.com/Shopify/toxiproxy/v2/cmd/server")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build the bare Toxiproxy: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	api := ln.Addr().String()
	ln.Close()
	_, port, _ := net.SplitHostPort(api)
	srv := exec.Command(bin, "-host", "127.0.0.1", "-port", port)
	srv.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := srv.Start(); err != nil {
		b.Fatalf("start the bare Toxiproxy: %v", err)
	}
	b.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	client := toxiproxy.NewClient(api)
	var out []string
	for i, dsn := range dsns {
		u, err := url.Parse(dsn)
		if err != nil {
			b.Fatal(err)
		}
		var proxy *toxiproxy.Proxy
		deadline := time.Now().Add(30 * time.Second)
		for {
			if proxy, err = client.CreateProxy(fmt.Sprintf("bare-postgres-%d", i), "127.0.0.1:0", u.Host); err == nil {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("the bare Toxiproxy on %s did not answer in 30s: %v", api, err)
			}
			time.Sleep(20 * time.Millisecond) // the server is still binding its API
		}
		u.Host = proxy.Listen
		out = append(out, u.String())
	}
	return out
}
