package contested

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/contested/contested/internal/runenv"
)

// Seed returns the seed a leg uses: CONTESTED_SEED when set (runenv.Seed),
// otherwise a fresh random one. A malformed CONTESTED_SEED is an error,
// never silently replaced: a replay that does not replay is worse than none.
func Seed() (int64, error) { return runenv.SeedOrNew() }

// Level is the intensity CONTESTED_LEVEL asks for (runenv.Level): 1 sunny
// (one lever at a time), 2 stormy (levers combined), 3 radioactive (all
// levers, repeated crash-restart). Contract tests read it to decide which
// legs to run.
func Level() (int, error) { return runenv.Level() }

// newRand returns the leg's random source. Every seeded choice of a leg is
// drawn from it, in a fixed order, so one seed replays the same run.
func newRand(seed int64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), uint64(seed)^0x9e3779b97f4a7c15))
}

// ReplayCommand is the go test command that reruns one test with one seed,
// from the module root, at level 1.
func ReplayCommand(seed int64, pkgDir, test string) string {
	return ReplayCommandAt(seed, 1, pkgDir, test)
}

// ReplayCommandAt is the go test command that reruns one test with one
// seed at one level, from the module root: the seed and the level are the
// whole schedule, so the command names both (the level only when it is
// not 1, the default).
func ReplayCommandAt(seed int64, level int, pkgDir, test string) string {
	return runenv.ReplayCommand(seed, level, pkgDir, test)
}

// RunPattern is the go test -run pattern that selects exactly one test:
// each level of its name anchored and quoted.
func RunPattern(test string) string { return runenv.RunPattern(test) }

// packageDir returns the working directory (where go test runs a package's
// tests) relative to the module root, as "./path", and the package's import
// path read from go.mod.
func packageDir() (dir, importPath string) {
	wd, err := os.Getwd()
	if err != nil {
		return ".", ""
	}
	root, err := runenv.ModuleRoot(wd)
	if err != nil {
		return ".", ""
	}
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return ".", ""
	}
	rel, _ := filepath.Rel(root, wd)
	mod := modulePath(b)
	if rel == "." {
		return ".", mod
	}
	return "./" + filepath.ToSlash(rel), mod + "/" + filepath.ToSlash(rel)
}

func modulePath(gomod []byte) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`)
		}
	}
	return ""
}
