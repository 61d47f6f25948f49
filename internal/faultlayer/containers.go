package faultlayer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tcnetwork "github.com/testcontainers/testcontainers-go/network"

	"github.com/contested/contested/internal/dockerenv"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/images"
	"github.com/contested/contested/internal/reap"
	"github.com/contested/contested/internal/secret"
)

// Container-side facts of the containers provider.
const (
	controlPort     = 8474
	postgresAlias   = "postgres"
	toxiproxyAlias  = "toxiproxy"
	testPlaneDB     = images.PostgresDatabase
	testPlaneUser   = "postgres"
	rolePrefix      = "layer-"
	startupDeadline = 2 * time.Minute
)

// Sweep removes what killed runs left behind on this host: labelled layer
// containers and networks whose owner process is gone, and data
// directories of embedded layers whose owner is gone. It never touches
// anything without our label. w receives one line per removal.
func Sweep(ctx context.Context, w io.Writer) error {
	var errs []error
	if cli, err := dockerenv.Connect(ctx); err == nil {
		if _, err := reap.Sweep(ctx, cli, reap.Orphaned(rolePrefix), w); err != nil {
			errs = append(errs, err)
		}
		cli.Close()
	} else {
		// Without an engine there is nothing of ours in it to sweep, or
		// it did not answer this time: either way, say what was skipped.
		fmt.Fprintf(w, "sweep: no Docker engine answered (%v): containers, networks and volumes were not swept\n", err)
	}
	if err := sweepEmbedded(w); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// upContainers starts Postgres and Toxiproxy on a private network of their
// own, publishing every port on 127.0.0.1 only. Toxiproxy runs in Postgres'
// network namespace: its proxies reach Postgres on loopback, not across the
// network's bridge (a query loop through a proxy ran 1.37 times as fast so
// as through a Toxiproxy with a namespace of its own, measured in turns),
// and the Postgres container publishes the ports of both, answers to both
// names on the network, and has the one address the host dials. The proxy
// ports are published up front (the engine cannot publish a port after a
// container has started) only when this host is not on that network; when
// it is, the legs dial them at that address (see direct.go).
func upContainers(ctx context.Context, cfg Config) (_ *Layer, err error) {
	dockerenv.Configure(nil)
	cli, err := dockerenv.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCannotRun, err)
	}
	ports, err := containerPorts(cfg.ProxyPorts)
	if err != nil {
		cli.Close()
		return nil, err
	}
	if err := Sweep(ctx, cfg.Log); err != nil {
		fmt.Fprintf(cfg.Log, "fault layer: sweep: %v\n", err)
	}
	pgImage, tpImage, err := containerImages(ctx, cli, cfg)
	if err != nil {
		cli.Close()
		return nil, err
	}

	l := &Layer{ProxyListenHost: "0.0.0.0", PostgresUpstream: "127.0.0.1:5432"}
	run := cfg.RunID
	teardown := sweepRun(ctx, cli, run)
	l.onClose(func(ctx context.Context) error {
		if l.isKept() {
			return cli.Close()
		}
		return teardown(ctx)
	})
	labels := func(role string) map[string]string {
		m := reap.Labels(run, rolePrefix+role)
		if cfg.warmRecord != "" {
			m[reap.LabelWarm] = cfg.warmRecord
		}
		return m
	}
	defer func() {
		if err != nil {
			l.Close(context.WithoutCancel(ctx))
		}
	}()

	l.Network = "contested-" + run
	created, err := cli.NetworkCreate(ctx, l.Network, client.NetworkCreateOptions{
		Driver: "bridge",
		Labels: labels("network"),
	})
	if err != nil {
		return nil, fmt.Errorf("%w: create network %s: %v", ErrCannotRun, l.Network, err)
	}
	routed := hostOnNetwork(ctx, cli, created.ID)
	start := func(routed bool) error {
		pg, err := startPostgres(ctx, l, cli, pgImage, run, labels("postgres"), ports, routed, cfg.Log)
		if err != nil {
			return err
		}
		return startToxiproxy(ctx, l, cli, tpImage, run, labels("toxiproxy"), pg, cfg.Log)
	}
	if err := start(routed); err != nil {
		return nil, err
	}
	if routed && !toxiproxyAnswers(l.ToxiproxyDirect, controlPort) {
		// The network looked routed and Toxiproxy does not answer on it:
		// start both again with the proxy ports published.
		fmt.Fprintf(cfg.Log, "fault layer: Toxiproxy does not answer at %q on the layer's network; starting the layer again with its proxy ports published\n", l.ToxiproxyDirect)
		for _, id := range []string{l.ToxiproxyContainer, l.postgresContainer} {
			if _, err := cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !cerrdefs.IsNotFound(err) {
				return nil, fmt.Errorf("%w: remove the layer's containers to publish its ports: %v", ErrCannotRun, err)
			}
		}
		if err := start(false); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(cfg.Log, "fault layer: up: Toxiproxy %s, Postgres %s\n", l.ToxiproxyURL, secret.ScrubString(l.PostgresDSN))
	return l, nil
}

// containerPorts are the proxy ports a containers layer publishes: a range
// (spec, default DefaultProxyPorts), never port=address mappings, since the
// provider publishes its own. The dial side is filled in from the bindings.
func containerPorts(spec string) ([]ProxyPort, error) {
	if spec == "" {
		spec = DefaultProxyPorts
	}
	ports, err := ParseProxyPorts(spec, "0.0.0.0", "127.0.0.1")
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrConfig, envvar.ProxyPorts, err)
	}
	for _, p := range ports {
		if p.Dial != net.JoinHostPort("127.0.0.1", strconv.Itoa(p.Port)) {
			return nil, fmt.Errorf("%w: %s: the containers provider publishes its own ports; give a range, not port=address mappings", ErrConfig, envvar.ProxyPorts)
		}
	}
	return ports, nil
}

// containerImages makes sure both images are in the engine (upstream, or
// built locally: images.Image.Ensure) and returns their references.
func containerImages(ctx context.Context, cli *testcontainers.DockerClient, cfg Config) (pg, tp string, err error) {
	if pg, err = images.Postgres().Ensure(ctx, cli, cfg.PostgresImage, cfg.Log); err != nil {
		return "", "", fmt.Errorf("%w: postgres image: %v", ErrCannotRun, err)
	}
	if tp, err = images.Toxiproxy().Ensure(ctx, cli, cfg.ToxiproxyImage, cfg.Log); err != nil {
		return "", "", fmt.Errorf("%w: toxiproxy image: %v", ErrCannotRun, err)
	}
	return pg, tp, nil
}

// sweepRun is a containers layer's teardown: it removes everything
// labelled with run and owned by this process, whatever state bring-up
// reached; the labels, not a handle, are the source of truth. The owner
// keeps another process that was given the same run id from losing its
// layer to this teardown. It closes cli.
func sweepRun(bringUp context.Context, cli *testcontainers.DockerClient, run string) func(context.Context) error {
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		defer cli.Close()
		_, err := reap.Sweep(ctx, cli, reap.Mine(run), io.Discard)
		if bringUp.Err() == nil {
			return err
		}
		// Interrupted: a create whose request was cancelled can still land
		// in the daemon after the sweep. Sweep again once things settle,
		// until a sweep finds nothing.
		for range 5 {
			select {
			case <-ctx.Done():
				return errors.Join(err, ctx.Err())
			case <-time.After(time.Second):
			}
			swept, serr := reap.Sweep(ctx, cli, reap.Mine(run), io.Discard)
			if serr != nil {
				err = errors.Join(err, serr)
			}
			if swept.Empty() {
				break
			}
		}
		return err
	}
}

// pgDataDir is where both the upstream image and ours keep the data
// directory; the layer mounts a tmpfs there (pgDataTmpfs), owned by the
// images' postgres user and sized by the kernel's default (half the RAM,
// taken only as it is used).
const (
	pgDataDir   = "/var/lib/postgresql/data"
	pgDataTmpfs = "rw,uid=999,gid=999,mode=0700"
)

// startPostgres starts the test-plane Postgres on the layer's network,
// under both the names Postgres and Toxiproxy answer to there, publishing
// on 127.0.0.1 its port, Toxiproxy's control port and, unless the host is
// on the network (routed), the proxy ports: Toxiproxy will run in its
// network namespace (startToxiproxy). It sets the layer's DSN, the
// addresses on the network and the ports' dial addresses.
func startPostgres(ctx context.Context, l *Layer, cli *testcontainers.DockerClient, image, run string, labels map[string]string, ports []ProxyPort, routed bool, log io.Writer) (testcontainers.Container, error) {
	password := randomPassword()
	ready := pgLogReady{docker: cli, user: testPlaneUser, password: password, db: testPlaneDB, timeout: startupDeadline}
	ready.readyLine = images.ReadyLine(ctx, cli, image)
	exposed := []string{"5432/tcp", fmt.Sprintf("%d/tcp", controlPort)}
	if routed {
		fmt.Fprintf(log, "fault layer: starting Postgres (%s) on network %s; this host is on it, so the %d proxy ports are dialled there, none published\n", image, l.Network, len(ports))
	} else {
		for _, p := range ports {
			exposed = append(exposed, fmt.Sprintf("%d/tcp", p.Port))
		}
		fmt.Fprintf(log, "fault layer: starting Postgres (%s) on network %s, publishing %d proxy ports on 127.0.0.1\n", image, l.Network, len(ports))
	}
	pg, err := testcontainers.Run(ctx, image,
		testcontainers.WithEnv(map[string]string{"POSTGRES_USER": testPlaneUser, "POSTGRES_PASSWORD": password, "POSTGRES_DB": testPlaneDB}),
		// The test plane needs no durability across a host crash: no fsync.
		testcontainers.WithCmd("postgres", "-c", "max_connections=200", "-c", "fsync=off", "-c", "full_page_writes=off"),
		// Nor a data directory on the container's file system, an overlay
		// that crosses FUSE on engines without a kernel overlay: there
		// CREATE DATABASE took 335 ms against 52 ms on a tmpfs, and the
		// FUSE daemon cost more CPU than Postgres. Both images fill the
		// empty directory at start (ours copies the cluster it holds).
		testcontainers.WithTmpfs(map[string]string{pgDataDir: pgDataTmpfs}),
		testcontainers.WithLabels(labels),
		testcontainers.WithName("contested-"+run+"-postgres"),
		tcnetwork.WithNetworkName([]string{postgresAlias, toxiproxyAlias}, l.Network),
		loopbackOnly(exposed...),
		testcontainers.WithWaitStrategy(ready),
	)
	if pg != nil {
		l.postgresContainer = pg.GetContainerID()
	}
	if err != nil {
		return nil, fmt.Errorf("%w: start Postgres: %v", ErrCannotRun, err)
	}
	insp, err := pg.Inspect(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: inspect Postgres: %v", ErrCannotRun, err)
	}
	bound := func(port int) (string, error) {
		for _, b := range insp.NetworkSettings.Ports[network.MustParsePort(fmt.Sprintf("%d/tcp", port))] {
			if b.HostIP.IsLoopback() {
				return net.JoinHostPort("127.0.0.1", b.HostPort), nil
			}
		}
		return "", fmt.Errorf("%w: port %d/tcp is not published on 127.0.0.1", ErrCannotRun, port)
	}
	pgAddr, err := bound(5432)
	if err != nil {
		return nil, err
	}
	_, pgPort, _ := net.SplitHostPort(pgAddr)
	n, _ := strconv.Atoi(pgPort)
	l.PostgresDSN = dsn(testPlaneUser, password, "127.0.0.1", n, testPlaneDB)
	control, err := bound(controlPort)
	if err != nil {
		return nil, err
	}
	l.ToxiproxyURL = "http://" + control
	l.PostgresDirect, l.ToxiproxyDirect = "", ""
	if nw, ok := insp.NetworkSettings.Networks[l.Network]; ok && nw.IPAddress.IsValid() {
		l.PostgresDirect = net.JoinHostPort(nw.IPAddress.String(), "5432")
		l.ToxiproxyDirect = nw.IPAddress.String()
	}
	for i, p := range ports {
		if routed {
			ports[i].Dial = net.JoinHostPort(l.ToxiproxyDirect, strconv.Itoa(p.Port))
		} else if ports[i].Dial, err = bound(p.Port); err != nil {
			return nil, err
		}
	}
	l.Ports = ports
	return pg, nil
}

// startToxiproxy starts Toxiproxy in the network namespace of the Postgres
// container pg, whose bindings are its own (startPostgres set the layer's
// control URL and the ports' dial addresses from them).
func startToxiproxy(ctx context.Context, l *Layer, cli *testcontainers.DockerClient, image, run string, labels map[string]string, pg testcontainers.Container, log io.Writer) error {
	fmt.Fprintf(log, "fault layer: starting Toxiproxy (%s) in Postgres' network namespace\n", image)
	tp, err := testcontainers.Run(ctx, image,
		testcontainers.WithCmd("-host=0.0.0.0", "-port="+strconv.Itoa(controlPort)),
		testcontainers.WithLabels(labels),
		testcontainers.WithName("contested-"+run+"-toxiproxy"),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.NetworkMode = container.NetworkMode("container:" + pg.GetContainerID())
		}),
		// The image is FROM scratch: there is no shell for a listening-port
		// check, so readiness is the control API answering, once its log
		// says it starts.
		testcontainers.WithWaitStrategy(toxiproxyLogReady{docker: cli, url: l.ToxiproxyURL, timeout: startupDeadline}),
	)
	if tp != nil {
		l.ToxiproxyContainer = tp.GetContainerID()
	}
	if err != nil {
		return fmt.Errorf("%w: start Toxiproxy: %v", ErrCannotRun, err)
	}
	return nil
}

// loopbackOnly exposes ports and binds each to a random port on 127.0.0.1.
// Without the explicit HostIP the engine binds every interface.
func loopbackOnly(ports ...string) testcontainers.CustomizeRequestOption {
	return func(req *testcontainers.GenericContainerRequest) error {
		if err := testcontainers.WithExposedPorts(ports...)(req); err != nil {
			return err
		}
		return testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			if hc.PortBindings == nil {
				hc.PortBindings = network.PortMap{}
			}
			for _, p := range ports {
				hc.PortBindings[network.MustParsePort(p)] = []network.PortBinding{{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: "0"}}
			}
		})(req)
	}
}

func dsn(user, password, host string, port int, db string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(user, password),
		Host:     net.JoinHostPort(host, strconv.Itoa(port)),
		Path:     "/" + db,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}
