package command

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/contested/contested/internal/envvar"
)

// watchedLayer is an external layer that counts every contact: HTTP
// requests to its "Toxiproxy" and connections to its "Postgres". A command
// that starts anything against the layer shows up in the counts.
type watchedLayer struct {
	toxiproxy, postgres string
	contacts            atomic.Int64
}

func watchLayer(t *testing.T) *watchedLayer {
	t.Helper()
	w := &watchedLayer{}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.contacts.Add(1)
		http.NotFound(rw, r)
	}))
	t.Cleanup(srv.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			w.contacts.Add(1)
			c.Close()
		}
	}()
	w.toxiproxy, w.postgres = srv.URL, "postgres://u:p@"+ln.Addr().String()+"/db?connect_timeout=1"
	return w
}

// TestBadVariablesAreRefusedBeforeAnythingStarts runs every target that
// reads the run's variables with one bad value at a time, against a layer
// that counts contacts: each exits 2 naming the variable, before touching
// the layer, listing a test or writing anything under the results
// directory. The control row shows the counting works.
func TestBadVariablesAreRefusedBeforeAnythingStarts(t *testing.T) {
	type target struct {
		name string
		run  func(ctx context.Context, dir string) error
		// reads lists the variables the target reads besides the layer's.
		reads []string
	}
	var out strings.Builder
	targets := []target{
		{"validate", func(ctx context.Context, dir string) error {
			return Validate(ctx, ValidateOptions{Dir: dir, Out: &out})
		}, []string{varSeed, varSeeds, varLevel, varBudget, varTimeout}},
		{"program-gate", func(ctx context.Context, dir string) error {
			return ProgramGate(ctx, ProgramGateOptions{Dir: dir, Out: &out})
		}, []string{varLevel}},
		{"fault-preflight", func(ctx context.Context, dir string) error {
			return FaultPreflight(ctx, PreflightOptions{Required: true, Out: &out})
		}, nil},
		{"contested", func(ctx context.Context, dir string) error {
			return Contested(ctx, ContestedOptions{Dir: dir, Surface: "m.store", Out: &out})
		}, []string{varSeed, varSeeds, varLevel, varTimeout}},
		{"arbitrate", func(ctx context.Context, dir string) error {
			return Arbitrate(ctx, ArbitrateOptions{Dir: dir, Test: "TestLeg", Out: &out})
		}, []string{varSeed, varSeeds, varLevel, varTimeout}},
		{"bench", func(ctx context.Context, dir string) error {
			return Bench(ctx, BenchOptions{Dir: dir, Out: &out})
		}, nil},
		{"mutants", func(ctx context.Context, dir string) error {
			return Mutants(ctx, MutantsOptions{Dir: dir, Patterns: []string{"."}, Out: &out})
		}, []string{varSeed, varSeeds, varLevel}},
	}
	bad := map[string]string{
		varSeed:                "x",
		varSeeds:               "0",
		varLevel:               "9",
		varBudget:              "soon",
		varTimeout:             "later",
		envvar.RunID:           "bad/id",
		envvar.ProxyListenHost: "everywhere",
		envvar.ProxyPorts:      "20000",
		envvar.Layer:           "bogus",
		envvar.PostgresBin:     "/no/such/postgres",
	}
	layerVars := []string{envvar.RunID, envvar.ProxyListenHost, envvar.ProxyPorts, envvar.Layer, envvar.PostgresBin}
	for _, tg := range targets {
		for _, v := range append(append([]string(nil), tg.reads...), layerVars...) {
			t.Run(tg.name+"/"+v, func(t *testing.T) {
				dir := module(t)
				w := watchLayer(t)
				results := t.TempDir()
				for _, k := range append(layerVars, varSeed, varSeeds, varLevel, varBudget, varTimeout) {
					t.Setenv(k, "")
					os.Unsetenv(k)
				}
				t.Setenv(envvar.ToxiproxyURL, w.toxiproxy)
				t.Setenv(envvar.PostgresDSN, w.postgres)
				t.Setenv(envvar.ResultsDir, results)
				t.Setenv(envvar.Surfaces, "")
				t.Setenv(v, bad[v])
				out.Reset()
				err := tg.run(context.Background(), dir)
				if got := ExitCode(err); got != ExitUsage || !strings.Contains(err.Error(), v) {
					t.Fatalf("%s=%q: exit %d (%v), want %d naming %s; output:\n%s", v, bad[v], got, err, ExitUsage, v, out.String())
				}
				if n := w.contacts.Load(); n != 0 {
					t.Errorf("%s=%q: the layer was contacted %d times before the refusal", v, bad[v], n)
				}
				if entries, _ := os.ReadDir(results); len(entries) != 0 {
					t.Errorf("%s=%q: the results directory got %d entries before the refusal", v, bad[v], len(entries))
				}
			})
		}
	}
	t.Run("control: good variables reach the layer", func(t *testing.T) {
		w := watchLayer(t)
		t.Setenv(envvar.Layer, "")
		t.Setenv(envvar.ToxiproxyURL, w.toxiproxy)
		t.Setenv(envvar.PostgresDSN, w.postgres)
		t.Setenv(envvar.ResultsDir, t.TempDir())
		out.Reset()
		err := FaultPreflight(context.Background(), PreflightOptions{Required: true, Out: &out})
		if ExitCode(err) != ExitCannotRun || w.contacts.Load() == 0 {
			t.Errorf("exit %d (%v) after %d contacts; want %d after some (the fake is not a layer)", ExitCode(err), err, w.contacts.Load(), ExitCannotRun)
		}
	})
}

// TestArbitrateRefusesAnUndeclaredTestFromTheSources: a test no _test.go
// file declares is bad input, found without building a test binary or
// touching the layer; a declared one goes on to the ladder.
func TestArbitrateRefusesAnUndeclaredTestFromTheSources(t *testing.T) {
	dir := module(t)
	w := watchLayer(t)
	t.Setenv(envvar.Layer, "")
	t.Setenv(envvar.ToxiproxyURL, w.toxiproxy)
	t.Setenv(envvar.PostgresDSN, w.postgres)
	t.Setenv(envvar.ResultsDir, t.TempDir())
	t.Setenv(envvar.Surfaces, "")
	if err := declaredTest(context.Background(), dir, "TestNoSuch/sub"); ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "none of its 1 _test.go files declares func TestNoSuch") {
		t.Errorf("undeclared test: %v, want exit 2 saying no file declares it", err)
	}
	if err := declaredTest(context.Background(), dir, "TestLeg/sub"); err != nil {
		t.Errorf("a declared test is refused: %v", err)
	}
	var out strings.Builder
	err := Arbitrate(context.Background(), ArbitrateOptions{Dir: dir, Test: "TestNoSuch", Out: &out})
	if ExitCode(err) != ExitUsage || w.contacts.Load() != 0 {
		t.Errorf("arbitrate TestNoSuch: exit %d (%v), %d layer contacts; want 2 and none", ExitCode(err), err, w.contacts.Load())
	}
}
