package command

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/fatih/color"

	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/faultlayer"
	"github.com/contested/contested/internal/gotest"
	"github.com/contested/contested/internal/registry"
	"github.com/contested/contested/internal/rundir"
	"github.com/contested/contested/internal/runenv"
)

// moduleDir is the module root a command runs in (runenv.ModuleDir), a
// usage error when dir is none.
func moduleDir(dir string) (string, error) {
	dir, err := runenv.ModuleDir(dir)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrUsage, err)
	}
	return dir, nil
}

// resultsRoot is the results directory of the module in dir, checked and
// readied once, before the command starts anything
// (rundir.Prepare). A directory that can never hold artifacts (/, a
// system directory, the home directory, the module root, a file, a link,
// read-only, one that holds a link) is bad input: exit 2, saying what to
// set.
func resultsRoot(dir string) (rundir.Dir, error) {
	root, err := rundir.Prepare(dir)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrUsage, err)
	}
	return root, nil
}

// loadRegistry loads the registry at path (runenv.RegistryPath).
func loadRegistry(path string) (*registry.Registry, error) {
	reg, err := registry.Load(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %v: create the registry (see docs/reference/registry.md) or point %s at it", ErrUsage, err, envvar.Surfaces)
		}
		if !errors.Is(err, registry.ErrInvalid) {
			err = fmt.Errorf("%w: %v", ErrUsage, err)
		}
		return nil, err
	}
	return reg, nil
}

// workspace is the module a command runs on: its run environment, built
// once from the environment (runenv.Load), and its registry.
type workspace struct {
	env runenv.Env
	reg *registry.Registry
}

// testBinaries makes the command's store of test binaries under the
// results directory (battery.Binaries), so that every go test the command
// runs again (a seed, a rerun) links its package once, and the battery
// relinks only the packages whose sources changed since the last command;
// when it cannot, each go test builds its own as before, and it says why.
// The returned function removes the command's own (the kept copies stay).
func testBinaries(root rundir.Dir, out io.Writer) (*battery.Binaries, func()) {
	b, err := battery.NewBinaries(root.String(), battery.WithLog(out))
	if err != nil {
		fmt.Fprintf(out, "contested: every rerun builds its own test binary: %v\n", err)
		return nil, func() {}
	}
	return b, func() { _ = b.Close() }
}

// openWorkspace builds the run environment of the module in dir (default:
// the working directory), which must be a module root, loads its registry
// and reads the level: everything a command reads, checked before it
// starts anything. Bad input is a usage error.
func openWorkspace(dir string) (*workspace, error) {
	dir, err := moduleDir(dir)
	if err != nil {
		return nil, err
	}
	reg, err := loadRegistry(runenv.RegistryPath(dir))
	if err != nil {
		return nil, err
	}
	env, err := runenv.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if env.Level, err = runenv.Level(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	return &workspace{env: env, reg: reg}, nil
}

// layerConfig is the fault layer's configuration from the environment
// (faultlayer.ConfigFromEnv), carrying the run's id and the registry's
// canonical databases (refused as a test plane), with progress going to
// out.
func layerConfig(ws *workspace, out io.Writer) (faultlayer.Config, error) {
	cfg, err := faultlayer.ConfigFromEnv()
	cfg.RunID, cfg.SharedRunID, cfg.Log = ws.env.RunID, ws.env.SharedRunID, out
	cfg.Canonical = ws.reg.Guard.CanonicalDatabases
	return cfg, err
}

// cachedInventory lists the module's tests once, however often it is asked.
func cachedInventory(dir string) func(context.Context) ([]string, error) {
	var once sync.Once
	var names []string
	var err error
	return func(ctx context.Context) ([]string, error) {
		once.Do(func() { names, err = gotest.List(ctx, dir) })
		return names, err
	}
}

// createArtifact creates rel under the results directory root for
// streaming, never through a symbolic link (atomicfile.Root.Create).
func createArtifact(root rundir.Dir, rel string) (*os.File, error) {
	r, err := atomicfile.OpenRoot(root.String())
	if err != nil {
		return nil, err
	}
	return r.Create(rel)
}

// saveArtifact writes rel under the results directory root atomically,
// never through a symbolic link, and returns its path.
func saveArtifact(root rundir.Dir, rel string, data []byte) (string, error) {
	r, err := atomicfile.OpenRoot(root.String())
	if err != nil {
		return root.Join(rel), err
	}
	return r.Join(rel), r.Write(rel, data)
}

// saveJSON is saveArtifact for v as indented JSON.
func saveJSON(root rundir.Dir, rel string, v any) (string, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return root.Join(rel), err
	}
	return saveArtifact(root, rel, append(b, '\n'))
}

// notSaved says, in one line, that an artifact was not saved and why:
// never "saved" after a failed write.
func notSaved(out io.Writer, who, path string, err error) {
	if strings.Contains(err.Error(), path) {
		fmt.Fprintf(out, "%s: %s: %v\n", who, color.RedString("NOT saved"), err)
		return
	}
	fmt.Fprintf(out, "%s: %s %s: %v\n", who, color.RedString("NOT saved"), path, err)
}
