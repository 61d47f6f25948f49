// Package cluster runs a service as several replicas behind Toxiproxy,
// with Postgres, on a private network (or as local processes when
// containers cannot come up here), and contests it with kill legs: one
// replica killed mid-stream and restarted, every replica killed at once
// and restarted, one replica partitioned from the database and healed.
// Each leg is a lever of the fault set (internal/faultlayer/levers: crash-and-resume,
// mass-restart, partition) armed on the rig's replicas through
// levers.Cluster, healed, and judged by the lever's own fired rule.
//
// The service is any that implements Service: how to build it, its replica
// count and command line, the health endpoint each replica serves, the
// workload the legs drive and the oracle that judges them. The reference
// ledger's lives in examples/ledger. The rig owns the whole lifecycle:
// sweep stale rigs, build, bring up and wait for every replica's health
// endpoint, run the legs one after another, collect artifacts, tear down
// (also on Ctrl-C and SIGTERM). A Go test runs it (Test), and `go tool mage
// cluster-tests` runs the test the registry's [cluster] table names.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/testcontainers/testcontainers-go"

	"github.com/contested/contested/internal/dockerenv"
	"github.com/contested/contested/internal/faultlayer"
	"github.com/contested/contested/internal/images"
	"github.com/contested/contested/internal/reap"
	"github.com/contested/contested/internal/runid"
)

// Class is the recording class of the rig's legs.
const Class = "cluster"

// Sentinel errors callers map to exit codes.
var (
	// ErrCannotRun: the rig could not be built or brought up (exit 3).
	ErrCannotRun = errors.New("cluster rig cannot run")
	// ErrRed: a leg did not fire or an oracle was violated (exit 1).
	ErrRed = errors.New("cluster rig red")
	// ErrUsage: bad options or a bad spec (exit 2).
	ErrUsage = errors.New("bad cluster options")
)

// Options configures Run.
type Options struct {
	// Dir is the module's root, where the service's package is built.
	Dir string
	// ResultsRoot is the results directory; artifacts go to cluster/.
	ResultsRoot string
	// Replicas is how many replicas run (3 to 9; default the spec's).
	Replicas int
	// Keep leaves the rig up for inspection; the next run's sweep reaps it.
	Keep bool
	// Local runs the replicas as local processes even when containers can
	// come up.
	Local bool
	// RequireContainers makes the rig fail with ErrCannotRun when
	// containers cannot come up here, instead of running the replicas as
	// local processes. The tests of the containers mode set it.
	RequireContainers bool
	// Ops is how many operations each leg streams (default 240).
	Ops int
	// HealthWait bounds how long a started replica may take to answer 200
	// on its health endpoint (default a minute).
	HealthWait time.Duration
	// RecordDir is the results root the legs' fault records go under (in
	// its fault/ directory); default ResultsRoot/cluster. A test in the
	// battery points it at the battery's results root, so the gate counts
	// the rig's faults.
	RecordDir string
	// TestName prefixes each leg's record test id (default ClusterTests).
	TestName string
	// Package is the import path the legs' records name: the rig test's
	// package, so that the gate and the verdicts map them to the surface
	// registered there (default this package's).
	Package string
	// Replay is the command that reruns the rig with this Seed and Level,
	// which each leg's record carries (clustertest names the go test of
	// the rig test; default CONTESTED_SEED=<seed> go tool mage
	// cluster-tests).
	Replay string
	// Seed draws each leg's schedule: where in the stream its fault lands,
	// which replica it strikes, how long it holds. One seed replays one
	// schedule (clustertest passes CONTESTED_SEED, or a fresh seed).
	Seed int64
	// Level is the intensity the schedule is drawn at (1 to 3; default 1).
	Level int
	// Out receives the rig's progress lines.
	Out io.Writer
}

// Report is what one rig run did.
type Report struct {
	Run      string        `json:"run"`      // the run id
	Service  string        `json:"service"`  // the service's Spec.Name
	Mode     string        `json:"mode"`     // containers or local processes
	Reason   string        `json:"reason"`   // why this mode
	Replicas int           `json:"replicas"` // how many replicas ran
	Legs     []LegResult   `json:"legs"`     // each kill leg's outcome
	Green    bool          `json:"green"`    // every leg fired and every oracle held
	Kept     bool          `json:"kept"`     // the rig was left up (Options.Keep)
	Took     time.Duration `json:"took_ns"`  // the whole run
}

// Run runs the rig once for svc: sweep, build, up, legs, artifacts,
// teardown. Artifacts (ps.txt, logs.txt, legs.json and the legs' fault
// records) are written on every outcome that got as far as starting
// replicas.
func Run(ctx context.Context, svc Service, opts Options) (*Report, error) {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	spec, opts, err := settle(svc.Spec(), opts)
	if err != nil {
		return nil, err
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	out := opts.Out
	rep := &Report{Run: runid.New(time.Now()), Service: spec.Name, Replicas: opts.Replicas}

	fmt.Fprintf(out, "cluster: sweeping stale rigs\n")
	if err := Sweep(ctx, out); err != nil {
		fmt.Fprintf(out, "cluster: sweep: %v\n", err)
	}
	p, err := prepare(ctx, spec, opts, rep)
	defer p.close()
	if err != nil {
		return rep, err
	}
	layer, err := p.layerUp(ctx, rep.Run, opts.Replicas, out)
	if err != nil {
		return rep, err
	}
	defer teardown(ctx, layer, opts.Keep, rep, out)

	r, err := newRig(ctx, svc, spec, layer, opts, rep.Run, p)
	if r != nil {
		defer r.close(ctx)
		defer func() { r.artifacts(context.WithoutCancel(ctx), filepath.Join(opts.ResultsRoot, "cluster"), rep, out) }()
	}
	if err != nil {
		return rep, fmt.Errorf("%w: bring up the replicas: %v", ErrCannotRun, err)
	}
	fmt.Fprintf(out, "cluster: %d replicas up (%s), run %s\n", opts.Replicas, rep.Mode, rep.Run)
	if err := r.runLegs(ctx, opts.Ops, rep, out); err != nil {
		return rep, err
	}
	rep.Took = time.Since(start)
	if !rep.Green {
		return rep, fmt.Errorf("%w: %s", ErrRed, failures(rep))
	}
	return rep, nil
}

// platform is where the replicas run and what they run: the mode, the
// Docker client (containers) and the service's image or binary.
type platform struct {
	kind  faultlayer.Kind
	cli   *testcontainers.DockerClient
	image string
	bin   string
	clean func()
}

// prepare chooses where the replicas run and builds the service for it.
// The platform it returns, even with an error, must be closed.
func prepare(ctx context.Context, spec Spec, opts Options, rep *Report) (*platform, error) {
	out := opts.Out
	p := &platform{}
	kind, reason, err := replicaMode(ctx, opts, out)
	if err != nil {
		return p, err
	}
	p.kind = kind
	rep.Mode, rep.Reason = "local processes", reason
	if kind == faultlayer.Containers {
		rep.Mode = "containers"
		if p.cli, err = dockerenv.Connect(ctx); err != nil {
			return p, fmt.Errorf("%w: %v", ErrCannotRun, err)
		}
	}
	fmt.Fprintf(out, "cluster: replicas run as %s: %s\n", rep.Mode, reason)

	fmt.Fprintf(out, "cluster: building the %s service (%s)\n", spec.Name, spec.Package)
	if kind == faultlayer.Containers {
		p.image, err = images.BuildService(ctx, p.cli, opts.Dir, spec.Name, spec.Package, out)
	} else {
		p.bin, p.clean, err = buildLocal(ctx, opts.Dir, spec.Name, spec.Package)
	}
	if err != nil {
		return p, fmt.Errorf("%w: build the service: %v", ErrCannotRun, err)
	}
	return p, nil
}

func (p *platform) close() {
	if p.clean != nil {
		p.clean()
	}
	if p.cli != nil {
		p.cli.Close()
	}
}

// layerUp brings up the rig's own fault layer, of the platform's kind,
// with a proxy port for each of the replicas. On containers those ports
// are published up front like any layer's, though the replicas reach them
// inside the rig's network: the rig asks for its replicas' ports only, not
// the whole range, since each published port costs the engine a proxy
// process and its firewall rules at start and at teardown.
func (p *platform) layerUp(ctx context.Context, run string, replicas int, out io.Writer) (*faultlayer.Layer, error) {
	cfg := faultlayer.ConfigFor(p.kind)
	cfg.RunID, cfg.Log = run, out
	if p.kind == faultlayer.Containers {
		cfg.ProxyPorts = rigPorts(replicas)
	}
	layer, err := faultlayer.Up(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCannotRun, err)
	}
	return layer, nil
}

// rigPorts is the proxy port range of a rig of n replicas: the first n of
// the default range.
func rigPorts(n int) string {
	first, _, _ := strings.Cut(faultlayer.DefaultProxyPorts, "-")
	lo, _ := strconv.Atoi(first)
	return fmt.Sprintf("%d-%d", lo, lo+max(n, 1)-1)
}

// teardown closes the layer, or keeps it up when asked and not
// interrupted.
func teardown(ctx context.Context, layer *faultlayer.Layer, keep bool, rep *Report, out io.Writer) {
	if keep && ctx.Err() == nil {
		rep.Kept = true
		fmt.Fprintf(out, "cluster: kept up for inspection (run %s); the next run's sweep reaps it\n", rep.Run)
		return
	}
	fmt.Fprintf(out, "cluster: tearing down run %s\n", rep.Run)
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	layer.Close(tctx)
}

// replicaMode decides where the replicas run: as local processes when
// asked; as containers when they can come up here, by the same answer the
// fault layer's own auto choice uses (faultlayer.ContainersCanRun); as
// local processes otherwise, so the legs and their cluster records still
// happen, unless the caller requires containers. The reason is printed and
// kept in the report.
func replicaMode(ctx context.Context, opts Options, out io.Writer) (faultlayer.Kind, string, error) {
	if opts.Local && opts.RequireContainers {
		return "", "", fmt.Errorf("%w: local processes and required containers contradict each other", ErrUsage)
	}
	if opts.Local {
		return faultlayer.Embedded, "asked for", nil
	}
	cfg := faultlayer.ConfigFor(faultlayer.Containers)
	cfg.Log = out
	err := faultlayer.ContainersCanRun(ctx, cfg)
	switch {
	case err == nil:
		return faultlayer.Containers, "a Docker engine answers and the images are at hand", nil
	case ctx.Err() != nil:
		return "", "", ctx.Err()
	case opts.RequireContainers:
		return "", "", fmt.Errorf("%w: containers are required: %v", ErrCannotRun, err)
	}
	return faultlayer.Embedded, err.Error() + "; the same legs run on local processes", nil
}

func failures(rep *Report) string {
	var parts []string
	for _, l := range rep.Legs {
		if !l.OK() {
			parts = append(parts, l.Name+": "+l.summary())
		}
	}
	return strings.Join(parts, "; ")
}

// Sweep removes stale rigs of this project: replicas and layers whose
// owner process is gone. Nothing without our label is touched.
func Sweep(ctx context.Context, out io.Writer) error {
	var errs []error
	if cli, err := dockerenv.Connect(ctx); err == nil {
		if _, err := reap.Sweep(ctx, cli, reap.Orphaned("cluster-"), out); err != nil {
			errs = append(errs, err)
		}
		cli.Close()
	}
	if err := faultlayer.Sweep(ctx, out); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
