// Package clustertest runs the cluster rig from a Go test: the test the
// registry's [cluster] table names, which `go tool mage cluster-tests` runs
// with its options in the environment (envvar.ClusterTarget and the others),
// and which a validate battery runs like any other test.
package clustertest

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/contested/contested/cluster"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/rundir"
	"github.com/contested/contested/internal/runenv"
	"github.com/contested/contested/internal/seed"
	"github.com/contested/contested/internal/testlog"
)

// Options returns the options a rig test runs with. Under
// cluster-tests: the target's replicas, keep and local; artifacts and the
// legs' records under the results directory's cluster/; progress on
// standard output. Otherwise (go test, a validate battery): the legs'
// records in the results directory, where the gate counts class cluster;
// the artifacts in a temporary directory; progress in the test's log.
// Either way the service is built from the test's module, and each record
// names the test and its package.
func Options(t testing.TB) (cluster.Options, error) {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		return cluster.Options{}, err
	}
	dir, err := runenv.ModuleRoot(wd)
	if err != nil {
		return cluster.Options{}, err
	}
	root, err := rundir.Resolve(dir)
	if err != nil {
		return cluster.Options{}, err
	}
	pkg, err := importPath(dir, wd)
	if err != nil {
		return cluster.Options{}, err
	}
	opts := cluster.Options{Dir: dir, TestName: t.Name(), Package: pkg}
	s, err := seed.FromEnv()
	if err != nil {
		return opts, fmt.Errorf("%w: %v", cluster.ErrUsage, err)
	}
	s = s.OrNew()
	opts.Seed = int64(s)
	if opts.Level, err = runenv.Level(); err != nil {
		return opts, fmt.Errorf("%w: %v", cluster.ErrUsage, err)
	}
	opts.Replay = s.Replay(opts.Level, packageDir(dir, wd), t.Name())
	t.Logf("cluster rig: seed %d, level %d; replay: %s", opts.Seed, opts.Level, opts.Replay)
	if !cluster.UnderTarget() {
		opts.ResultsRoot, opts.RecordDir, opts.Out = t.TempDir(), root.String(), testlog.Writer(t)
		return opts, nil
	}
	opts.ResultsRoot, opts.Out = root.String(), io.Writer(os.Stdout)
	if v := strings.TrimSpace(os.Getenv(envvar.ClusterReplicas)); v != "" {
		if opts.Replicas, err = strconv.Atoi(v); err != nil {
			return opts, fmt.Errorf("%w: %s=%q is not a number of replicas", cluster.ErrUsage, envvar.ClusterReplicas, v)
		}
	}
	for env, field := range map[string]*bool{envvar.ClusterKeep: &opts.Keep, envvar.ClusterLocal: &opts.Local} {
		if v := strings.TrimSpace(os.Getenv(env)); v != "" {
			if *field, err = strconv.ParseBool(v); err != nil {
				return opts, fmt.Errorf("%w: %s=%q is neither true nor false", cluster.ErrUsage, env, v)
			}
		}
	}
	return opts, nil
}

// Run runs the rig for svc with Options as test t and fails t unless the
// rig is green. It returns the rig's report.
func Run(t testing.TB, svc cluster.Service) *cluster.Report {
	t.Helper()
	opts, err := Options(t)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := cluster.Run(context.Background(), svc, opts)
	if err != nil {
		t.Fatalf("the cluster rig of %s: %v", svc.Spec().Name, err)
	}
	return rep
}

// importPath is the import path of the package in dir wd of the module
// rooted at dir.
func importPath(dir, wd string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", err
	}
	mod := ""
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "module" {
			mod = strings.Trim(f[1], `"`)
			break
		}
	}
	if mod == "" {
		return "", fmt.Errorf("%s/go.mod names no module", dir)
	}
	rel, err := filepath.Rel(dir, wd)
	if err != nil || rel == "." {
		return mod, err
	}
	return mod + "/" + filepath.ToSlash(rel), nil
}

// packageDir is the test's package directory wd as go test takes it from
// the module root dir ("./examples/ledger", or "." at the root).
func packageDir(dir, wd string) string {
	rel, err := filepath.Rel(dir, wd)
	if err != nil || rel == "." {
		return "."
	}
	return "./" + filepath.ToSlash(rel)
}
