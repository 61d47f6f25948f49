package command

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fatih/color"

	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/gate/verdict"
	"github.com/contested/contested/internal/gotest"
	"github.com/contested/contested/internal/interrupt"
	"github.com/contested/contested/internal/registry"
	"github.com/contested/contested/internal/secret"
	"github.com/contested/contested/internal/terminal"
)

// ClusterOptions configures ClusterTests.
type ClusterOptions struct {
	Dir      string
	Replicas int
	Keep     bool
	Local    bool
	Out      io.Writer `json:"-"`
}

// ClusterTests runs the module's service in the cluster rig: the Go test
// the registry's [cluster] table names, `go test -count=1 -v -run
// '^<test>$' <package>` in the module root, with the target's options and
// the results directory in its environment. The test runs the rig (sweep,
// build, up, the kill legs one after another, artifacts under
// <results>/cluster/, teardown); ClusterTests then prints the legs from
// legs.json. Exit: 0 green; 1 a leg red; 2 no or a bad [cluster] table, or
// bad options; 3 the rig could not run.
func ClusterTests(ctx context.Context, opts ClusterOptions) error {
	ctx, cancel := withSignals(ctx)
	defer cancel()
	if opts.Replicas != 0 && (opts.Replicas < envvar.MinReplicas || opts.Replicas > envvar.MaxReplicas) {
		return fmt.Errorf("%w: -replicas=%d; the rig runs between %d and %d", ErrUsage, opts.Replicas, envvar.MinReplicas, envvar.MaxReplicas)
	}
	ws, err := openWorkspace(opts.Dir)
	if err != nil {
		return err
	}
	c, err := clusterTest(ctx, ws)
	if err != nil {
		return err
	}
	hintIgnore(ctx, ws.env.ModuleRoot, ws.env.ResultsDir, opts.Out)
	start := time.Now()
	runErr := runClusterTest(ctx, ws, c, opts)
	rep, fresh := readLegs(ws.env.ResultsDir.Join("cluster", "legs.json"), start)
	if fresh {
		writeLegs(opts.Out, rep)
	}
	switch {
	case ctx.Err() != nil:
		return interrupted(ctx.Err())
	case !fresh || len(rep.Legs) == 0:
		return fmt.Errorf("%w: the cluster rig did not run its legs (%s); see the test's output above", ErrCannotRun, orNone(runErr))
	case !rep.Green:
		return fmt.Errorf("%w: the cluster rig is red; its artifacts are in %s", ErrRed, ws.env.ResultsDir.Join("cluster"))
	case runErr != nil:
		return fmt.Errorf("%w: the legs are green but %s failed (%v); see its output above", ErrRed, c.Test, runErr)
	}
	fmt.Fprintf(opts.Out, "\ncluster-tests: %s\n", color.GreenString("GREEN"))
	return nil
}

// clusterTest is the registry's [cluster] table, checked against the
// package's tests.
func clusterTest(ctx context.Context, ws *workspace) (*registry.Cluster, error) {
	c := ws.reg.Cluster
	if c == nil {
		return nil, fmt.Errorf("%w: %s declares no cluster service: add a [cluster] table naming the Go test that runs it in the cluster rig (package = \"./path/to/pkg\", test = \"TestServiceCluster\"; see docs/how-to/cluster-rig.md)",
			ErrUsage, ws.env.Registry)
	}
	if strings.HasPrefix(c.Package, ".") {
		if fi, err := os.Stat(filepath.Join(ws.env.ModuleRoot, c.Package)); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("%w: %s:%d: [cluster] package %s is not a directory of the module %s", ErrUsage, ws.env.Registry, c.Line, c.Package, ws.env.ModuleRoot)
		}
	}
	names, err := gotest.List(ctx, ws.env.ModuleRoot, c.Package)
	if err != nil {
		return nil, fmt.Errorf("%w: list the tests of %s: %v", ErrCannotRun, c.Package, err)
	}
	if !slices.Contains(names, c.Test) {
		return nil, fmt.Errorf("%w: %s:%d: [cluster] test %s is not a test of %s (its tests: %s)", ErrUsage, ws.env.Registry, c.Line, c.Test, c.Package, strings.Join(names, ", "))
	}
	return c, nil
}

// clusterStopAfter is how long the rig test has to tear down after SIGINT
// before its process group is killed; it fits in interrupt.Grace.
const clusterStopAfter = interrupt.Grace - 2*time.Second

// runClusterTest runs the rig test, its output streamed to opts.Out.
func runClusterTest(ctx context.Context, ws *workspace, c *registry.Cluster, opts ClusterOptions) error {
	args := []string{"test", "-count=1", "-v", "-timeout=30m", "-run", "^" + c.Test + "$", c.Package}
	cmd := interrupt.Command(ctx, clusterStopAfter, "go", args...)
	cmd.Dir = ws.env.ModuleRoot
	cmd.Env = append(os.Environ(),
		envvar.ClusterTarget+"=1",
		envvar.ClusterReplicas+"="+strconv.Itoa(opts.Replicas),
		envvar.ClusterKeep+"="+strconv.FormatBool(opts.Keep),
		envvar.ClusterLocal+"="+strconv.FormatBool(opts.Local),
	)
	cmd.Env = append(cmd.Env, ws.env.Environ()...)
	out := secret.NewWriter(opts.Out)
	defer out.Flush()
	cmd.Stdout, cmd.Stderr = out, out
	fmt.Fprintf(opts.Out, "cluster-tests: go %s (%s:%d)\n", strings.Join(args, " "), filepath.Base(ws.env.Registry), c.Line)
	untrack, err := interrupt.Start(cmd)
	if err != nil {
		return err
	}
	defer untrack()
	err = cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return fmt.Errorf("go test exited %d", exit.ExitCode())
	}
	return err
}

// legsReport is what cluster-tests prints of the rig's legs.json
// (written by the cluster package's Run; docs/reference/artifacts.md).
type legsReport struct {
	Service  string `json:"service"`
	Mode     string `json:"mode"`
	Replicas int    `json:"replicas"`
	Green    bool   `json:"green"`
	Legs     []struct {
		Name     string       `json:"name"`
		Lever    string       `json:"lever"`
		Fired    bool         `json:"fired"`
		Injector string       `json:"injector"`
		Victim   string       `json:"victim"`
		Error    string       `json:"error"`
		Oracles  []legsOracle `json:"oracles"`
	} `json:"legs"`
}

type legsOracle struct {
	Held   bool   `json:"held"`
	Detail string `json:"detail"`
}

// readLegs reads the rig's legs.json; fresh when this run wrote it (at or
// after start), so a stale report from an earlier run is never taken for
// this one's.
func readLegs(path string, start time.Time) (*legsReport, bool) {
	fi, err := os.Lstat(path)
	if err != nil || fi.ModTime().Before(start) {
		return nil, false
	}
	b, err := atomicfile.Load(path, atomicfile.MaxArtifact)
	if err != nil {
		return nil, false
	}
	var rep legsReport
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, false
	}
	return &rep, true
}

// writeLegs prints each leg: its state, the evidence from both sides, its
// error and its oracles.
func writeLegs(out io.Writer, rep *legsReport) {
	if len(rep.Legs) == 0 {
		return
	}
	fmt.Fprintf(out, "\n%s (%s, %s, %d replicas)\n", bold("cluster legs"), rep.Service, rep.Mode, rep.Replicas)
	for _, l := range rep.Legs {
		state := color.GreenString("ok")
		if !l.Fired || l.Error != "" || len(l.Oracles) == 0 || slices.ContainsFunc(l.Oracles, func(o legsOracle) bool { return !o.Held }) {
			state = color.RedString("RED")
		}
		fmt.Fprintf(out, "  %-13s %-17s %s\n", l.Name, l.Lever, state)
		for _, line := range (verdict.Leg{Injector: l.Injector, Victim: l.Victim}).Landing() {
			fmt.Fprintf(out, "      %s\n", terminal.Escape(line))
		}
		if l.Error != "" {
			fmt.Fprintf(out, "      error:    %s\n", l.Error)
		}
		for _, o := range l.Oracles {
			fmt.Fprintf(out, "      %s\n", o.Detail)
		}
	}
}

func orNone(err error) string {
	if err == nil {
		return "no legs.json written"
	}
	return err.Error()
}
