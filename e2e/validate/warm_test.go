package validate

import (
	"context"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/contested/contested/e2e/internal/e2etest"
	"github.com/contested/contested/internal/dockerenv"
	"github.com/contested/contested/internal/fixture"
	"github.com/contested/contested/internal/reap"
)

// TestValidateAttachesToTheWarmLayer is the pre-push loop as a developer
// types it, on real containers: layer up, layer status, validate (which
// says it attached, and leaves the layer up), layer down (which leaves
// nothing labelled). The warm layer's record lives in a cache directory of
// the test's own, so no other process attaches to it.
func TestValidateAttachesToTheWarmLayer(t *testing.T) {
	t.Parallel()
	cli := dockerenv.Require(t)
	dir := e2etest.Adopter(t, nil)
	cache := t.TempDir()
	private, err := fixture.PrivateCache(context.Background(), cache)
	if err != nil {
		t.Fatal(err)
	}
	// Not the shared external layer e2etest.Mage hands over: auto, so that the
	// warm layer is found.
	env := append(private, "CONTESTED_LAYER=", "CONTESTED_TOXIPROXY_URL=", "CONTESTED_PG_DSN=",
		"CONTESTED_PROXY_PORTS=", "CONTESTED_PROXY_LISTEN_HOST=", "CONTESTED_PG_UPSTREAM=", "CONTESTED_RUN_ID=warm-e2e-"+strconv.Itoa(os.Getpid()))
	warm := func(labels map[string]string) (bool, string) {
		return strings.HasPrefix(labels[reap.LabelWarm], cache), ""
	}
	t.Cleanup(func() {
		e2etest.Mage(t, dir, env, "layer", "down")
		reap.Sweep(context.Background(), cli, warm, io.Discard)
	})

	out, code := e2etest.Mage(t, dir, env, "layer", "up")
	if code != 0 || !strings.Contains(out, "warm layer up") {
		t.Fatalf("layer up: exit %d, want 0 and the layer:\n%s", code, out)
	}
	out, code = e2etest.Mage(t, dir, env, "layer", "status")
	if code != 0 || !strings.Contains(out, "current") || !strings.Contains(out, "layer-toxiproxy") {
		t.Fatalf("layer status: exit %d, want 0, current, with its containers:\n%s", code, out)
	}
	out, code = e2etest.Mage(t, dir, env, "validate")
	if code != 0 || !strings.Contains(out, "validate: GREEN") {
		t.Fatalf("validate on the warm layer: exit %d, want 0 and GREEN:\n%s", code, out)
	}
	if !strings.Contains(out, "attached to the warm layer") {
		t.Errorf("validate does not say it attached to the warm layer:\n%s", out)
	}
	left, err := reap.Leftovers(context.Background(), cli, warm)
	if err != nil || len(left.Containers) != 2 {
		t.Errorf("after validate the warm layer has %s (%v), want its 2 containers up", left, err)
	}
	out, code = e2etest.Mage(t, dir, env, "layer", "down")
	if code != 0 {
		t.Fatalf("layer down: exit %d:\n%s", code, out)
	}
	if left, err := reap.Leftovers(context.Background(), cli, warm); err != nil || !left.Empty() {
		t.Errorf("layer down left %s (%v)", left, err)
	}
	out, code = e2etest.Mage(t, dir, env, "layer", "bogus")
	if code != 2 {
		t.Errorf("layer bogus: exit %d, want 2:\n%s", code, out)
	}
}
