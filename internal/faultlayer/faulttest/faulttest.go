// Package faulttest gives a test binary one fault layer, brought up on
// first use and torn down when its tests end: the layer named by the
// environment (CONTESTED_LAYER and the rest) when one is, otherwise the one
// CONTESTED_LAYER=auto picks. Tests that need the containers provider
// itself ask Containers, which follows faultlayer.ContainersCanRun.
package faulttest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/capability"
	"github.com/contested/contested/internal/faultlayer"
	"github.com/contested/contested/internal/interrupt"
	"github.com/contested/contested/internal/runenv"
	"github.com/contested/contested/internal/tier"
)

var (
	mu    sync.Mutex
	layer *faultlayer.Layer
	err   error
	tried bool
)

// Layer returns the shared layer. When none can be brought up it fails the
// test under CI and skips it elsewhere, saying what to install.
func Layer(tb testing.TB) *faultlayer.Layer {
	tb.Helper()
	tier.Full(tb, "a fault layer")
	mu.Lock()
	defer mu.Unlock()
	if !tried {
		tried = true
		// This process now owns a layer: its teardown must outlive a
		// reader of its output that is gone (contested.Run's caller too).
		interrupt.SurviveBrokenPipe()
		var cfg faultlayer.Config
		if cfg, err = faultlayer.ConfigFromEnv(); err == nil {
			cfg.Log = os.Stderr
			cfg.Canonical = canonical()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			layer, err = faultlayer.Up(ctx, cfg)
			cancel()
		}
	}
	if err != nil {
		capability.SkipOrFail(tb, capability.Capability{Name: capability.Docker,
			Provide: capability.Provide(capability.Docker) + " (or " + capability.Provide(capability.Postgres) + " for CONTESTED_LAYER=embedded)"},
			fmt.Sprintf("no fault layer came up (%v)", err))
	}
	return layer
}

// canonical is the registry's [guard] canonical_databases (the registry
// runenv names), which the layer refuses to be; none when there is no
// registry to read (a test that needs one fails on its own account). Only
// that key is read, leniently: package registry, which checks the whole
// file, imports the levers whose tests use this package.
func canonical() []string {
	env, err := runenv.Process()
	if err != nil {
		return nil
	}
	b, err := atomicfile.Load(env.Registry, maxRegistry)
	if err != nil {
		return nil
	}
	var reg struct {
		Guard struct {
			CanonicalDatabases []string `toml:"canonical_databases"`
		} `toml:"guard"`
	}
	if toml.Unmarshal(b, &reg) != nil {
		return nil
	}
	return reg.Guard.CanonicalDatabases
}

// maxRegistry caps the registry read for its guard.
const maxRegistry = 4 << 20

// Containers returns the configuration of a containers layer with the
// images the environment names, for a test that exercises the containers
// provider itself. When containers cannot come up here
// (faultlayer.ContainersCanRun) it fails the test under CI and skips it
// elsewhere, with the reason: within seconds when the images cannot be
// had, never after waiting for a bring-up that cannot happen.
func Containers(tb testing.TB) faultlayer.Config {
	tb.Helper()
	tier.Full(tb, "docker")
	cfg := faultlayer.ConfigFor(faultlayer.Containers)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := faultlayer.ContainersCanRun(ctx, cfg); err != nil {
		capability.SkipOrFail(tb, capability.Capability{Name: capability.Docker}, fmt.Sprintf("the containers fault layer cannot run here: %v", err))
	}
	return cfg
}

// Close tears the shared layer down; call it after m.Run in TestMain.
func Close() {
	mu.Lock()
	defer mu.Unlock()
	if layer != nil {
		layer.Close(context.Background())
		layer = nil
	}
}

// Main runs the tests and tears the shared layer down: the whole TestMain
// of a package whose tests use Layer.
func Main(m *testing.M) {
	// The shared layer is torn down after the tests even when whoever read
	// this binary's output is gone.
	interrupt.SurviveBrokenPipe()
	code := m.Run()
	Close()
	os.Exit(code)
}
