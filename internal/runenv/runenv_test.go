package runenv

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/rundir"
	"github.com/contested/contested/internal/runid"
)

// module makes a module root with a package directory below it.
func module(t *testing.T) (mod, pkg string) {
	t.Helper()
	mod = t.TempDir()
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module example.com/m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pkg = filepath.Join(mod, "store", "internal", "pg")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	// A directory named go.mod is not a module root.
	if err := os.MkdirAll(filepath.Join(mod, "store", "go.mod"), 0o755); err != nil {
		t.Fatal(err)
	}
	return mod, pkg
}

func TestResultsDir(t *testing.T) {
	mod, pkg := module(t)
	noModule := t.TempDir()
	tests := []struct {
		name    string
		env, wd string
		want    string
		wantErr error
	}{
		{name: "unset: test-results under the module root, not the package", wd: pkg, want: filepath.Join(mod, "test-results")},
		{name: "relative: under the module root", env: "out/results", wd: pkg, want: filepath.Join(mod, "out", "results")},
		{name: "absolute: as is, cleaned", env: "/srv/ci/../ci/results/", wd: pkg, want: "/srv/ci/results"},
		{name: "absolute needs no module", env: "/srv/results", wd: noModule, want: "/srv/results"},
		{name: "at the module root itself", wd: mod, want: filepath.Join(mod, "test-results")},
		{name: "relative without a module", wd: noModule, wantErr: rundir.ErrNoModuleRoot},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(envvar.ResultsDir, tc.env)
			root, _ := ModuleRoot(tc.wd)
			got, err := rundir.Resolve(root)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Errorf("ResultsDir = %q, %v; want %v", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got.String() != tc.want {
				t.Errorf("ResultsDir = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestProcessFromPackageDir reads the environment from where go test runs
// this package: its directory. Records must go to the module root, two
// levels up, and so must the registry.
func TestProcessFromPackageDir(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(envvar.ResultsDir, "")
	t.Setenv(envvar.Surfaces, "")
	t.Setenv(envvar.RunID, "env-run")
	env, err := Process()
	if err != nil || env.ModuleRoot != root || env.ResultsDir.String() != filepath.Join(root, "test-results") ||
		env.Registry != filepath.Join(root, DefaultRegistry) || env.RunID != "env-run" || !env.SharedRunID {
		t.Errorf("Process() = %+v, %v; want the module root %s, its test-results and registry, run env-run shared", env, err, root)
	}
	t.Setenv(envvar.ResultsDir, "/abs/results")
	t.Setenv(envvar.Surfaces, "/etc/contested/surfaces.toml")
	if env, err := Process(); err != nil || env.ResultsDir != "/abs/results" || env.Registry != "/etc/contested/surfaces.toml" {
		t.Errorf("Process() with absolute paths = %+v, %v", env, err)
	}
}

func TestLoad(t *testing.T) {
	mod, pkg := module(t)
	t.Setenv(envvar.ResultsDir, "")
	t.Setenv(envvar.Surfaces, "")
	t.Run("a module root", func(t *testing.T) {
		t.Setenv(envvar.RunID, "given")
		env, err := Load(mod)
		want := Env{ModuleRoot: mod, ResultsDir: rundir.Dir(filepath.Join(mod, "test-results")), RunID: "given", SharedRunID: true,
			Registry: filepath.Join(mod, DefaultRegistry), Level: 1}
		if err != nil {
			t.Fatal(err)
		}
		if real, _ := filepath.EvalSymlinks(want.ResultsDir.String()); real != "" {
			want.ResultsDir = rundir.Dir(real)
		}
		if diff := cmp.Diff(want, env); diff != "" {
			t.Errorf("Load (-want +got):\n%s", diff)
		}
		if fi, err := os.Stat(env.ResultsDir.String()); err != nil || !fi.IsDir() {
			t.Errorf("Load did not ready the results directory: %v", err)
		}
	})
	t.Run("a fresh run id when none is given", func(t *testing.T) {
		t.Setenv(envvar.RunID, "")
		os.Unsetenv(envvar.RunID)
		env, err := Load(mod)
		if err != nil || runid.Check(env.RunID) != nil || env.SharedRunID {
			t.Errorf("Load = %+v, %v; want a fresh, valid, unshared run id", env, err)
		}
	})
	t.Run("refused", func(t *testing.T) {
		for _, tc := range []struct {
			name, dir string
			env       map[string]string
			want      error
		}{
			{"a package directory", pkg, nil, ErrNotModuleRoot},
			{"a results directory at the module root", mod, map[string]string{envvar.ResultsDir: "."}, atomicfile.ErrBadResultsDir},
			{"a bad run id", mod, map[string]string{envvar.RunID: "bad/id"}, ErrInvalid},
			{"a run id set but empty", mod, map[string]string{envvar.RunID: ""}, runid.ErrBad},
		} {
			t.Run(tc.name, func(t *testing.T) {
				for k, v := range tc.env {
					t.Setenv(k, v)
				}
				if env, err := Load(tc.dir); !errors.Is(err, tc.want) {
					t.Errorf("Load(%s) = %+v, %v; want %v", tc.dir, env, err, tc.want)
				}
			})
		}
	})
}

func TestEnviron(t *testing.T) {
	env := Env{ModuleRoot: "/m", ResultsDir: "/m/test-results", RunID: "run-1", Registry: "/m/contested-surfaces.toml", Level: 2}
	layer := []string{envvar.Layer + "=external", envvar.ToxiproxyURL + "=http://127.0.0.1:8474", envvar.RunID + "=run-0"}
	tests := []struct {
		name string
		env  Env
		want []string
	}{
		{"no layer", env, []string{envvar.ResultsDir + "=/m/test-results", envvar.Surfaces + "=/m/contested-surfaces.toml",
			envvar.RunID + "=run-1", envvar.Level + "=2"}},
		{"a layer whose run id is the run's", env.Attach(layer, "run-1-abcd"), []string{envvar.Layer + "=external",
			envvar.ToxiproxyURL + "=http://127.0.0.1:8474", envvar.ResultsDir + "=/m/test-results",
			envvar.Surfaces + "=/m/contested-surfaces.toml", envvar.RunID + "=run-1-abcd", envvar.Level + "=2"}},
		{"a seed and a private results directory", env.WithSeed(7).WithResultsDir("/m/test-results/reruns/x"), []string{
			envvar.ResultsDir + "=/m/test-results/reruns/x", envvar.Surfaces + "=/m/contested-surfaces.toml",
			envvar.RunID + "=run-1", envvar.Level + "=2", envvar.Seed + "=7"}},
		{"an unset seed is never handed on", env.WithSeed(0), []string{envvar.ResultsDir + "=/m/test-results", envvar.Surfaces + "=/m/contested-surfaces.toml",
			envvar.RunID + "=run-1", envvar.Level + "=2"}},
		{"nothing known but the level, which is 1 at least", Env{}, []string{envvar.Level + "=1"}},
		{"an unknown run id leaves the layer's", Env{}.Attach(layer[2:], ""), []string{envvar.RunID + "=run-0", envvar.Level + "=1"}},
		{"a replayed test's variables, first, never the run's own", Env{}.WithReplay([]string{"CLIENTS=4", envvar.Level + "=3"}), []string{
			"CLIENTS=4", envvar.Level + "=1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.env.Environ()); diff != "" {
				t.Errorf("Environ (-want +got):\n%s", diff)
			}
		})
	}
	// Attach keeps its own copy of the layer's variables.
	attached := env.Attach(layer, "")
	layer[0] = "changed"
	if attached.RunID != "run-1" || !slices.Contains(attached.Environ(), envvar.Layer+"=external") {
		t.Errorf("Attach shares the caller's slice or lost the run id: %v", attached.Environ())
	}
}

func TestVariables(t *testing.T) {
	tests := []struct {
		name, level, seeds   string
		wantLevel, wantSeeds int
		bad                  string
	}{
		{name: "unset", wantLevel: 1},
		{name: "all given", level: "3", seeds: "7", wantLevel: 3, wantSeeds: 7},
		{name: "a level out of range", level: "7", bad: envvar.Level + `="7" is not 1`},
		{name: "too many seeds", seeds: "1001", bad: "between 1 and 1000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(envvar.Level, tc.level)
			t.Setenv(envvar.Seeds, tc.seeds)
			level, lerr := Level()
			seeds, nerr := Seeds()
			err := errors.Join(lerr, nerr)
			if tc.bad != "" {
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.bad) {
					t.Errorf("err = %v, want ErrInvalid saying %q", err, tc.bad)
				}
				return
			}
			if err != nil || level != tc.wantLevel || seeds != tc.wantSeeds {
				t.Errorf("level %d, seeds %d, %v", level, seeds, err)
			}
		})
	}
}
