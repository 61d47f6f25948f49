package cluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/faultdir"
	"github.com/contested/contested/internal/faultlayer"
)

// rig is a running cluster: the layer, the service's database, its
// workload and oracle, and the replicas.
type rig struct {
	spec     Spec
	layer    *faultlayer.Layer
	replicas replicas
	proxies  []string // proxy name per replica
	dsn      string   // the service's database as this process reaches it (superuser)
	service  string   // the service role's password, which only the replicas' DSN files hold
	db       *pgxpool.Pool
	work     Workload
	oracle   Oracle
	run      string
	rec      *faultrecord.Recorder
	testName string
	legSeq   int
	// seed and level draw each leg's schedule; replay reruns it.
	seed   int64
	level  int
	replay string
	// healthWait bounds how long a started replica may take to answer
	// its health endpoint.
	healthWait time.Duration
}

// newRig creates the service's database, lets the service set it up, and
// starts the replicas. A rig it returns, even with an error, must be
// closed.
func newRig(ctx context.Context, svc Service, spec Spec, layer *faultlayer.Layer, opts Options, run string, p *platform) (*rig, error) {
	r := &rig{spec: spec, layer: layer, run: run, testName: opts.TestName, healthWait: opts.HealthWait,
		seed: opts.Seed, level: opts.Level, replay: opts.Replay}
	if r.testName == "" {
		r.testName = "ClusterTests"
	}
	if _, err := layer.DB().Exec(ctx, "CREATE DATABASE "+pgx.Identifier{spec.database()}.Sanitize()); err != nil {
		return nil, fmt.Errorf("create the service's database: %w", err)
	}
	var err error
	if r.dsn, err = withHostDB(layer.PostgresDSN, "", spec.database()); err != nil {
		return nil, err
	}
	if r.db, err = connect(ctx, r.dsn); err != nil {
		return r, err
	}
	if r.work, r.oracle, err = svc.Setup(ctx, r.db); err != nil {
		return r, fmt.Errorf("set up the %s service: %w", spec.Name, err)
	}
	if r.work == nil || r.oracle == nil {
		return r, fmt.Errorf("%w: the %s service's Setup returned no workload or no oracle", ErrUsage, spec.Name)
	}
	recDir := opts.RecordDir
	if recDir == "" {
		recDir = filepath.Join(opts.ResultsRoot, "cluster")
		if err := os.RemoveAll(faultdir.Of(recDir)); err != nil {
			return r, err
		}
	}
	pkg := opts.Package
	if pkg == "" {
		pkg = "github.com/contested/contested/cluster"
	}
	if r.rec, err = faultrecord.NewRecorder(pkg, faultrecord.WithResultsDir(recDir), faultrecord.WithRunID(run)); err != nil {
		return r, err
	}
	return r, r.startReplicas(ctx, opts.Replicas, p)
}

// connect opens the rig's own pool to the service's database.
func connect(ctx context.Context, dsn string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse the service database's DSN: %w", err)
	}
	cfg.MaxConns = 6
	db, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to the service's database: %w", err)
	}
	if err := db.Ping(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to the service's database: %w", err)
	}
	return db, nil
}

// startReplicas starts n replicas, each reaching Postgres through a proxy
// of its own (the partition leg disables one), and waits until each
// answers its health endpoint. The replicas connect as the service role,
// never as the test plane's superuser, and get their DSN in a file, never
// on their command line.
func (r *rig) startReplicas(ctx context.Context, n int, p *platform) error {
	password, err := serviceCredentials(ctx, r.layer.DB(), r.db, r.spec.role())
	if err != nil {
		return err
	}
	r.service = password
	for i := range n {
		name := fmt.Sprintf("rig-replica-%d", i+1)
		if _, err := r.layer.Toxiproxy().CreateProxy(name, r.layer.Ports[i].Listen, r.layer.PostgresUpstream); err != nil {
			return fmt.Errorf("create proxy %s: %w", name, err)
		}
		r.proxies = append(r.proxies, name)
	}
	plan := replicaPlan{n: n, args: r.spec.Args, dsn: func(i int) string {
		_, port, _ := net.SplitHostPort(r.layer.Ports[i].Listen)
		host := "127.0.0.1"
		if p.image != "" {
			host = "toxiproxy" // its name on the rig's network
		}
		return serviceDSN(net.JoinHostPort(host, port), r.spec, password)
	}}
	if p.image != "" {
		plan.dsnFile = "/run/contested/" + r.spec.Name + ".dsn"
		r.replicas, err = newDockerReplicas(ctx, p.cli, p.image, r.layer.Network, r.run, plan)
	} else {
		plan.secretEnv = r.spec.SecretEnv
		r.replicas, err = newLocalReplicas(ctx, p.bin, plan)
	}
	if err != nil {
		return err
	}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	return r.waitHealthy(ctx, all...)
}

// restart starts replica i again and waits for its health endpoint.
func (r *rig) restart(ctx context.Context, i int) error {
	if err := r.replicas.Start(ctx, i); err != nil {
		return err
	}
	return r.waitHealthy(ctx, i)
}

// waitHealthy waits until each of the replicas answers 200 on its health
// endpoint. A replica that exits meanwhile fails the wait at once, with
// the replicas' last lines.
func (r *rig) waitHealthy(ctx context.Context, which ...int) error {
	deadline := time.Now().Add(r.healthWait)
	client := &http.Client{Timeout: time.Second}
	names := r.replicas.Names()
	for _, i := range which {
		last := "no answer yet"
		for {
			if !r.replicas.Running(ctx, i) {
				return fmt.Errorf("%s exited during start-up:\n%s", names[i], tail(r.replicas.Logs(ctx), 20))
			}
			ok, said := r.healthy(ctx, client, i)
			if ok {
				break
			}
			last = said
			if time.Now().After(deadline) {
				return fmt.Errorf("%s did not answer 200 on %s within %s (last: %s); its last lines:\n%s",
					names[i], r.spec.HealthPath, r.healthWait, last, tail(r.replicas.Logs(ctx), 20))
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

// healthy asks replica i's health endpoint once.
func (r *rig) healthy(ctx context.Context, client *http.Client, i int) (bool, string) {
	addr, err := r.replicas.Health(ctx, i)
	if err != nil {
		return false, err.Error()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+r.spec.HealthPath, nil)
	if err != nil {
		return false, err.Error()
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, resp.Status
	}
	return true, ""
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
