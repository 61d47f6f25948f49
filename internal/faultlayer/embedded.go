package faultlayer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	mathrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	toxiproxyserver "github.com/Shopify/toxiproxy/v2"
	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"

	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/files"
	"github.com/contested/contested/internal/images"
	"github.com/contested/contested/internal/reap"
	"github.com/contested/contested/internal/secret"
	"github.com/contested/contested/internal/terminal"
)

// embeddedDirPrefix names the temporary directories of embedded layers; the
// sweep finds orphans by it and by the owner file inside.
const embeddedDirPrefix = "contested-embedded-"

// upEmbedded runs Toxiproxy in this process, on an ephemeral 127.0.0.1
// port, and Postgres from local binaries in a temporary data directory.
func upEmbedded(ctx context.Context, cfg Config) (_ *Layer, err error) {
	bin, err := postgresBinaries(cfg.PostgresBin)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCannotRun, err)
	}
	if err := sweepEmbedded(cfg.Log); err != nil {
		fmt.Fprintf(cfg.Log, "fault layer: sweep: %v\n", err)
	}
	var ports []ProxyPort
	if cfg.ProxyPorts != "" {
		if ports, err = ParseProxyPorts(cfg.ProxyPorts, "127.0.0.1", "127.0.0.1"); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrConfig, envvar.ProxyPorts, err)
		}
		for _, p := range ports {
			if err := portFree(p.Port); err != nil {
				return nil, fmt.Errorf("%w: %s: port %d is in use on 127.0.0.1 (%v); pick a free range", ErrConfig, envvar.ProxyPorts, p.Port, err)
			}
		}
	} else if ports, err = freePorts(16); err != nil {
		return nil, fmt.Errorf("%w: find free ports: %v", ErrCannotRun, err)
	}

	l := &Layer{ProxyListenHost: "127.0.0.1", Ports: ports}
	defer func() {
		if err != nil {
			l.Close(context.WithoutCancel(ctx))
		}
	}()

	fmt.Fprintf(cfg.Log, "fault layer: starting Postgres from %s\n", bin)
	pg, err := startLocalPostgres(ctx, bin, cfg.RunID)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCannotRun, err)
	}
	l.onClose(pg.stop)
	l.PostgresDSN = dsn(testPlaneUser, pg.password, "127.0.0.1", pg.port, testPlaneDB)
	l.PostgresUpstream = net.JoinHostPort("127.0.0.1", strconv.Itoa(pg.port))

	url, stop, err := startLocalToxiproxy()
	if err != nil {
		return nil, fmt.Errorf("%w: start Toxiproxy in-process: %v", ErrCannotRun, err)
	}
	l.onClose(stop)
	l.ToxiproxyURL = url
	fmt.Fprintf(cfg.Log, "fault layer: up: Toxiproxy %s (in-process), Postgres %s\n", l.ToxiproxyURL, secret.ScrubString(l.PostgresDSN))
	return l, nil
}

// startLocalToxiproxy serves the Toxiproxy API from this process on an
// ephemeral loopback port. The listener is bound first so the port is known
// before serving starts.
func startLocalToxiproxy() (string, func(context.Context) error, error) {
	srv := toxiproxyserver.NewServer(toxiproxyserver.NewMetricsContainer(nil), zerolog.Nop())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	hs := &http.Server{Handler: srv.Routes(), ReadHeaderTimeout: 5 * time.Second}
	go hs.Serve(ln)
	stop := func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		err := hs.Shutdown(ctx)
		srv.Collection.Clear()
		return err
	}
	return "http://" + ln.Addr().String(), stop, nil
}

// postgresBinaries finds a directory holding initdb and postgres (see
// images.PostgresInstallation for the order of the search).
func postgresBinaries(explicit string) (string, error) {
	in, err := images.PostgresInstallation(explicit)
	if err != nil {
		return "", err
	}
	return in.Bin, nil
}

type localPostgres struct {
	dir      string
	port     int
	password string
	cmd      *exec.Cmd
	exited   chan struct{}
}

// startLocalPostgres initializes a data directory and starts a postmaster
// on a free loopback port. Postgres refuses to run as root, so under root
// it runs as the postgres (or nobody) user. The directory carries an owner
// file so a sweep can stop and remove it if this process is killed.
func startLocalPostgres(ctx context.Context, bin, run string) (*localPostgres, error) {
	dir, err := os.MkdirTemp("", embeddedDirPrefix)
	if err != nil {
		return nil, err
	}
	pg := &localPostgres{dir: dir, password: randomPassword()}
	ok := false
	defer func() {
		if !ok {
			pg.stop(context.WithoutCancel(ctx))
		}
	}()
	if err := os.WriteFile(filepath.Join(dir, "owner"), []byte(reap.Self().String()+"\n"+run+"\n"), 0o644); err != nil {
		return nil, err
	}
	cred, err := unprivileged()
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	pwfile := filepath.Join(dir, "pwfile")
	if err := os.WriteFile(pwfile, []byte(pg.password+"\n"), 0o600); err != nil {
		return nil, err
	}
	if cred != nil {
		for _, p := range []string{dir, pwfile} {
			if err := os.Chown(p, int(cred.Uid), int(cred.Gid)); err != nil {
				return nil, err
			}
		}
	}
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", testPlaneUser, "--pwfile="+pwfile,
		"--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	os.Remove(pwfile)

	for attempt := 0; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		logf, err := os.OpenFile(filepath.Join(dir, "postgres.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port),
			"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+dir, "-c", "max_connections=200")
		cmd.Stdout, cmd.Stderr = logf, logf
		// SIGQUIT on our death is Postgres' immediate shutdown; the sweep
		// covers the cases where the kernel cannot deliver it.
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT, Setpgid: true}
		if err := cmd.Start(); err != nil {
			logf.Close()
			return nil, fmt.Errorf("start postgres: %w", err)
		}
		logf.Close()
		pg.cmd, pg.port, pg.exited = cmd, port, make(chan struct{})
		go func(c *exec.Cmd, ch chan struct{}) { c.Wait(); close(ch) }(cmd, pg.exited)
		err = pg.waitReady(ctx)
		if err == nil {
			break
		}
		if attempt < 2 && strings.Contains(pg.logTail(), "could not bind") {
			continue // lost a race for the port
		}
		return nil, fmt.Errorf("postgres did not start: %w\n%s", err, pg.logTail())
	}
	if err := pg.exec(ctx, "CREATE DATABASE "+pgx.Identifier{testPlaneDB}.Sanitize()); err != nil {
		return nil, err
	}
	ok = true
	return pg, nil
}

func (pg *localPostgres) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-pg.exited:
			return errors.New("postgres exited")
		default:
		}
		if err := pg.exec(ctx, "SELECT 1"); err == nil {
			return nil
		} else if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (pg *localPostgres) exec(ctx context.Context, sql string) error {
	db := "postgres"
	return execSQL(ctx, dsn(testPlaneUser, pg.password, "127.0.0.1", pg.port, db), sql)
}

func (pg *localPostgres) logTail() string {
	b, _ := os.ReadFile(filepath.Join(pg.dir, "postgres.log"))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return strings.Join(lines, "\n")
}

// stop asks for a fast shutdown, kills after a grace period, and removes
// the data directory.
func (pg *localPostgres) stop(context.Context) error {
	if pg.cmd != nil && pg.cmd.Process != nil {
		_ = pg.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-pg.exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-pg.cmd.Process.Pid, syscall.SIGKILL)
			<-pg.exited
		}
	}
	return os.RemoveAll(pg.dir)
}

// unprivileged returns the credential to run Postgres under: nil when this
// process is not root, else the postgres user (or nobody).
func unprivileged() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("running as root and there is no postgres or nobody user to run Postgres as")
}

// maxOwnerFile caps an embedded layer's owner file and its postmaster.pid
// as read back: a few lines.
const maxOwnerFile = 4 << 10

// sweepEmbedded stops and removes the data directories of embedded layers
// whose owner process is gone. The temporary directory is shared: any
// local user can make a directory of that name, with a FIFO, a link or a
// file of gigabytes for its owner file. Such an entry costs one line and
// is left alone: its owner file is read through files.Read (no link
// followed, no FIFO waited on, a few kilobytes at most) and must be this
// user's own.
func sweepEmbedded(w io.Writer) error {
	if w == nil {
		w = io.Discard
	}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), embeddedDirPrefix+"*"))
	var errs []error
	for _, dir := range dirs {
		owner, err := embeddedOwner(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue // not a layer's, or its owner file is still being written
		}
		if err != nil {
			fmt.Fprintf(w, "left %s alone: %v\n", terminal.Escape(dir), terminal.Escape(err.Error()))
			continue
		}
		if l, why := owner.Liveness(); l != reap.Gone {
			if l == reap.Unknown {
				fmt.Fprintf(w, "left embedded layer %s alone (owner %s): %s\n", terminal.Escape(dir), owner, why)
			}
			continue
		}
		if pid := postmasterPID(filepath.Join(dir, "data")); pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGQUIT)
			for i := 0; i < 50 && syscall.Kill(pid, 0) == nil; i++ {
				time.Sleep(100 * time.Millisecond)
			}
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(w, "swept embedded layer %s (owner %s)\n", terminal.Escape(dir), owner)
	}
	return errors.Join(errs...)
}

// embeddedOwner reads the owner of the embedded layer in dir: a real
// directory (not a link) whose owner file is a regular file this user
// wrote, of a few lines. An error wrapping fs.ErrNotExist means there is no
// owner file (yet); any other says why the entry is not one to touch.
func embeddedOwner(dir string) (reap.Owner, error) {
	if fi, err := os.Lstat(dir); err != nil {
		return reap.Owner{}, err
	} else if !fi.IsDir() {
		return reap.Owner{}, fmt.Errorf("not a directory (%s)", fi.Mode().Type())
	}
	b, fi, err := files.Read(filepath.Join(dir, "owner"), maxOwnerFile)
	if err != nil {
		return reap.Owner{}, err
	}
	if uid, ok := files.OwnedBy(fi); ok && uid != os.Geteuid() {
		return reap.Owner{}, fmt.Errorf("its owner file belongs to uid %d, not this user (uid %d)", uid, os.Geteuid())
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return reap.ParseOwner(strings.TrimSpace(line))
}

// postmasterPID reads the postmaster's PID from its lock file and checks the
// process is still that postmaster (same data directory on its command
// line), so a reused PID is never signalled.
func postmasterPID(data string) int {
	b, _, err := files.Read(filepath.Join(data, "postmaster.pid"), maxOwnerFile)
	if err != nil {
		return 0
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 {
		return 0
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(cmdline), data) {
		return 0
	}
	return pid
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// freePorts finds n free loopback ports below the kernel's ephemeral range
// (32768 and up on Linux), so outgoing connections do not take them later.
// They are free when found; a later collision shows up as a proxy that
// cannot listen, which the leg reports.
func freePorts(n int) ([]ProxyPort, error) {
	const lo, hi = 10000, 30000
	start := lo + mathrand.IntN(hi-lo)
	var out []ProxyPort
	for i := 0; i < hi-lo && len(out) < n; i++ {
		p := lo + (start-lo+i)%(hi-lo)
		if _, reserved := reservedPorts[p]; reserved || portFree(p) != nil {
			continue
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
		out = append(out, ProxyPort{Port: p, Listen: addr, Dial: addr})
	}
	if len(out) < n {
		return nil, fmt.Errorf("only %d free ports in %d-%d", len(out), lo, hi)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Port < out[j].Port })
	return out, nil
}

func portFree(p int) error {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	if err != nil {
		return err
	}
	return ln.Close()
}

func randomPassword() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
