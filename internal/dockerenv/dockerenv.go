// Package dockerenv connects to the Docker engine the project drives and
// sets up testcontainers-go the way the project relies on it: no reaper
// container (our own labels and sweep replace it) and published ports
// reached on 127.0.0.1.
package dockerenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/contested/contested/internal/tier"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
)

// ErrNoEngine reports that no Docker engine answered.
var ErrNoEngine = errors.New("no Docker engine answered")

var setup sync.Once

// Configure applies the testcontainers settings before its configuration is
// first read. Values the user exported win. testcontainers' own chatter goes
// to w (io.Discard when nil).
func Configure(w io.Writer) {
	setup.Do(func() {
		setDefault("TESTCONTAINERS_RYUK_DISABLED", "true")
		setDefault("TESTCONTAINERS_HOST_OVERRIDE", "127.0.0.1")
	})
	if w == nil {
		w = io.Discard
	}
	tclog.SetDefault(logger{w})
}

func setDefault(k, v string) {
	if _, ok := os.LookupEnv(k); !ok {
		os.Setenv(k, v)
	}
}

type logger struct{ w io.Writer }

func (l logger) Printf(format string, v ...any) {
	fmt.Fprintf(l.w, "testcontainers: "+format+"\n", v...)
}

// Connect returns a client for the engine named by DOCKER_HOST (or the
// default socket) once it answers a ping within a few seconds.
func Connect(ctx context.Context) (*testcontainers.DockerClient, error) {
	Configure(nil)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoEngine, err)
	}
	if _, err := cli.Ping(ctx, client.PingOptions{}); err != nil {
		cli.Close()
		return nil, fmt.Errorf("%w: %v", ErrNoEngine, err)
	}
	return cli, nil
}

// InCI reports whether the process runs under CI (CI set to a non-empty
// value other than "false"). There, a test that needs Docker fails instead
// of skipping.
func InCI() bool {
	v := os.Getenv("CI")
	return v != "" && v != "false" && v != "0"
}

// SkipOrFail stops a test that cannot run here; msg says what is missing
// and what to do. Under CI, where everything the battery needs is
// installed, it fails the test; elsewhere it skips it. Every test that
// depends on what this machine has goes through here, so a skip never
// hides a missing piece in CI.
func SkipOrFail(tb testing.TB, msg string) {
	tb.Helper()
	if InCI() {
		tb.Fatal(msg + " (CI is set: failing instead of skipping)")
	}
	tb.Skip(msg)
}

// Require returns a client for tests that need the engine. Without one it
// fails the test under CI and skips it elsewhere, saying what to install.
func Require(tb testing.TB) *testcontainers.DockerClient {
	tb.Helper()
	tier.Full(tb, "docker")
	cli, err := Connect(context.Background())
	if err != nil {
		// The words of package capability, which imports this one.
		SkipOrFail(tb, fmt.Sprintf("missing capability docker: no engine answered (%v); provide it: apt-get install docker.io && service docker start", err))
	}
	tb.Cleanup(func() { cli.Close() })
	return cli
}
