package faultlayer

import (
	"context"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/contested/contested/internal/dockerenv"
	"github.com/contested/contested/internal/reexec"
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
		if dockerenv.InCI() {
			t.Fatalf("bring up the fault layer: %v", s.err)
		}
		t.Skipf("no fault layer (%v): install docker.io, or postgresql for the embedded layer", s.err)
	}
	return s.layer
}

func (s *sharedLayer) close() {
	if s.layer != nil {
		s.layer.Close(context.Background())
	}
}
