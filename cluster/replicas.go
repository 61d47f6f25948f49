package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tcnetwork "github.com/testcontainers/testcontainers-go/network"

	"github.com/contested/contested/internal/reap"
)

// replicas runs the service's replicas: containers on the layer's network,
// or local processes when there is no Docker engine. The kill legs only
// use this interface, so they run the same way on both.
type replicas interface {
	Names() []string
	// Start starts replica i (again, after a kill: the same container or
	// a new process with the same name).
	Start(ctx context.Context, i int) error
	// Kill sends SIGKILL to replica i, waits for it to exit and returns
	// its exit status.
	Kill(ctx context.Context, i int) (string, error)
	Running(ctx context.Context, i int) bool
	// Health returns the host:port this process reaches replica i's
	// health endpoint at (after a restart too).
	Health(ctx context.Context, i int) (string, error)
	// Logs returns every replica's output, each line prefixed with its name.
	Logs(ctx context.Context) string
	// PS describes every replica's state, one line each.
	PS(ctx context.Context) string
	Close(ctx context.Context) error
}

// replicaRole labels the rig's replica containers; the sweep selects stale
// rigs by it.
const replicaRole = "cluster-replica"

// healthPort is the port a replica container's health endpoint listens on;
// it is published on 127.0.0.1 only.
const healthPort = "8080/tcp"

// replicaPlan is what every replica is started from.
type replicaPlan struct {
	n    int
	args func(Replica) []string
	// dsn is replica i's DSN, written to its DSN file.
	dsn func(i int) string
	// dsnFile is where a container finds its DSN file.
	dsnFile string
	// secretEnv are the service's credential variables, which local
	// replicas do not inherit.
	secretEnv []string
}

func replicaName(i int) string { return fmt.Sprintf("replica-%d", i+1) }

// dockerReplicas are containers of the rig image on the layer's network.
type dockerReplicas struct {
	cli     client.APIClient
	image   string
	network string
	run     string
	names   []string
	ids     []string
}

// newDockerReplicas starts plan.n containers running plan.args, with
// replica i's DSN, plan.dsn(i), copied into the container (mode 0600)
// before it starts: the password is on no command line and in no
// environment. Each container's health endpoint is published on a random
// port of 127.0.0.1.
func newDockerReplicas(ctx context.Context, cli client.APIClient, image, netName, run string, plan replicaPlan) (*dockerReplicas, error) {
	d := &dockerReplicas{cli: cli, image: image, network: netName, run: run}
	port := strings.TrimSuffix(healthPort, "/tcp")
	for i := range plan.n {
		name := replicaName(i)
		ctr, err := testcontainers.Run(ctx, image,
			testcontainers.WithCmd(plan.args(Replica{Index: i, Name: name, DSNFile: plan.dsnFile, Health: "0.0.0.0:" + port})...),
			testcontainers.WithFiles(testcontainers.ContainerFile{
				Reader: strings.NewReader(plan.dsn(i) + "\n"), ContainerFilePath: plan.dsnFile, FileMode: 0o600,
			}),
			testcontainers.WithName(fmt.Sprintf("contested-%s-%s", run, name)),
			testcontainers.WithLabels(reap.Labels(run, replicaRole)),
			tcnetwork.WithNetworkName([]string{name}, netName),
			loopbackPort(healthPort),
		)
		if ctr != nil {
			d.names = append(d.names, name)
			d.ids = append(d.ids, ctr.GetContainerID())
		}
		if err != nil {
			return d, fmt.Errorf("start %s: %w", name, err)
		}
	}
	return d, nil
}

func (d *dockerReplicas) Names() []string { return d.names }

func (d *dockerReplicas) Start(ctx context.Context, i int) error {
	_, err := d.cli.ContainerStart(ctx, d.ids[i], client.ContainerStartOptions{})
	return err
}

func (d *dockerReplicas) Kill(ctx context.Context, i int) (string, error) {
	if _, err := d.cli.ContainerKill(ctx, d.ids[i], client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		return "", fmt.Errorf("kill %s: %w", d.names[i], err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := d.cli.ContainerInspect(ctx, d.ids[i], client.ContainerInspectOptions{})
		if err != nil {
			return "", err
		}
		st := r.Container.State
		if !st.Running {
			if st.ExitCode != 137 {
				return "", fmt.Errorf("%s exited with %d, not 137 (SIGKILL)", d.names[i], st.ExitCode)
			}
			return fmt.Sprintf("%s exited 137 (SIGKILL) at %s", d.names[i], st.FinishedAt), nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("%s still running 30s after SIGKILL", d.names[i])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (d *dockerReplicas) Running(ctx context.Context, i int) bool {
	r, err := d.cli.ContainerInspect(ctx, d.ids[i], client.ContainerInspectOptions{})
	return err == nil && r.Container.State.Running
}

func (d *dockerReplicas) Health(ctx context.Context, i int) (string, error) {
	r, err := d.cli.ContainerInspect(ctx, d.ids[i], client.ContainerInspectOptions{})
	if err != nil {
		return "", err
	}
	if ns := r.Container.NetworkSettings; ns != nil {
		for _, b := range ns.Ports[network.MustParsePort(healthPort)] {
			if b.HostIP.IsLoopback() {
				return net.JoinHostPort("127.0.0.1", b.HostPort), nil
			}
		}
	}
	return "", fmt.Errorf("%s: port %s is not published on 127.0.0.1", d.names[i], healthPort)
}

// loopbackPort exposes port and binds it to a random port on 127.0.0.1
// only: without the explicit address the engine binds every interface.
func loopbackPort(port string) testcontainers.CustomizeRequestOption {
	return func(req *testcontainers.GenericContainerRequest) error {
		if err := testcontainers.WithExposedPorts(port)(req); err != nil {
			return err
		}
		return testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			if hc.PortBindings == nil {
				hc.PortBindings = network.PortMap{}
			}
			hc.PortBindings[network.MustParsePort(port)] = []network.PortBinding{{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: "0"}}
		})(req)
	}
}

func (d *dockerReplicas) Logs(ctx context.Context) string {
	var b strings.Builder
	for i, id := range d.ids {
		r, err := d.cli.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Timestamps: true})
		if err != nil {
			fmt.Fprintf(&b, "[%s] (logs unavailable: %v)\n", d.names[i], err)
			continue
		}
		var buf bytes.Buffer
		_, err = stdcopy.StdCopy(&buf, &buf, r)
		r.Close()
		prefixLines(&b, d.names[i], buf.String())
		if err != nil {
			fmt.Fprintf(&b, "[%s] (log read stopped: %v)\n", d.names[i], err)
		}
	}
	return b.String()
}

func (d *dockerReplicas) PS(ctx context.Context) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-10s %-12s %-8s %-5s %-10s %s\n", "NAME", "CONTAINER", "STATE", "EXIT", "RESTARTS", "STARTED")
	for i, id := range d.ids {
		r, err := d.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		if err != nil {
			fmt.Fprintf(&b, "%-10s %-12.12s %v\n", d.names[i], id, err)
			continue
		}
		st := r.Container.State
		fmt.Fprintf(&b, "%-10s %-12.12s %-8s %-5d %-10d %s\n", d.names[i], id, st.Status, st.ExitCode, r.Container.RestartCount, st.StartedAt)
	}
	return b.String()
}

// Close removes nothing: the rig's teardown sweeps everything labelled
// with its run, which covers containers bring-up left half made.
func (d *dockerReplicas) Close(context.Context) error { return nil }

// localReplicas are processes of the service's binary on this machine.
// Each reads its DSN from a file of mode 0600 (Replica.DSNFile), inherits
// no credential from this process's environment (replicaEnv), and serves
// its health endpoint on a port of 127.0.0.1 chosen when the rig starts
// and kept across restarts.
type localReplicas struct {
	bin       string
	args      func(Replica) []string
	secretEnv []string
	dsnDir    string
	dsnFile   []string
	health    []string
	names     []string
	mu        sync.Mutex
	procs     []*localProc
}

type localProc struct {
	cmd    *exec.Cmd
	done   chan struct{}
	out    *syncBuffer
	starts int
}

func newLocalReplicas(ctx context.Context, bin string, plan replicaPlan) (*localReplicas, error) {
	l := &localReplicas{bin: bin, args: plan.args, secretEnv: plan.secretEnv}
	dsns := make([]string, plan.n)
	for i := range dsns {
		dsns[i] = plan.dsn(i)
	}
	var err error
	if l.dsnDir, l.dsnFile, err = dsnFiles(dsns); err != nil {
		return l, fmt.Errorf("write the replicas' DSN files: %w", err)
	}
	for i := range plan.n {
		addr, err := freePort()
		if err != nil {
			return l, fmt.Errorf("a health port for %s: %w", replicaName(i), err)
		}
		l.health = append(l.health, addr)
		l.names = append(l.names, replicaName(i))
		l.procs = append(l.procs, &localProc{out: &syncBuffer{}})
		if err := l.Start(ctx, i); err != nil {
			return l, err
		}
	}
	return l, nil
}

// freePort returns 127.0.0.1:port for a port free right now.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func (l *localReplicas) Names() []string { return l.names }

func (l *localReplicas) Start(ctx context.Context, i int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.procs[i]
	// Not CommandContext: the process must outlive a cancelled leg until
	// the rig's teardown stops it.
	cmd := exec.Command(l.bin, l.args(Replica{Index: i, Name: l.names[i], DSNFile: l.dsnFile[i], Health: l.health[i]})...)
	cmd.Env = replicaEnv(l.secretEnv)
	cmd.Stdout, cmd.Stderr = p.out, p.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", l.names[i], err)
	}
	p.starts++
	fmt.Fprintf(p.out, "(contested: started pid %d)\n", cmd.Process.Pid)
	p.cmd, p.done = cmd, make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { cmd.Wait(); close(done) }(cmd, p.done)
	return nil
}

func (l *localReplicas) Kill(ctx context.Context, i int) (string, error) {
	l.mu.Lock()
	p := l.procs[i]
	l.mu.Unlock()
	if p.cmd == nil {
		return "", fmt.Errorf("%s was never started", l.names[i])
	}
	select {
	case <-p.done:
		return "", fmt.Errorf("%s had already exited (%v)", l.names[i], p.cmd.ProcessState)
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return "", err
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		return "", fmt.Errorf("%s exited with %v, not by SIGKILL", l.names[i], p.cmd.ProcessState)
	}
	return fmt.Sprintf("%s pid %d %s", l.names[i], p.cmd.Process.Pid, p.cmd.ProcessState), nil
}

func (l *localReplicas) Running(ctx context.Context, i int) bool {
	l.mu.Lock()
	p := l.procs[i]
	l.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (l *localReplicas) Health(_ context.Context, i int) (string, error) { return l.health[i], nil }

func (l *localReplicas) Logs(context.Context) string {
	var b strings.Builder
	for i, p := range l.procs {
		prefixLines(&b, l.names[i], p.out.String())
	}
	return b.String()
}

func (l *localReplicas) PS(ctx context.Context) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-10s %-8s %-8s %-8s %s\n", "NAME", "PID", "STATE", "STARTS", "LAST EXIT")
	for i, p := range l.procs {
		pid, state, last := 0, "never", ""
		if p.cmd != nil {
			pid, state = p.cmd.Process.Pid, "running"
			if !l.Running(ctx, i) {
				state, last = "exited", p.cmd.ProcessState.String()
			}
		}
		fmt.Fprintf(&b, "%-10s %-8d %-8s %-8d %s\n", l.names[i], pid, state, p.starts, last)
	}
	return b.String()
}

// Close kills every replica still running and removes their DSN files.
func (l *localReplicas) Close(ctx context.Context) error {
	var errs []error
	for i := range l.procs {
		if l.Running(ctx, i) {
			if _, err := l.Kill(ctx, i); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := os.RemoveAll(l.dsnDir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// buildLocal compiles the service's command, package pkg of the module at
// moduleDir, as name, for local replicas.
func buildLocal(ctx context.Context, moduleDir, name, pkg string) (string, func(), error) {
	dir, err := os.MkdirTemp("", "contested-rig-bin-")
	if err != nil {
		return "", nil, err
	}
	bin := filepath.Join(dir, name)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg)
	cmd.Dir = moduleDir
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
	}
	return bin, func() { os.RemoveAll(dir) }, nil
}

func prefixLines(b *strings.Builder, name, text string) {
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		if line != "" {
			fmt.Fprintf(b, "[%s] %s\n", name, line)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a process's writer goroutines and
// the rig's readers at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var _ io.Writer = (*syncBuffer)(nil)
