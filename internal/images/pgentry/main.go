// Command pgentry is the entrypoint of the Postgres image contested builds
// from the host's own Postgres binaries. The image is FROM scratch, with no
// shell, so this small static program does what the upstream image's shell
// script does:
//
//	pgentry init          initialise $PGDATA (at image build time, as root)
//	pgentry [postgres] …  set the superuser's password and database from
//	                      POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_DB,
//	                      then exec postgres with the remaining arguments
//
// The data directory is initialised when the image is built, so a
// container starts in about the time Postgres takes to open its files; the
// password is set at start, in single-user mode, so no secret is baked into
// the image. It uses only the standard library and is built with
// CGO_ENABLED=0.
package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// uid and gid of the postgres user in the image's /etc/passwd.
const (
	uid = 999
	gid = 999
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "contested-postgres: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	bin := os.Getenv("PGBIN")
	data := os.Getenv("PGDATA")
	if bin == "" || data == "" {
		return errors.New("PGBIN and PGDATA must be set in the image")
	}
	if len(args) > 0 && args[0] == "init" {
		return initdb(bin, data)
	}
	if len(args) > 0 && args[0] == "postgres" {
		args = args[1:]
	}
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); err != nil {
		// An empty volume over the data directory: initialise it now.
		if err := initdb(bin, data); err != nil {
			return err
		}
	}
	if err := configure(bin, data); err != nil {
		return err
	}
	argv := append([]string{"postgres", "-D", data, "-c", "listen_addresses=*"}, args...)
	fmt.Fprintf(os.Stderr, "contested-postgres: starting %s\n", strings.Join(argv, " "))
	return syscall.Exec(filepath.Join(bin, "postgres"), argv, os.Environ())
}

// initdb creates the cluster as the postgres user, with a throwaway
// password (configure sets the real one at start) and password
// authentication from any host, since other containers on the test
// plane's network connect to it.
func initdb(bin, data string) error {
	for _, d := range []string{data, "/var/run/postgresql"} {
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

// configure sets the superuser and database the container was asked for,
// in single-user mode, before the server accepts connections. It runs on
// every start and is idempotent: the password is set again, a role or
// database that exists is left alone.
func configure(bin, data string) error {
	user := envOr("POSTGRES_USER", "postgres")
	password := os.Getenv("POSTGRES_PASSWORD")
	db := envOr("POSTGRES_DB", user)
	if password == "" {
		return errors.New("POSTGRES_PASSWORD is not set; give the container a password")
	}
	var sql []string
	if user != "postgres" {
		sql = append(sql, fmt.Sprintf("CREATE ROLE %s SUPERUSER LOGIN", ident(user)))
	}
	sql = append(sql, fmt.Sprintf("ALTER ROLE %s PASSWORD %s", ident(user), literal(password)))
	if db != "postgres" {
		sql = append(sql, fmt.Sprintf("CREATE DATABASE %s OWNER %s", ident(db), ident(user)))
	}
	cmd := exec.Command(filepath.Join(bin, "postgres"), "--single", "-D", data, "-c", "fsync=off", "-c", "log_min_messages=warning", "postgres")
	cmd.Stdin = strings.NewReader(strings.Join(sql, ";\n") + ";\n")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	asPostgres(cmd)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("single-user configuration: %w\n%s", err, out.String())
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.Contains(line, "ERROR:") && !strings.Contains(line, "already exists") {
			return fmt.Errorf("single-user configuration: %s", strings.TrimSpace(line))
		}
	}
	return nil
}

// asPostgres runs cmd as the postgres user when this process is root
// (initdb and postgres refuse to run as root).
func asPostgres(cmd *exec.Cmd) {
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	}
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
