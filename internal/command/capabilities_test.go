package command

import (
	"bytes"
	"strings"
	"testing"

	"github.com/contested/contested/internal/capability"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/registry"
)

// TestTheMissingLineNamesTheSurfaceAndLegsThatNeedIt: a capability a
// surface's registry needs names, missing here, is printed as MISSING
// with the surface and every one of its legs it stops, however many other
// things need it too.
func TestTheMissingLineNamesTheSurfaceAndLegsThatNeedIt(t *testing.T) {
	const doc = `schema = 1

[degraded]
build = "./cmd/web"

[[surface]]
id = "shop.checkout"
class = "store"
owner = "shop-team"
behavior = "a paid order is shown as paid"
oracle = "exactly-once"
legs = ["reset", "disconnect", "latency", "burst", "confirm-timeout"]
tests = ["TestCheckout"]
needs = ["chromium"]

[[surface]]
id = "shop.cart"
class = "store"
owner = "shop-team"
behavior = "a cart keeps its items"
oracle = "exactly-once"
legs = ["reset"]
tests = ["TestCart"]
needs = ["chromium"]
`
	reg, err := registry.Parse("contested-surfaces.toml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	m := capability.Matrix{{Name: capability.Chromium, Detail: "not found on PATH", Provide: "apt-get install chromium"}, {Name: capability.Docker, Present: true}}
	contract.Needs(m, reg, "containers", nil)
	var out bytes.Buffer
	writeCapabilities(&out, m, reg)
	for _, tc := range []struct{ name, want string }{
		{"it says what is missing", "MISSING missing capability chromium: not found on PATH; provide it: apt-get install chromium"},
		{"it names the stage that needs it", "stage degraded"},
		{"it names the surface with every one of its legs", "surface shop.checkout (legs reset, disconnect, latency, burst, confirm-timeout)"},
		{"a surface of one leg says leg", "surface shop.cart (leg reset)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(out.String(), tc.want) {
				t.Errorf("the matrix does not say %q:\n%s", tc.want, out.String())
			}
		})
	}
	if strings.Contains(out.String(), "more") {
		t.Errorf("the line cuts who needs it short:\n%s", out.String())
	}
}
