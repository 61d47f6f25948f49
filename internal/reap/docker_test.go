package reap

import (
	"context"
	"testing"

	"github.com/moby/moby/client"

	"github.com/contested/contested/internal/dockerenv"
)

// requireDocker returns a client of the local engine; without one the
// test fails under CI and skips elsewhere.
func requireDocker(tb testing.TB) Docker {
	tb.Helper()
	return dockerenv.Require(tb)
}

// createNetwork creates a labelled network and removes it when the test
// ends, whatever the sweep did.
func createNetwork(tb testing.TB, d Docker, name string, labels map[string]string) {
	tb.Helper()
	nc, ok := d.(interface {
		NetworkCreate(context.Context, string, client.NetworkCreateOptions) (client.NetworkCreateResult, error)
	})
	if !ok {
		tb.Fatal("the engine client cannot create networks")
	}
	if _, err := nc.NetworkCreate(context.Background(), name, client.NetworkCreateOptions{Driver: "bridge", Labels: labels}); err != nil {
		tb.Fatalf("create network %s: %v", name, err)
	}
	tb.Cleanup(func() { _, _ = d.NetworkRemove(context.Background(), name, client.NetworkRemoveOptions{}) })
}
