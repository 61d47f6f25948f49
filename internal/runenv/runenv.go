// Package runenv is one run's environment: the module it runs in, where its
// artifacts go, its run id, its registry, its level and replayed seed, and
// the coordinates of the fault layer its test processes attach to.
//
// A command builds it once with [Load] (from its flags and the environment,
// docs/reference/environment.md), checks it there, and passes it down as one value; the layer's
// coordinates join it with [Env.Attach] once the layer is up, and
// [Env.Environ] turns it into a child process's environment: the one place
// that writes those variables. A test process reads the same variables
// through [Process] and [Level], the one place that reads them (and the
// seed, through package seed).
// Lower packages (faultrecord, faultlayer) get plain values from here and
// never resolve the run's environment themselves.
package runenv

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/rundir"
	"github.com/contested/contested/internal/runid"
	"github.com/contested/contested/internal/seed"
)

// DefaultRegistry is the registry file, relative to the module root, when
// CONTESTED_SURFACES is unset.
const DefaultRegistry = "contested-surfaces.toml"

// Errors that callers branch on with [errors.Is].
var (
	// ErrNoModuleRoot means no go.mod was found above the working
	// directory, so a relative CONTESTED_RESULTS_DIR cannot be anchored.
	ErrNoModuleRoot = errors.New("no go.mod above the working directory")
	// ErrNotModuleRoot means a command was started outside a module root.
	ErrNotModuleRoot = errors.New("not a module root")
	// ErrInvalid means a variable of the run holds a value that cannot
	// work; the message names it and says what to set.
	ErrInvalid = errors.New("bad run environment")
)

// Env is one run's environment, built once and passed as one value.
type Env struct {
	// ModuleRoot is the module the run is in, absolute ("" when none).
	ModuleRoot string
	// ResultsDir is the root of all artifacts, absolute, and the one
	// value that names what lies in it; Load has checked and readied it
	// (rundir.Prepare).
	ResultsDir rundir.Dir
	// RunID names the run. SharedRunID says it came from the environment,
	// so other processes may carry it too.
	RunID       string
	SharedRunID bool
	// Registry is the registry file, absolute when a module root anchors it.
	Registry string
	// Level is the intensity, 1 to 3.
	Level int
	// Seed is handed to children when it is set: a replay, or one seed of
	// mage contested.
	Seed seed.Seed
	// Layer holds the variables that hand a running fault layer to a child
	// process (faultlayer.Layer.Env); empty until Attach.
	Layer []string
	// Replay holds the variables a failing test ran with (NAME=value,
	// package replayenv), which its reruns are given again; empty unless
	// WithReplay.
	Replay []string
}

// Load builds the environment of a command run in the module rooted at dir
// (default: the working directory; see [ModuleDir]): the registry path and
// results directory resolved against it (the results directory checked and
// readied, see rundir.Prepare) and the run id (CONTESTED_RUN_ID, or a
// fresh one). The level is the caller's to read ([Level]): not every
// command has one. Errors name the variable at fault: a dir without a
// go.mod wraps [ErrNotModuleRoot], a bad results directory
// atomicfile.ErrBadResultsDir, a bad run id [ErrInvalid].
func Load(dir string) (Env, error) {
	dir, err := ModuleDir(dir)
	if err != nil {
		return Env{}, err
	}
	e := Env{ModuleRoot: dir, Registry: RegistryPath(dir), Level: 1}
	if e.ResultsDir, err = rundir.Prepare(dir); err != nil {
		return Env{}, err
	}
	if e.RunID, e.SharedRunID, err = runid.FromEnv(); err != nil {
		return Env{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return e, nil
}

// ModuleDir returns dir (default: the working directory) made absolute,
// after checking it is a module root: it holds a go.mod.
func ModuleDir(dir string) (string, error) {
	var err error
	if dir == "" {
		if dir, err = os.Getwd(); err != nil {
			return "", err
		}
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return "", fmt.Errorf("%w: %s has no go.mod: run the targets from the module root", ErrNotModuleRoot, dir)
	}
	return dir, nil
}

// Process is the environment this process was given, as a test process
// (or a command that needs no module) reads it: the module root found
// above the working directory ("" when none), the results directory and
// registry resolved against it, and the run id (CONTESTED_RUN_ID, or a
// fresh one per call). The level and a replayed seed are read by [Level]
// and seed.FromEnv, where a leg reports a bad value itself. The results
// directory is resolved, not readied: a command has checked it.
func Process() (Env, error) {
	var e Env
	if wd, err := os.Getwd(); err == nil {
		e.ModuleRoot, _ = ModuleRoot(wd)
	}
	e.Registry = RegistryPath(e.ModuleRoot)
	var err error
	if e.ResultsDir, err = rundir.Resolve(e.ModuleRoot); err != nil {
		return e, err
	}
	if e.RunID, e.SharedRunID, err = runid.FromEnv(); err != nil {
		return e, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return e, nil
}

// Attach joins a running layer to the environment: the variables that hand
// it to a child (faultlayer.Layer.Env) and the layer's run id (a shared
// CONTESTED_RUN_ID got a suffix of its own when this process started it).
func (e Env) Attach(layer []string, runID string) Env {
	e.Layer = slices.Clone(layer)
	if runID != "" {
		e.RunID = runID
	}
	return e
}

// WithResultsDir is e with another results directory: a rerun's or a seed's
// private one, so that its records never mix with the battery's.
func (e Env) WithResultsDir(dir string) Env {
	e.ResultsDir = rundir.Dir(dir)
	return e
}

// WithSeed is e handing s to its children.
func (e Env) WithSeed(s seed.Seed) Env {
	e.Seed = s
	return e
}

// WithReplay is e handing vars (NAME=value) to its children: what a
// failing test ran with, for its reruns.
func (e Env) WithReplay(vars []string) Env {
	e.Replay = slices.Clone(vars)
	return e
}

// Environ is the environment of a child process of the run (a go test of
// the battery, a rerun, a seed): the variables a replayed test ran with,
// the layer's coordinates, then the results directory, registry and run
// id (each when known) and the level, and the seed when one is set. It is
// the one place that writes these variables; pass it after os.Environ()
// so that it wins.
func (e Env) Environ() []string {
	var own []string
	for _, kv := range [][2]string{{envvar.ResultsDir, e.ResultsDir.String()}, {envvar.Surfaces, e.Registry}, {envvar.RunID, e.RunID}} {
		if kv[1] != "" {
			own = append(own, kv[0]+"="+kv[1])
		}
	}
	own = append(own, envvar.Level+"="+strconv.Itoa(max(e.Level, 1)))
	if e.Seed.IsSet() {
		own = append(own, e.Seed.Env())
	}
	out := make([]string, 0, len(e.Replay)+len(e.Layer)+len(own))
	for _, kv := range e.Replay {
		if !setsKey(own, kv) && !setsKey(e.Layer, kv) {
			out = append(out, kv)
		}
	}
	for _, kv := range e.Layer {
		if !setsKey(own, kv) {
			out = append(out, kv)
		}
	}
	return append(out, own...)
}

// setsKey reports whether list assigns the variable kv assigns.
func setsKey(list []string, kv string) bool {
	k, _, _ := strings.Cut(kv, "=")
	for _, o := range list {
		if strings.HasPrefix(o, k+"=") {
			return true
		}
	}
	return false
}

// ModuleRoot walks up from dir to the nearest directory holding a go.mod
// file: the root of the module a test in dir belongs to. It fails with
// [ErrNoModuleRoot] when there is none.
func ModuleRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("find module root: %w", err)
	}
	for {
		fi, err := os.Stat(filepath.Join(dir, "go.mod"))
		if err == nil && !fi.IsDir() {
			return dir, nil
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("find module root: %w", err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("find module root from %s: %w", dir, ErrNoModuleRoot)
		}
		dir = parent
	}
}

// RegistryPath resolves CONTESTED_SURFACES (default
// contested-surfaces.toml): a relative path is taken from moduleRoot (when
// there is one), not from the package directory go test runs in.
func RegistryPath(moduleRoot string) string {
	p := os.Getenv(envvar.Surfaces)
	if p == "" {
		p = DefaultRegistry
	}
	if !filepath.IsAbs(p) && moduleRoot != "" {
		p = filepath.Join(moduleRoot, p)
	}
	return p
}

// Level reads CONTESTED_LEVEL: 1 sunny (one lever at a time), 2 stormy
// (levers combined), 3 radioactive (all levers, repeated crash-restart);
// 1 when unset.
func Level() (int, error) {
	v := strings.TrimSpace(os.Getenv(envvar.Level))
	if v == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 3 {
		return 0, fmt.Errorf("%w: %s=%q is not 1 (sunny), 2 (stormy) or 3 (radioactive)", ErrInvalid, envvar.Level, v)
	}
	return n, nil
}

// Seeds reads CONTESTED_SEEDS, the seed count of mage contested: 1 to
// 1000, or 0 when it is unset.
func Seeds() (int, error) {
	v := strings.TrimSpace(os.Getenv(envvar.Seeds))
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 1000 {
		return 0, fmt.Errorf("%w: %s=%q is not a seed count between 1 and 1000", ErrInvalid, envvar.Seeds, v)
	}
	return n, nil
}
