package contested

import (
	"strings"
	"testing"

	"github.com/contested/contested/internal/capability"
)

// Require stops the test when this machine lacks a capability it needs:
// "docker", "postgres", "chromium", "cores" or "disk". It fails the test
// under CI, where everything the battery needs is installed, and skips it
// elsewhere, saying what is missing and the command that provides it
// ("missing capability chromium: not found on PATH (…); provide it:
// apt-get install chromium"). validate reads those words: the capability
// matrix in validate.json lists the test among those that need it, and a
// leg the test would have run is NOT-RUN naming it.
func Require(tb testing.TB, name string) {
	tb.Helper()
	if !capability.Known(name) {
		known := make([]string, len(capability.Names))
		for i, n := range capability.Names {
			known[i] = string(n)
		}
		tb.Fatalf("contested: Require: unknown capability %q (known: %s)", name, strings.Join(known, ", "))
	}
	capability.Require(tb, capability.Name(name))
}
