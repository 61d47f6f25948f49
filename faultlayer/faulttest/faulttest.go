// Package faulttest gives a test binary one fault layer, brought up on
// first use and torn down when its tests end: the layer named by the
// environment (CONTESTED_LAYER and the rest) when one is, otherwise the one
// CONTESTED_LAYER=auto picks.
package faulttest

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/contested/contested/faultlayer"
	"github.com/contested/contested/internal/dockerenv"
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
	mu.Lock()
	defer mu.Unlock()
	if !tried {
		tried = true
		var cfg faultlayer.Config
		if cfg, err = faultlayer.ConfigFromEnv(); err == nil {
			cfg.Log = os.Stderr
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			layer, err = faultlayer.Up(ctx, cfg)
			cancel()
		}
	}
	if err != nil {
		if dockerenv.InCI() {
			tb.Fatalf("bring up the fault layer: %v", err)
		}
		tb.Skipf("no fault layer (%v): install docker.io, or postgresql for CONTESTED_LAYER=embedded", err)
	}
	return layer
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
	code := m.Run()
	Close()
	os.Exit(code)
}
