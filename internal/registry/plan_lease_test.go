package registry

import "testing"

// TestTheDefaultLeasePatternsLookForWords: lease, lock and fence code is
// found by the default patterns; release notes, clocks and blocks are not.
func TestTheDefaultLeasePatternsLookForWords(t *testing.T) {
	p := DefaultPlan()
	for file, want := range map[string]bool{
		"examples/pglock/pglock.go":          true,
		"internal/faultlayer/lease/lease.go": true,
		"store/fence_token.go":               true,
		"docs/release-notes.md":              false,
		"clock/clock.go":                     false,
		"store/block.go":                     false,
		"internal/flock/flock.go":            false,
	} {
		if _, got := p.LeaseCode(file); got != want {
			t.Errorf("%s: lease code %v, want %v", file, got, want)
		}
	}
}
