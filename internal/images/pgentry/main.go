// Command pgentry is the entrypoint of the Postgres image contested builds
// from the host's own Postgres binaries. The image is FROM scratch, with no
// shell, so this small static program does what the upstream image's shell
// script does:
//
//	pgentry init [db…]    initialise the seed ($PGSEED, else $PGDATA) and
//	                      create the databases named (at image build time,
//	                      as root)
//	pgentry [postgres] …  start postgres with the remaining arguments; once
//	                      it accepts connections, set the superuser's
//	                      password, role and database from POSTGRES_USER,
//	                      POSTGRES_PASSWORD and POSTGRES_DB over the local
//	                      socket, then print ReadyLine
//
// The data directory is initialised when the image is built, and the
// databases the fault layer asks for are created then too, so a start
// costs a copy of that seed into $PGDATA, one server start and a few
// statements over the local socket: no initdb, no single-user pass. The
// seed is copied rather than used in place because the fault layer mounts a
// tmpfs over $PGDATA: the container's own file system is an overlay, on
// some engines a FUSE one, and every write Postgres makes there (WAL, the
// files CREATE DATABASE copies) would cross it. Until the password is set, the superuser
// carries a random one no one knows, so no remote client gets in before
// the container says it is ready; no secret is baked into the image.
//
// pgentry stays the container's first process: it forwards signals to
// postgres and exits with its status. Readiness is a notification, not a
// probe: pgentry reads the server's log as it is written and configures it
// on the line that says it accepts connections. It uses only the standard
// library and is built with CGO_ENABLED=0.
package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// uid and gid of the postgres user in the image's /etc/passwd.
const (
	uid = 999
	gid = 999
)

// ReadyLine is what pgentry prints on stderr once the server accepts
// connections with the configured role, password and database; the fault
// layer waits for it on the container's log stream.
const ReadyLine = "contested-postgres: ready"

// serverReady is the server's own log line for accepting connections (the
// image has no locale: messages are in English).
const serverReady = "database system is ready to accept connections"

// socketDir is where the server's local socket lives in the image.
const socketDir = "/var/run/postgresql"

func main() {
	code, err := run(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "contested-postgres: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

func run(args []string) (int, error) {
	bin := os.Getenv("PGBIN")
	data := os.Getenv("PGDATA")
	if bin == "" || data == "" {
		return 1, errors.New("PGBIN and PGDATA must be set in the image")
	}
	seed := os.Getenv("PGSEED")
	if len(args) > 0 && args[0] == "init" {
		if seed != "" {
			data = seed
		}
		if err := initdb(bin, data); err != nil {
			return 1, err
		}
		return 0, createDatabases(bin, data, args[1:])
	}
	if len(args) > 0 && args[0] == "postgres" {
		args = args[1:]
	}
	want, err := wantedFromEnv()
	if err != nil {
		return 1, err
	}
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); err != nil {
		// An empty data directory (the image's own, or a tmpfs or volume
		// over it): the seed's copy, or a new cluster when there is none.
		if err := prepare(bin, data, seed); err != nil {
			return 1, err
		}
	}
	return serve(bin, data, args, want)
}

// wanted is the role, password and database the container was asked for.
type wanted struct{ user, password, db string }

func wantedFromEnv() (wanted, error) {
	w := wanted{user: envOr("POSTGRES_USER", "postgres"), password: os.Getenv("POSTGRES_PASSWORD")}
	w.db = envOr("POSTGRES_DB", w.user)
	if w.password == "" {
		return w, errors.New("POSTGRES_PASSWORD is not set; give the container a password")
	}
	return w, nil
}

// serve runs postgres as a child, relays its log, configures it when it
// first says it accepts connections, and returns its exit status.
func serve(bin, data string, args []string, want wanted) (int, error) {
	argv := append([]string{"-D", data, "-c", "listen_addresses=*"}, args...)
	fmt.Fprintf(os.Stderr, "contested-postgres: starting postgres %s\n", strings.Join(argv, " "))
	cmd := exec.Command(filepath.Join(bin, "postgres"), argv...)
	cmd.Stdout = os.Stdout
	logs, err := cmd.StderrPipe()
	if err != nil {
		return 1, err
	}
	asPostgres(cmd)
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2)
	if err := cmd.Start(); err != nil {
		return 1, fmt.Errorf("start postgres: %w", err)
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	var once sync.Once
	var failed atomic.Bool
	relayed := make(chan struct{})
	go func() {
		defer close(relayed)
		sc := bufio.NewScanner(logs)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(os.Stderr, line)
			if strings.Contains(line, serverReady) {
				once.Do(func() { go configureAndAnnounce(cmd.Process, want, &failed) })
			}
		}
		_, _ = io.Copy(os.Stderr, logs)
	}()
	<-relayed
	err = cmd.Wait()
	if failed.Load() {
		return 1, errors.New("the server was stopped because its configuration failed")
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if st, ok := exit.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			return 128 + int(st.Signal()), nil
		}
		return exit.ExitCode(), nil
	}
	return 0, err
}

// configureAndAnnounce sets what the container was asked for and prints
// ReadyLine; when it cannot, it says why and stops the server, so the
// container exits instead of running with a password no one knows.
func configureAndAnnounce(p *os.Process, want wanted, failed *atomic.Bool) {
	if err := configure(want); err != nil {
		failed.Store(true)
		fmt.Fprintf(os.Stderr, "contested-postgres: configuration failed: %v; stopping\n", err)
		_ = p.Signal(syscall.SIGINT)
		return
	}
	fmt.Fprintf(os.Stderr, "%s: role %s, database %s\n", ReadyLine, want.user, want.db)
}

// configure sets the superuser and database over the local socket, where
// the postgres superuser is trusted. It runs on every start and is
// idempotent: the password is set again, a role or database that exists is
// left alone.
func configure(want wanted) error {
	c, err := dialLocal(5 * time.Second)
	if err != nil {
		return err
	}
	defer c.close()
	rows, err := c.query(fmt.Sprintf("SELECT (SELECT count(*) FROM pg_roles WHERE rolname = %s)::text, (SELECT count(*) FROM pg_database WHERE datname = %s)::text",
		literal(want.user), literal(want.db)))
	if err != nil {
		return err
	}
	if len(rows) != 1 || len(rows[0]) != 2 {
		return fmt.Errorf("unexpected answer to the catalog query: %q", rows)
	}
	if rows[0][0] == "0" {
		if _, err := c.query(fmt.Sprintf("CREATE ROLE %s SUPERUSER LOGIN", ident(want.user))); err != nil {
			return err
		}
	}
	if _, err := c.query(fmt.Sprintf("ALTER ROLE %s PASSWORD %s", ident(want.user), literal(want.password))); err != nil {
		return errors.New("ALTER ROLE … PASSWORD failed") // the statement holds the password
	}
	if rows[0][1] == "0" {
		if _, err := c.query(fmt.Sprintf("CREATE DATABASE %s OWNER %s", ident(want.db), ident(want.user))); err != nil {
			return err
		}
	}
	return nil
}

// createDatabases creates databases in single-user mode, at image build
// time, so that a container started with one of them as POSTGRES_DB does
// not pay for CREATE DATABASE.
func createDatabases(bin, data string, dbs []string) error {
	if len(dbs) == 0 {
		return nil
	}
	var sql []string
	for _, db := range dbs {
		sql = append(sql, fmt.Sprintf("CREATE DATABASE %s", ident(db)))
	}
	cmd := exec.Command(filepath.Join(bin, "postgres"), "--single", "-D", data, "-c", "fsync=off", "-c", "log_min_messages=warning", "postgres")
	cmd.Stdin = strings.NewReader(strings.Join(sql, ";\n") + ";\n")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	asPostgres(cmd)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("single-user CREATE DATABASE: %w\n%s", err, out.String())
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.Contains(line, "ERROR:") {
			return fmt.Errorf("single-user CREATE DATABASE: %s", strings.TrimSpace(line))
		}
	}
	return nil
}

// initdb creates the cluster as the postgres user, with a random password
// that is never written down (configure sets the real one at start) and
// password authentication from any host, since other containers on the
// test plane's network connect to it.
func initdb(bin, data string) error {
	for _, d := range []string{data, socketDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
		if os.Geteuid() == 0 {
			if err := os.Chown(d, uid, gid); err != nil {
				return err
			}
		}
	}
	pw := filepath.Join(os.TempDir(), "contested-initdb-pw")
	if err := os.WriteFile(pw, []byte(randomHex()+"\n"), 0o600); err != nil {
		return err
	}
	defer os.Remove(pw)
	if os.Geteuid() == 0 {
		if err := os.Chown(pw, uid, gid); err != nil {
			return err
		}
	}
	cmd := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--pwfile="+pw,
		"--auth-local=trust", "--auth-host=scram-sha-256", "--no-locale", "--encoding=UTF8", "--no-instructions")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	asPostgres(cmd)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(data, "pg_hba.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString("host all all all scram-sha-256\n")
	return err
}

// prepare fills the empty data directory: a copy of seed when the image
// holds one (a cluster initialised at build), else a new cluster.
func prepare(bin, data, seed string) error {
	if seed == "" {
		return initdb(bin, data)
	}
	if _, err := os.Stat(filepath.Join(seed, "PG_VERSION")); err != nil {
		return initdb(bin, data)
	}
	start := time.Now()
	if err := copyTree(seed, data); err != nil {
		return fmt.Errorf("copy the seed %s into %s: %w", seed, data, err)
	}
	fmt.Fprintf(os.Stderr, "%s: %s\n", SeededLine, time.Since(start).Round(time.Millisecond))
	return nil
}

// SeededLine is what pgentry prints once it filled an empty data directory
// with the image's seed.
const SeededLine = "contested-postgres: data directory copied from the image's seed"

// copyTree copies the regular files and directories under src into dst,
// with their modes; dst may exist (a mount point). Postgres refuses a data
// directory others can read, so dst itself gets src's mode too.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.MkdirAll(target, info.Mode().Perm()); err != nil {
				return err
			}
			return os.Chmod(target, info.Mode().Perm())
		case info.Mode().IsRegular():
			return copyFile(p, target, info.Mode().Perm())
		default:
			return fmt.Errorf("%s: not a regular file or directory", p)
		}
	})
}

func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// asPostgres runs cmd as the postgres user when this process is root
// (initdb and postgres refuse to run as root).
func asPostgres(cmd *exec.Cmd) {
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	}
}

// localConn is a minimal client of the Postgres wire protocol (version 3,
// simple queries, trust authentication): all configure needs, with the
// standard library only.
type localConn struct {
	conn net.Conn
	r    *bufio.Reader
}

func dialLocal(timeout time.Duration) (*localConn, error) {
	conn, err := net.DialTimeout("unix", filepath.Join(socketDir, ".s.PGSQL.5432"), timeout)
	if err != nil {
		return nil, fmt.Errorf("connect to the local socket: %w", err)
	}
	_ = conn.SetDeadline(time.Now().Add(time.Minute))
	c := &localConn{conn: conn, r: bufio.NewReader(conn)}
	var body []byte
	body = binary.BigEndian.AppendUint32(body, 196608) // protocol 3.0
	for _, kv := range []string{"user", "postgres", "database", "postgres", ""} {
		body = append(append(body, kv...), 0)
	}
	if _, err := conn.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(body)+4)), body...)); err != nil {
		conn.Close()
		return nil, err
	}
	for {
		typ, msg, err := c.read()
		if err != nil {
			conn.Close()
			return nil, fmt.Errorf("start-up: %w", err)
		}
		switch typ {
		case 'R':
			if len(msg) < 4 || binary.BigEndian.Uint32(msg) != 0 {
				conn.Close()
				return nil, errors.New("start-up: the local socket asks for a password; it must trust the postgres user")
			}
		case 'E':
			conn.Close()
			return nil, fmt.Errorf("start-up: %s", errorText(msg))
		case 'Z':
			return c, nil
		}
	}
}

// query runs one simple query and returns its rows as text.
func (c *localConn) query(sql string) ([][]string, error) {
	body := append([]byte(sql), 0)
	msg := append([]byte{'Q'}, binary.BigEndian.AppendUint32(nil, uint32(len(body)+4))...)
	if _, err := c.conn.Write(append(msg, body...)); err != nil {
		return nil, err
	}
	var rows [][]string
	var qerr error
	for {
		typ, msg, err := c.read()
		if err != nil {
			return nil, err
		}
		switch typ {
		case 'D':
			row, err := dataRow(msg)
			if err != nil {
				return nil, err
			}
			rows = append(rows, row)
		case 'E':
			qerr = errors.New(errorText(msg))
		case 'Z':
			return rows, qerr
		}
	}
}

func (c *localConn) close() {
	_, _ = c.conn.Write([]byte{'X', 0, 0, 0, 4})
	c.conn.Close()
}

func (c *localConn) read() (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(c.r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n < 4 || n > 1<<24 {
		return 0, nil, fmt.Errorf("message %q of length %d", hdr[0], n)
	}
	msg := make([]byte, n-4)
	if _, err := io.ReadFull(c.r, msg); err != nil {
		return 0, nil, err
	}
	return hdr[0], msg, nil
}

// dataRow decodes a DataRow message; a NULL is "".
func dataRow(msg []byte) ([]string, error) {
	if len(msg) < 2 {
		return nil, errors.New("short DataRow")
	}
	n := int(binary.BigEndian.Uint16(msg))
	msg = msg[2:]
	row := make([]string, 0, n)
	for range n {
		if len(msg) < 4 {
			return nil, errors.New("short DataRow")
		}
		l := int32(binary.BigEndian.Uint32(msg))
		msg = msg[4:]
		if l < 0 {
			row = append(row, "")
			continue
		}
		if int(l) > len(msg) {
			return nil, errors.New("short DataRow")
		}
		row = append(row, string(msg[:l]))
		msg = msg[l:]
	}
	return row, nil
}

// errorText renders an ErrorResponse: severity, SQLSTATE and message.
func errorText(msg []byte) string {
	var sev, code, text string
	for len(msg) > 1 {
		f := msg[0]
		end := bytes.IndexByte(msg[1:], 0)
		if end < 0 {
			break
		}
		v := string(msg[1 : 1+end])
		msg = msg[2+end:]
		switch f {
		case 'S':
			sev = v
		case 'C':
			code = v
		case 'M':
			text = v
		}
	}
	return fmt.Sprintf("%s %s: %s", sev, code, text)
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func ident(s string) string   { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
func literal(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func randomHex() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return strconv.Itoa(os.Getpid())
	}
	return hex.EncodeToString(b)
}
