package command

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/faultlayer"
	"github.com/contested/contested/internal/registry"
)

func TestExitCode(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"nil is green", nil, ExitGreen},
		{"usage", fmt.Errorf("x: %w", ErrUsage), ExitUsage},
		{"bad layer configuration", fmt.Errorf("x: %w", faultlayer.ErrConfig), ExitUsage},
		{"bad registry", fmt.Errorf("x: %w", registry.ErrInvalid), ExitUsage},
		{"preflight failed", fmt.Errorf("x: %w", ErrCannotRun), ExitCannotRun},
		{"layer cannot run", fmt.Errorf("x: %w", faultlayer.ErrCannotRun), ExitCannotRun},
		{"red", ErrRed, ExitRed},
		{"interrupted, whatever the cancellation looked like inside", fmt.Errorf("%w by SIGTERM: %w", ErrInterrupted, faultlayer.ErrCannotRun), ExitRed},
		{"anything else is red", errors.New("boom"), ExitRed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ExitCode(tt.err); got != tt.want {
				t.Errorf("ExitCode(%v) = %d, want %d", tt.err, got, tt.want)
			}
		})
	}
}

func TestPreflightVerdict(t *testing.T) {
	ok := faultlayer.Check{Name: "a", OK: true}
	soft := faultlayer.Check{Name: "b", Detail: "lease table missing", Fix: "migrate"}
	hard := faultlayer.Check{Name: "c", Hard: true, Detail: "published on 0.0.0.0", Fix: "publish on 127.0.0.1"}
	tests := []struct {
		name     string
		checks   []faultlayer.Check
		required bool
		wantErr  bool
	}{
		{"all ok, report-only", []faultlayer.Check{ok}, false, false},
		{"all ok, required", []faultlayer.Check{ok}, true, false},
		{"soft failure, report-only passes", []faultlayer.Check{ok, soft}, false, false},
		{"soft failure, required fails", []faultlayer.Check{ok, soft}, true, true},
		{"hard failure fails report-only too", []faultlayer.Check{ok, hard}, false, true},
		{"hard failure, required", []faultlayer.Check{hard}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := preflightVerdict(faultlayer.Preflight{Checks: tt.checks}, tt.required)
			if (err != nil) != tt.wantErr {
				t.Fatalf("verdict = %v, want error %v", err, tt.wantErr)
			}
			if err != nil && ExitCode(err) != ExitCannotRun {
				t.Errorf("exit code %d, want %d", ExitCode(err), ExitCannotRun)
			}
		})
	}
}

func TestFaultPreflightOnBadInput(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close() // nothing listens there now
	tests := []struct {
		name     string
		env      map[string]string
		required bool
		want     int
	}{
		{"bogus layer", map[string]string{envvar.Layer: "bogus"}, true, ExitUsage},
		{"bogus layer, report-only", map[string]string{envvar.Layer: "bogus"}, false, ExitUsage},
		{"half an external layer", map[string]string{envvar.ToxiproxyURL: "http://" + dead}, true, ExitUsage},
		{"bad port range", map[string]string{envvar.Layer: "embedded", envvar.ProxyPorts: "20000"}, true, ExitUsage},
		{"unreachable external, required", map[string]string{envvar.ToxiproxyURL: "http://" + dead, envvar.PostgresDSN: "postgres://u:p@" + dead + "/db"}, true, ExitCannotRun},
		{"unreachable external, report-only", map[string]string{envvar.ToxiproxyURL: "http://" + dead, envvar.PostgresDSN: "postgres://u:p@" + dead + "/db"}, false, ExitGreen},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Under validate the battery inherits its layer's variables
			// (a listen host of 0.0.0.0 for a containers layer among them).
			for _, k := range []string{envvar.Layer, envvar.ToxiproxyURL, envvar.PostgresDSN, envvar.ProxyPorts,
				envvar.ProxyListenHost, envvar.PostgresUpstream, envvar.RunID} {
				t.Setenv(k, tt.env[k])
				if tt.env[k] == "" {
					os.Unsetenv(k)
				}
			}
			t.Setenv("CONTESTED_RESULTS_DIR", t.TempDir())
			var out strings.Builder
			err := FaultPreflight(context.Background(), PreflightOptions{Required: tt.required, Out: &out})
			if got := ExitCode(err); got != tt.want {
				t.Errorf("exit %d (%v), want %d; output:\n%s", got, err, tt.want, out.String())
			}
		})
	}
}

func TestParseBenchLine(t *testing.T) {
	tests := []struct {
		line string
		ok   bool
		n    int
		want map[string]float64
	}{
		{"BenchmarkBringUp-2   \t       2\t13519299932 ns/op\t        11.13 containers-s/op\t         4.653 containers/embedded", true, 2,
			map[string]float64{"ns/op": 13519299932, "containers-s/op": 11.13, "containers/embedded": 4.653}},
		{"BenchmarkX-2 3 100 ns/op", true, 3, map[string]float64{"ns/op": 100}},
		{"BenchmarkX-2 --- FAIL", false, 0, nil},
		{"BenchmarkX-2 three 100 ns/op", false, 0, nil},
		{"BenchmarkX-2 3 100", false, 0, nil},
	}
	for _, tt := range tests {
		r, ok := parseBenchLine("p", tt.line)
		if ok != tt.ok {
			t.Errorf("parseBenchLine(%q) ok = %v", tt.line, ok)
			continue
		}
		if !ok {
			continue
		}
		if r.Iterations != tt.n || fmt.Sprint(r.Metrics) != fmt.Sprint(tt.want) {
			t.Errorf("parseBenchLine(%q) = %d %v, want %d %v", tt.line, r.Iterations, r.Metrics, tt.n, tt.want)
		}
	}
}

func TestJudgeGoals(t *testing.T) {
	results := []BenchResult{
		{Name: "BenchmarkBringUp-2", Metrics: map[string]float64{"containers/embedded": 2.5, "containers-s/op": 5}},
		{Name: "BenchmarkLeaseThroughput-2", Metrics: map[string]float64{"pairs/s-16-clients": 1566}},
		{Name: "BenchmarkLegOverhead/pool-exhaustion-2", Metrics: map[string]float64{"p50-ms": 9}},
		{Name: "BenchmarkProxiedVsDirect-2", Metrics: map[string]float64{"proxied/direct": 0.5, "proxied/bare": 0.95, "proxied/bare-se": 0.03}},
		{Name: "BenchmarkAdopterValidate", Metrics: map[string]float64{"validate/go-test-cold": 0.4, "validate-cold-s": 4}},
	}
	goals := judgeGoals(results)
	byFigure := map[string]BenchGoal{}
	for _, g := range goals {
		byFigure[g.Benchmark+" "+g.Metric] = g
	}
	tests := []struct {
		name, key   string
		measured    bool
		met         bool
		withinNoise bool
	}{
		{"upper bound met", "BenchmarkBringUp containers/embedded", true, true, false},
		{"upper bound missed", "BenchmarkBringUp containers-s/op", true, false, false},
		{"lower bound missed", "BenchmarkLeaseThroughput pairs/s-16-clients", true, false, false},
		{"sub-benchmark with its GOMAXPROCS suffix", "BenchmarkLegOverhead/pool-exhaustion p50-ms", true, true, false},
		{"not run", "BenchmarkWarmAttach warm/cold", false, false, false},
		{"lower bound missed by less than twice the standard error", "BenchmarkProxiedVsDirect proxied/bare", true, true, true},
		{"a warm goal is not judged on a cold run", "BenchmarkAdopterValidate validate-warm/go-test-own-layer", false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, ok := byFigure[tt.key]
			if !ok {
				t.Fatalf("no goal for %s", tt.key)
			}
			if (g.Value != nil) != tt.measured {
				t.Fatalf("%s: measured = %v, want %v", tt.key, g.Value != nil, tt.measured)
			}
			if tt.measured && *g.Met != tt.met {
				t.Errorf("%s = %v against %s: met = %v, want %v", tt.key, *g.Value, g.Goal, *g.Met, tt.met)
			}
			if g.WithinNoise != tt.withinNoise {
				t.Errorf("%s against %s: within noise = %v, want %v", tt.key, g.Goal, g.WithinNoise, tt.withinNoise)
			}
		})
	}
}

func TestBenchAdopterSelection(t *testing.T) {
	for _, tt := range []struct {
		filter string
		want   bool
	}{
		{".", true},
		{"AdopterValidate", true},
		{"Adopter|Lease", true},
		{"LegOverhead/reset", false},
		{"Verify", false},
	} {
		if got := wantsAdopter(tt.filter); got != tt.want {
			t.Errorf("wantsAdopter(%q) = %v, want %v", tt.filter, got, tt.want)
		}
	}
	for _, tt := range []struct {
		benchtime string
		want      int
	}{{"3x", 3}, {"10x", 10}, {"2s", 3}} {
		if got := benchRounds(tt.benchtime); got != tt.want {
			t.Errorf("benchRounds(%q) = %d, want %d", tt.benchtime, got, tt.want)
		}
	}
	if got := median([]float64{3, 1, 2}); got != 2 {
		t.Errorf("median of 3 1 2 = %v", got)
	}
	if got := median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("median of 4 1 3 2 = %v", got)
	}
}
