package contested

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/contested/contested/internal/runenv"
	"github.com/contested/contested/internal/seed"
)

// Seed returns the seed a leg uses: CONTESTED_SEED when set, otherwise a
// fresh random one. A malformed CONTESTED_SEED (or 0, which is no seed)
// is an error, never silently replaced: a replay that does not replay is
// worse than none.
func Seed() (int64, error) {
	s, err := seed.FromEnv()
	return int64(s.OrNew()), err
}

// Level is the intensity CONTESTED_LEVEL asks for (runenv.Level): 1 sunny
// (one lever at a time), 2 stormy (levers combined), 3 radioactive (all
// levers, repeated crash-restart). Contract tests read it to decide which
// legs to run.
func Level() (int, error) { return runenv.Level() }

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
