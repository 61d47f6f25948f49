package contested

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/faultlayer"
	"github.com/contested/contested/internal/faultlayer/faulttest"
	"github.com/contested/contested/internal/faultlayer/levers"
	"github.com/contested/contested/internal/registry"
	"github.com/contested/contested/internal/runenv"
)

// Process-wide state: one registry and one armer per test binary, shared
// by its legs.
var (
	regOnce sync.Once
	reg     *registry.Registry
	regErr  error

	armMu sync.Mutex
	armer *levers.PgFaultArmer
)

// processEnv is the run's environment as this test process was given it,
// read once: the results directory, the run id and the registry every leg
// of the process writes to and reads.
var processEnv = sync.OnceValues(runenv.Process)

// loadRegistry loads the registry runenv names (CONTESTED_SURFACES, default
// contested-surfaces.toml, relative to the module root, not the package
// directory go test runs in).
func loadRegistry() (*registry.Registry, error) {
	regOnce.Do(func() {
		env, _ := processEnv()
		reg, regErr = registry.Load(env.Registry)
	})
	return reg, regErr
}

// recorder writes the process's records to its results directory, under
// its run id (processEnv).
func recorder() (*faultrecord.Recorder, error) {
	env, err := processEnv()
	if err != nil {
		return nil, fmt.Errorf("new recorder: %w", err)
	}
	_, pkg := packageDir()
	return faultrecord.NewRecorder(pkg, faultrecord.WithResultsDir(env.ResultsDir.String()),
		faultrecord.WithRunID(env.RunID), faultrecord.WithModuleRoot(env.ModuleRoot))
}

func armerFor(ctx context.Context, l *faultlayer.Layer, r *registry.Registry) (*levers.PgFaultArmer, error) {
	armMu.Lock()
	defer armMu.Unlock()
	if armer != nil {
		return armer, nil
	}
	a, err := levers.NewPgFaultArmer(ctx, l.DB(), r.Guard.CanonicalDatabases)
	if err != nil {
		return nil, err
	}
	armer = a
	return a, nil
}

// Main runs a package's tests and tears down the fault layer its legs
// shared, then exits with the tests' code: the whole TestMain of a package
// that starts legs and needs no set-up of its own.
//
//	func TestMain(m *testing.M) { contested.Main(m) }
//
// A package whose crash-and-resume legs run the test binary as their
// worker (TestBinary) hands Main its roles: in a worker process, Main runs
// the role instead of the tests (Serve).
//
//	func TestMain(m *testing.M) { contested.Main(m, contested.Role("jobs", runJobs)) }
func Main(m *testing.M, roles ...WorkerRole) {
	Serve(roles...)
	faulttest.Main(m)
}

// Run runs a package's tests, tears down the fault layer its legs shared
// and returns the tests' exit code without exiting: the form for a package
// that already has a TestMain, which calls Run where it called m.Run,
// around its own set-up and tear-down, and exits with the code itself.
// Worker roles are Serve's, called before the set-up.
//
//	func TestMain(m *testing.M) {
//		stop := startQueue() // the package's own set-up
//		code := contested.Run(m)
//		stop() // its own tear-down, after the legs' layer is down
//		os.Exit(code)
//	}
func Run(m *testing.M) int {
	code := m.Run()
	faulttest.Close()
	return code
}
