package runenv

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"

	"github.com/contested/contested/internal/envvar"
)

// maxSeed keeps seeds exact in every JSON reader (2^53).
const maxSeed = 1 << 53

// SeedOrNew returns CONTESTED_SEED when it is set (Seed), otherwise a fresh
// random seed. A malformed CONTESTED_SEED is an error, never silently
// replaced: a replay that does not replay is worse than none.
func SeedOrNew() (int64, error) {
	seed, set, err := Seed()
	if err != nil || set {
		return seed, err
	}
	return 1 + rand.Int64N(maxSeed-1), nil
}

// ReplayCommand is the go test command that reruns one test with one seed
// at one level, from the module root: the seed and the level are the whole
// schedule, so the command names both (the level only when it is not 1,
// the default). pkgDir is the package's directory as go test takes it
// ("./store").
func ReplayCommand(seed int64, level int, pkgDir, test string) string {
	lv := ""
	if level > 1 {
		lv = fmt.Sprintf("%s=%d ", envvar.Level, level)
	}
	return fmt.Sprintf("%s=%d %sgo test %s -run '%s' -count=1", envvar.Seed, seed, lv, pkgDir, RunPattern(test))
}

// RunPattern is the go test -run pattern that selects exactly one test:
// each level of its name anchored and quoted.
func RunPattern(test string) string {
	parts := strings.Split(test, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}
