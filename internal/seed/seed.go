// Package seed gives the one value every seeded choice of a run is drawn
// from: read once from CONTESTED_SEED, drawn afresh when that is unset,
// turned into random sources one way, and named in one replay command.
//
// Seed 0 is no seed: it is the value of "unset" everywhere (a ladder
// outcome or a record without a seed holds 0), so CONTESTED_SEED=0 is
// refused rather than replayed as something else.
package seed

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/contested/contested/internal/envvar"
)

// Seed is a run's seed; Unset (0) when there is none.
type Seed int64

// Unset is no seed.
const Unset Seed = 0

// drawn bounds a fresh seed: 2^53 keeps it exact in every JSON reader.
const drawn = 1 << 53

// ErrInvalid means CONTESTED_SEED holds no seed.
var ErrInvalid = errors.New("bad seed")

// Parse reads a seed as CONTESTED_SEED holds it: "" is Unset; anything
// but a positive integer is ErrInvalid, never silently replaced, since a
// replay that does not replay is worse than none.
func Parse(v string) (Seed, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return Unset, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return Unset, fmt.Errorf("%w: %s=%q is not a seed (a positive integer, as a replay line prints one); unset it for a fresh seed", ErrInvalid, envvar.Seed, v)
	}
	return Seed(n), nil
}

// FromEnv reads CONTESTED_SEED (Parse).
func FromEnv() (Seed, error) { return Parse(os.Getenv(envvar.Seed)) }

// New draws a fresh seed.
func New() Seed { return Seed(1 + rand.Int64N(drawn-1)) }

// OrNew is s, or a fresh seed when s is Unset.
func (s Seed) OrNew() Seed {
	if s == Unset {
		return New()
	}
	return s
}

// Say is s in words for a reader: "seed 7", or, for Unset, "seed
// unknown" (no record named it, so no replay can repeat its schedule). Every line that names a
// run's seed says it this way, so none prints "seed 0", a seed nobody
// can replay.
func (s Seed) Say() string {
	if !s.IsSet() {
		return "seed unknown"
	}
	return "seed " + strconv.FormatInt(int64(s), 10)
}

// IsSet reports whether s is a seed.
func (s Seed) IsSet() bool { return s != Unset }

// Rand is the random source of one purpose drawn from s ("reset/base",
// "leg", "degraded"): every seeded choice comes from one, in a fixed
// order, so one seed replays the same run, and two purposes never draw
// from the same stream.
func (s Seed) Rand(purpose string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(purpose))
	return rand.New(rand.NewPCG(uint64(s), h.Sum64()))
}

// Env is the variable that hands s to a child process.
func (s Seed) Env() string { return envvar.Seed + "=" + strconv.FormatInt(int64(s), 10) }

// Replay is the go test command that reruns one test, from the module
// root, with s at level: the seed and the level are the whole schedule,
// so it names both (the level only when it is not 1, the default), and
// only the seed when it is set.
func (s Seed) Replay(level int, pkgDir, test string) string {
	cmd := fmt.Sprintf("go test %s -run '%s' -count=1", pkgDir, RunPattern(test))
	if level > 1 {
		cmd = fmt.Sprintf("%s=%d %s", envvar.Level, level, cmd)
	}
	if s.IsSet() {
		cmd = s.Env() + " " + cmd
	}
	return cmd
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
