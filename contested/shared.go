package contested

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/contested/contested/faultlayer"
	"github.com/contested/contested/faultlayer/faulttest"
	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/registry"
)

// Process-wide state: one registry and one armer per test binary, shared
// by its legs.
var (
	regOnce sync.Once
	reg     *registry.Registry
	regErr  error

	armMu sync.Mutex
	armer *PgFaultArmer
)

// loadRegistry loads CONTESTED_SURFACES (default contested-surfaces.toml);
// a relative path is taken from the module root, not the package directory
// go test runs in.
func loadRegistry() (*registry.Registry, error) {
	regOnce.Do(func() {
		p := registry.Path()
		if !filepath.IsAbs(p) {
			if wd, err := os.Getwd(); err == nil {
				if root, err := faultrecord.ModuleRoot(wd); err == nil {
					p = filepath.Join(root, p)
				}
			}
		}
		reg, regErr = registry.Load(p)
	})
	return reg, regErr
}

// recorder is built per use so that CONTESTED_RESULTS_DIR and
// CONTESTED_RUN_ID are read when a record is written.
func recorder() (*faultrecord.Recorder, error) {
	_, pkg := packageDir()
	return faultrecord.NewRecorder(pkg)
}

func armerFor(ctx context.Context, l *faultlayer.Layer, r *registry.Registry) (*PgFaultArmer, error) {
	armMu.Lock()
	defer armMu.Unlock()
	if armer != nil {
		return armer, nil
	}
	a, err := NewPgFaultArmer(ctx, l.DB(), r.Guard.CanonicalDatabases)
	if err != nil {
		return nil, err
	}
	armer = a
	return a, nil
}

// Main runs a package's tests and tears down the fault layer its legs
// shared: the whole TestMain of a package that starts legs.
func Main(m *testing.M) { faulttest.Main(m) }
