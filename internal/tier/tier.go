// Package tier tells a test which of the two test tiers runs it: the fast
// tier (go test -short ./...) runs every test that needs neither Docker
// nor Postgres nor a browser nor a whole validate; the full tier
// (go test ./...) runs them all.
package tier

import "testing"

// Full stops a test that belongs to the full tier when the fast tier runs
// it. needs says what makes the test slow or what it needs ("docker", "a
// fault layer", "a whole validate"), so a skipped line says how to run it.
// It skips under -short even in CI: the fast tier is chosen, never forced,
// and CI runs the full tier.
func Full(tb testing.TB, needs string) {
	tb.Helper()
	if testing.Short() {
		tb.Skipf("full tier: needs %s; go test ./... runs it", needs)
	}
}
