package faultlayer

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/contested/contested/internal/dockerenv"
)

// BenchmarkBringUp measures a warm bring-up and teardown (images cached)
// of each provider in the same run and reports the containers/embedded
// ratio: what the isolation of containers costs over local binaries.
func BenchmarkBringUp(b *testing.B) {
	requireContainers(b)
	if _, err := postgresBinaries(""); err != nil {
		dockerenv.SkipOrFail(b, err.Error())
	}
	ctx := context.Background()
	// One untimed bring-up so image resolution is warm.
	if l, err := Up(ctx, ConfigFor(Containers)); err != nil {
		b.Fatal(err)
	} else {
		l.Close(ctx)
	}
	per := map[Kind]time.Duration{}
	b.ResetTimer()
	for range b.N {
		for _, k := range []Kind{Containers, Embedded} {
			start := time.Now()
			l, err := Up(ctx, ConfigFor(k))
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Close(ctx); err != nil {
				b.Fatal(err)
			}
			per[k] += time.Since(start)
		}
	}
	c := per[Containers].Seconds() / float64(b.N)
	e := per[Embedded].Seconds() / float64(b.N)
	b.ReportMetric(c, "containers-s/op")
	b.ReportMetric(e, "embedded-s/op")
	b.ReportMetric(c/e, "containers/embedded")
}

// BenchmarkWarmAttach measures what the pre-push loop saves: a run that
// attaches to the warm layer (go tool mage layer up) and closes, against a
// run that brings up a containers layer of its own and tears it down, in
// the same run, and reports the warm/cold ratio. The warm layer lives in a
// cache directory of the benchmark's own, so nothing else attaches to it.
func BenchmarkWarmAttach(b *testing.B) {
	requireContainers(b)
	isolatedCache(b)
	ctx := context.Background()
	if _, _, err := WarmUp(ctx, ConfigFor(Auto)); err != nil {
		b.Fatal(err)
	}
	defer WarmDown(context.WithoutCancel(ctx), io.Discard)
	var warm, cold time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		l, err := Up(ctx, ConfigFor(Auto))
		if err != nil {
			b.Fatal(err)
		}
		if l.Warm == nil {
			b.Fatal("Up in auto mode did not attach to the warm layer")
		}
		if err := l.Close(ctx); err != nil {
			b.Fatal(err)
		}
		warm += time.Since(start)
		start = time.Now()
		l, err = Up(ctx, ConfigFor(Containers))
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Close(ctx); err != nil {
			b.Fatal(err)
		}
		cold += time.Since(start)
	}
	b.ReportMetric(warm.Seconds()/float64(b.N), "warm-attach-s/op")
	b.ReportMetric(cold.Seconds()/float64(b.N), "cold-s/op")
	b.ReportMetric(float64(warm)/float64(cold), "warm/cold")
}

// BenchmarkLeaseThroughput measures acquire+release pairs per second with
// 16 concurrent clients and with one, in the same run, and reports the
// ratio: how well the SKIP LOCKED acquire scales under contention. Beside
// them it runs pairs of bare round trips (two SELECT 1 on the same pool,
// 16 clients) and reports lease pairs over those: the share of what the
// machine allows two statements that the lease's own SQL gets, which a
// load that comes and goes changes far less than pairs/s.
func BenchmarkLeaseThroughput(b *testing.B) {
	l := shared.get(b)
	ctx := context.Background()
	run := func(clients, pairs int, pair func(holder string) error) float64 {
		var wg sync.WaitGroup
		start := time.Now()
		for c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				holder := fmt.Sprintf("bench-%d", c)
				for range pairs {
					if err := pair(holder); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		return float64(clients*pairs) / time.Since(start).Seconds()
	}
	// Every lease's server-side span, [acquired, released], by port: two
	// spans of one port that overlap are a double grant.
	var mu sync.Mutex
	spans := map[int][][2]time.Time{}
	lease := func(holder string) error {
		ls, err := l.Leases().Acquire(ctx, holder)
		if err != nil {
			return err
		}
		released, err := l.Leases().Release(ctx, ls)
		if err != nil {
			return err // a fenced release is a double grant the table caught
		}
		mu.Lock()
		spans[ls.Port] = append(spans[ls.Port], [2]time.Time{ls.LeasedAt, released})
		mu.Unlock()
		return nil
	}
	roundTrips := func(string) error {
		var n int
		if err := l.DB().QueryRow(ctx, "SELECT 1").Scan(&n); err != nil {
			return err
		}
		return l.DB().QueryRow(ctx, "SELECT 1").Scan(&n)
	}
	b.ResetTimer()
	var one, sixteen, floor float64
	for range b.N {
		one += run(1, 100, lease)
		sixteen += run(16, 100, lease)
		floor += run(16, 100, roundTrips)
	}
	b.ReportMetric(one/float64(b.N), "pairs/s-1-client")
	b.ReportMetric(sixteen/float64(b.N), "pairs/s-16-clients")
	b.ReportMetric(floor/float64(b.N), "round-trip-pairs/s-16-clients")
	b.ReportMetric(sixteen/one, "16/1")
	b.ReportMetric(sixteen/floor, "lease/round-trips")
	doubles := 0
	for _, ss := range spans {
		sort.Slice(ss, func(i, j int) bool { return ss[i][0].Before(ss[j][0]) })
		for i := 1; i < len(ss); i++ {
			if !ss[i][0].After(ss[i-1][1]) {
				doubles++
			}
		}
	}
	b.ReportMetric(float64(doubles), "double-grants")
	if doubles > 0 {
		b.Errorf("%d leases began before the previous lease of their port was released", doubles)
	}
}

// BenchmarkPreflight measures one preflight of a running layer, and reports
// it against a bare lease round trip measured in the same run.
func BenchmarkPreflight(b *testing.B) {
	l := shared.get(b)
	ctx := context.Background()
	var pre, rt time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if p := RunPreflight(ctx, l); !p.OK() {
			p.Write(io.Discard)
			b.Fatalf("preflight failed: %+v", p.Failed())
		}
		pre += time.Since(start)
		start = time.Now()
		ls, err := l.Leases().Acquire(ctx, "bench")
		if err != nil {
			b.Fatal(err)
		}
		l.Leases().Release(ctx, ls)
		rt += time.Since(start)
	}
	b.ReportMetric(pre.Seconds()*1000/float64(b.N), "preflight-ms/op")
	b.ReportMetric(float64(pre)/float64(rt), "preflight/lease-round-trip")
}
