package faultlayer

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/contested/contested/internal/dockerenv"
	"github.com/contested/contested/internal/reexec"
	"github.com/contested/contested/internal/tier"
)

var helpers = reexec.Roles{}

func TestMain(m *testing.M) {
	reexec.Main(helpers)
	code := m.Run()
	shared.close()
	os.Exit(code)
}

// helperCmd returns a command that re-executes the test binary as role.
func helperCmd(t testing.TB, role string, env ...string) *exec.Cmd {
	t.Helper()
	return reexec.Command(t, role, env...)
}

// sharedLayer is one layer for the tests that do not test bring-up itself.
type sharedLayer struct {
	once  sync.Once
	layer *Layer
	err   error
}

var shared sharedLayer

func (s *sharedLayer) get(t testing.TB) *Layer {
	t.Helper()
	tier.Full(t, "a fault layer")
	s.once.Do(func() {
		cfg, err := ConfigFromEnv()
		if err != nil {
			s.err = err
			return
		}
		cfg.Log = os.Stderr
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		s.layer, s.err = Up(ctx, cfg)
	})
	if s.err != nil {
		dockerenv.SkipOrFail(t, fmt.Sprintf("no fault layer (%v): install docker.io, or postgresql for the embedded layer", s.err))
	}
	return s.layer
}

// requireContainers is faulttest.Containers for this package's own tests,
// which cannot import faulttest (it imports this package): the containers
// configuration when ContainersCanRun says yes, else a skip (a failure
// under CI) naming what is missing.
func requireContainers(tb testing.TB) Config {
	tb.Helper()
	tier.Full(tb, "docker")
	cfg := ConfigFor(Containers)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := ContainersCanRun(ctx, cfg); err != nil {
		dockerenv.SkipOrFail(tb, fmt.Sprintf("this test needs the containers fault layer: %v", err))
	}
	return cfg
}

func (s *sharedLayer) close() {
	if s.layer != nil {
		s.layer.Close(context.Background())
	}
}
