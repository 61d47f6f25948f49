// Package cluster runs the reference ledger service as several replicas
// behind Toxiproxy, with Postgres, on a private network (or as local
// processes when containers cannot come up here), and contests it with kill
// legs: one replica killed mid-stream and restarted, every replica killed
// at once and restarted, one replica partitioned from the database and
// healed. It owns the whole lifecycle: sweep stale rigs, build, bring up,
// run the legs one after another, collect artifacts, tear down (also on
// Ctrl-C and SIGTERM).
package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/testcontainers/testcontainers-go"

	"github.com/contested/contested/examples/ledger"
	"github.com/contested/contested/examples/ledger/oracle"
	"github.com/contested/contested/faultlayer"
	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/dockerenv"
	"github.com/contested/contested/internal/images"
	"github.com/contested/contested/internal/reap"
	"github.com/contested/contested/internal/runid"
)

// Surface and class of the rig's legs in the registry.
const (
	Surface = "ledger.cluster"
	Class   = "cluster"
)

// Sentinel errors callers map to exit codes.
var (
	// ErrCannotRun: the rig could not be built or brought up (exit 3).
	ErrCannotRun = errors.New("cluster rig cannot run")
	// ErrRed: a leg did not fire or an oracle was violated (exit 1).
	ErrRed = errors.New("cluster rig red")
	// ErrUsage: bad options (exit 2).
	ErrUsage = errors.New("bad cluster options")
)

// Options configures Run.
type Options struct {
	// Dir is this module's root, where the service's command is built from.
	Dir string
	// ResultsRoot is the results directory; artifacts go to cluster/.
	ResultsRoot string
	// Replicas is how many replicas run (at least 3).
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
	// Transfers is how many transfers each leg streams (default 240).
	Transfers int
	// RecordDir is the results root the legs' fault records go under (in
	// its fault/ directory); default ResultsRoot/cluster. A test in the
	// battery points it at the battery's results root, so the gate counts
	// the rig's faults.
	RecordDir string
	// TestName prefixes each leg's record test id (default ClusterTests).
	TestName string
	Out      io.Writer
}

// Report is what one rig run did.
type Report struct {
	Run      string        `json:"run"`
	Mode     string        `json:"mode"`   // containers or local processes
	Reason   string        `json:"reason"` // why this mode
	Replicas int           `json:"replicas"`
	Legs     []LegResult   `json:"legs"`
	Green    bool          `json:"green"`
	Kept     bool          `json:"kept"`
	Took     time.Duration `json:"took_ns"`
}

// Run runs the rig once: sweep, build, up, legs, artifacts, teardown.
// Artifacts (ps.txt, logs.txt, legs.json and the legs' fault records) are
// written on every outcome that got as far as starting replicas.
func Run(ctx context.Context, opts Options) (rep *Report, err error) {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	out := opts.Out
	if out == nil {
		out = io.Discard
	}
	if opts.Replicas == 0 {
		opts.Replicas = 3
	}
	if opts.Replicas < 3 || opts.Replicas > 9 {
		return nil, fmt.Errorf("%w: %d replicas; the rig runs between 3 and 9", ErrUsage, opts.Replicas)
	}
	if opts.Transfers == 0 {
		opts.Transfers = 240
	}
	run := runid.New(time.Now())
	rep = &Report{Run: run, Replicas: opts.Replicas}
	artifacts := filepath.Join(opts.ResultsRoot, "cluster")

	fmt.Fprintf(out, "cluster: sweeping stale rigs\n")
	if err := Sweep(ctx, out); err != nil {
		fmt.Fprintf(out, "cluster: sweep: %v\n", err)
	}

	kind, reason, err := replicaMode(ctx, opts, out)
	if err != nil {
		return rep, err
	}
	rep.Mode, rep.Reason = "local processes", reason
	var cli *testcontainers.DockerClient
	if kind == faultlayer.Containers {
		rep.Mode = "containers"
		if cli, err = dockerenv.Connect(ctx); err != nil {
			return rep, fmt.Errorf("%w: %v", ErrCannotRun, err)
		}
		defer cli.Close()
	}
	fmt.Fprintf(out, "cluster: replicas run as %s: %s\n", rep.Mode, reason)

	fmt.Fprintf(out, "cluster: building the ledger service\n")
	var image, bin string
	if kind == faultlayer.Containers {
		image, err = BuildImage(ctx, cli, opts.Dir, out)
	} else {
		var clean func()
		bin, clean, err = buildLocal(ctx, opts.Dir, "./examples/ledger/cmd/ledger")
		if clean != nil {
			defer clean()
		}
	}
	if err != nil {
		return rep, fmt.Errorf("%w: build the service: %v", ErrCannotRun, err)
	}

	cfg := faultlayer.ConfigFor(kind)
	cfg.RunID, cfg.Log = run, out
	layer, err := faultlayer.Up(ctx, cfg)
	if err != nil {
		return rep, fmt.Errorf("%w: %v", ErrCannotRun, err)
	}
	teardown := func() {
		if opts.Keep && ctx.Err() == nil {
			rep.Kept = true
			fmt.Fprintf(out, "cluster: kept up for inspection (run %s); the next run's sweep reaps it\n", run)
			return
		}
		fmt.Fprintf(out, "cluster: tearing down run %s\n", run)
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		layer.Close(tctx)
	}
	defer func() { teardown() }()

	rig, err := newRig(ctx, layer, opts, run, image, bin, cli)
	if rig != nil {
		defer rig.close(ctx)
		defer func() { rig.artifacts(context.WithoutCancel(ctx), artifacts, rep, out) }()
	}
	if err != nil {
		return rep, fmt.Errorf("%w: bring up the replicas: %v", ErrCannotRun, err)
	}
	fmt.Fprintf(out, "cluster: %d replicas up (%s), run %s\n", opts.Replicas, rep.Mode, run)

	stalled := ""
	for _, leg := range legs {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		res := LegResult{Name: leg.name, Lever: leg.lever, Error: "not run: the replicas stopped consuming in leg " + stalled}
		if stalled == "" {
			res = rig.runLeg(ctx, leg, opts.Transfers)
			if res.stalled {
				stalled = leg.name
			}
		}
		rep.Legs = append(rep.Legs, res)
		fmt.Fprintf(out, "cluster: leg %s: %s\n", leg.name, res.summary())
	}
	rep.Green = true
	for _, l := range rep.Legs {
		rep.Green = rep.Green && l.OK()
	}
	rep.Took = time.Since(start)
	if !rep.Green {
		return rep, fmt.Errorf("%w: %s", ErrRed, failures(rep))
	}
	return rep, nil
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

// rigImage is the rig's own tag: building it never touches another image.
const rigImage = "contested.local/ledger:rig"

// BuildImage builds the reference service's rig image from the module at dir:
// the command compiled static (CGO_ENABLED=0) and put on scratch, tagged
// contested.local/ledger:rig, a tag of the rig's own.
func BuildImage(ctx context.Context, d images.Docker, dir string, out io.Writer) (string, error) {
	tmp, err := os.MkdirTemp("", "contested-rig-build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "ledger")
	cmd := goCmd(ctx, dir, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./examples/ledger/cmd/ledger")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./examples/ledger/cmd/ledger: %w\n%s", err, b)
	}
	if err := images.FromBinary(ctx, d, rigImage, bin, []string{"help"}, map[string]string{"dev.contested.image": "ledger-rig"}, io.Discard); err != nil {
		return "", err
	}
	fmt.Fprintf(out, "cluster: built %s (static, on scratch)\n", rigImage)
	return rigImage, nil
}

// rig is a running cluster: the layer, the ledger database and replicas.
type rig struct {
	layer    *faultlayer.Layer
	replicas replicas
	proxies  []string // proxy name per replica
	ledger   string   // the ledger database's DSN as this process reaches it
	service  string   // the service role's password, which only the replicas' DSN files hold
	db       *pgxpool.Pool
	run      string
	opening  int64
	accounts []string
	rec      *faultrecord.Recorder
	hist     *oracle.Recorder
	testName string
	legSeq   int
}

const ledgerDB = "ledger_rig"

func newRig(ctx context.Context, layer *faultlayer.Layer, opts Options, run, image, bin string, cli *testcontainers.DockerClient) (*rig, error) {
	r := &rig{layer: layer, run: run, accounts: ledger.AccountNames(8), hist: oracle.NewRecorder()}
	if _, err := layer.DB().Exec(ctx, "CREATE DATABASE "+pgx.Identifier{ledgerDB}.Sanitize()); err != nil {
		return nil, fmt.Errorf("create the ledger database: %w", err)
	}
	var err error
	if r.ledger, err = withHostDB(layer.PostgresDSN, "", ledgerDB); err != nil {
		return nil, err
	}
	if r.db, err = ledger.Connect(ctx, r.ledger, 6); err != nil {
		return nil, err
	}
	if err := ledger.Migrate(ctx, r.db); err != nil {
		return nil, err
	}
	open := map[string]int64{}
	for _, a := range r.accounts {
		open[a] = 1000
		r.opening += 1000
	}
	if err := ledger.OpenAccounts(ctx, r.db, open); err != nil {
		return nil, err
	}
	recDir := opts.RecordDir
	if recDir == "" {
		recDir = filepath.Join(opts.ResultsRoot, "cluster")
		if err := os.RemoveAll(faultrecord.FaultDir(recDir)); err != nil {
			return nil, err
		}
	}
	r.testName = opts.TestName
	if r.testName == "" {
		r.testName = "ClusterTests"
	}
	if r.rec, err = faultrecord.NewRecorder("github.com/contested/contested/cluster", faultrecord.WithResultsDir(recDir), faultrecord.WithRunID(run)); err != nil {
		return nil, err
	}

	// One proxy per replica between it and the database: the partition
	// leg disables one of them.
	// The replicas connect as the service role, never as the test plane's
	// superuser, and get their DSN in a file, never on their command line.
	password, err := serviceCredentials(ctx, layer.DB(), r.db)
	if err != nil {
		return nil, err
	}
	r.service = password
	upstreamDSN := func(i int) string {
		_, port, _ := net.SplitHostPort(layer.Ports[i].Listen)
		host := "127.0.0.1"
		if image != "" {
			host = "toxiproxy" // its name on the rig's network
		}
		return serviceDSN(net.JoinHostPort(host, port), password)
	}
	for i := range opts.Replicas {
		name := fmt.Sprintf("rig-replica-%d", i+1)
		if _, err := layer.Toxiproxy().CreateProxy(name, layer.Ports[i].Listen, layer.PostgresUpstream); err != nil {
			return nil, fmt.Errorf("create proxy %s: %w", name, err)
		}
		r.proxies = append(r.proxies, name)
	}
	args := func(i int, dsnFile string) []string {
		return []string{"work", "-dsn-file", dsnFile, "-name", fmt.Sprintf("replica-%d", i+1), "-consumers", "2", "-batch", "5", "-poll", "20ms"}
	}
	if image != "" {
		r.replicas, err = newDockerReplicas(ctx, cli, image, layer.Network, run, opts.Replicas, args, upstreamDSN)
	} else {
		r.replicas, err = newLocalReplicas(ctx, bin, opts.Replicas, args, upstreamDSN)
	}
	if r.replicas == nil {
		return nil, err
	}
	if err != nil {
		return r, err
	}
	return r, r.waitHealthy(ctx)
}

// waitHealthy waits until every replica has run for a second without
// exiting: the service has no health endpoint, and a worker that cannot
// reach its database exits at once.
func (r *rig) waitHealthy(ctx context.Context) error {
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		for i, name := range r.replicas.Names() {
			if !r.replicas.Running(ctx, i) {
				return fmt.Errorf("%s exited during start-up:\n%s", name, tail(r.replicas.Logs(ctx), 20))
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

func (r *rig) close(ctx context.Context) {
	if r.db != nil {
		r.db.Close()
	}
	if r.replicas != nil {
		r.replicas.Close(context.WithoutCancel(ctx))
	}
}

// artifacts writes ps.txt, logs.txt and legs.json: on a green run they are
// the baseline a red run is compared against.
func (r *rig) artifacts(ctx context.Context, dir string, rep *Report, out io.Writer) {
	if r.replicas == nil {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(out, "cluster: artifacts: %v\n", err)
		return
	}
	files := map[string]string{
		"ps.txt":   r.replicas.PS(ctx),
		"logs.txt": r.replicas.Logs(ctx),
	}
	for name, body := range files {
		if err := atomicfile.Write(filepath.Join(dir, name), []byte(body)); err != nil {
			fmt.Fprintf(out, "cluster: artifacts: %v\n", err)
		}
	}
	if err := atomicfile.WriteJSON(filepath.Join(dir, "legs.json"), rep); err != nil {
		fmt.Fprintf(out, "cluster: artifacts: %v\n", err)
	}
	fmt.Fprintf(out, "cluster: artifacts in %s (ps.txt, logs.txt, legs.json, fault/)\n", dir)
}

// withHostDB returns dsn with another host:port (when not empty) and
// database.
func withHostDB(dsn, hostport, db string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", fmt.Errorf("parse the test-plane DSN: %w", err)
	}
	if hostport != "" {
		u.Host = hostport
	}
	u.Path = "/" + db
	return u.String(), nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
