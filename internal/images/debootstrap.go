package images

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/client"
)

// AptSource is one Debian archive from the host's apt configuration.
type AptSource struct {
	URI   string // for example http://deb.debian.org/debian
	Suite string // for example bookworm
	File  string // where it was read
}

// aptSourceFiles are read in this order; the first usable entry wins.
var aptSourceFiles = []string{"/etc/apt/sources.list.d/*.sources", "/etc/apt/sources.list", "/etc/apt/sources.list.d/*.list"}

// ErrNoAptSource reports that no usable Debian archive is configured.
var ErrNoAptSource = errors.New("no usable apt source")

// HostAptSource reads the host's apt sources (deb822 .sources files and
// one-line .list files) and returns the first binary archive of a release
// suite with the main component: the mirror the Postgres image is built
// from. It is read at run time so the image follows whatever mirror the
// machine is configured for; none is built in.
func HostAptSource() (AptSource, error) {
	for _, pattern := range aptSourceFiles {
		files, _ := filepath.Glob(pattern)
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			var srcs []AptSource
			if strings.HasSuffix(f, ".sources") {
				srcs = ParseDeb822(string(b))
			} else {
				srcs = ParseOneLine(string(b))
			}
			if len(srcs) > 0 {
				srcs[0].File = f
				return srcs[0], nil
			}
		}
	}
	return AptSource{}, fmt.Errorf("%w in %s: configure a Debian mirror for apt, or set CONTESTED_PG_IMAGE to an image already loaded in the engine", ErrNoAptSource, strings.Join(aptSourceFiles, ", "))
}

// releaseSuite reports whether a suite is a release (bookworm, trixie,
// stable), not an overlay such as bookworm-updates or bookworm-security.
func releaseSuite(s string) bool { return s != "" && !strings.ContainsAny(s, "-/") }

// ParseDeb822 returns the usable archives in a deb822 sources file.
func ParseDeb822(text string) []AptSource {
	var out []AptSource
	for _, stanza := range strings.Split(text, "\n\n") {
		fields := map[string]string{}
		var key string
		for _, line := range strings.Split(stanza, "\n") {
			if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
				continue
			}
			if (line[0] == ' ' || line[0] == '\t') && key != "" {
				fields[key] += " " + strings.TrimSpace(line)
				continue
			}
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			key = strings.ToLower(strings.TrimSpace(k))
			fields[key] = strings.TrimSpace(v)
		}
		if strings.EqualFold(fields["enabled"], "no") || !hasWord(fields["types"], "deb") || !hasWord(fields["components"], "main") {
			continue
		}
		uris := strings.Fields(fields["uris"])
		for _, suite := range strings.Fields(fields["suites"]) {
			if releaseSuite(suite) && len(uris) > 0 {
				out = append(out, AptSource{URI: uris[0], Suite: suite})
			}
		}
	}
	return out
}

// ParseOneLine returns the usable archives in a one-line sources.list.
func ParseOneLine(text string) []AptSource {
	var out []AptSource
	for _, line := range strings.Split(text, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) < 4 || f[0] != "deb" {
			continue
		}
		f = f[1:]
		if strings.HasPrefix(f[0], "[") { // options: [arch=amd64 signed-by=...]
			for len(f) > 0 && !strings.HasSuffix(f[0], "]") {
				f = f[1:]
			}
			if len(f) > 0 {
				f = f[1:]
			}
		}
		if len(f) >= 3 && releaseSuite(f[1]) && hasWord(strings.Join(f[2:], " "), "main") {
			out = append(out, AptSource{URI: f[0], Suite: f[1]})
		}
	}
	return out
}

func hasWord(s, w string) bool {
	for _, f := range strings.Fields(s) {
		if f == w {
			return true
		}
	}
	return false
}

// postgresEntrypoint initializes a data directory on first start (password
// authentication from any host, since other containers on the test plane's
// network connect to it) and then runs the server as the postgres user, as
// PID 1. It honours the same POSTGRES_USER, POSTGRES_PASSWORD and
// POSTGRES_DB variables as the upstream image, and a leading "postgres"
// argument as upstream commands write it.
const postgresEntrypoint = `#!/bin/sh
set -eu
PGDATA="${PGDATA:-/var/lib/postgresql/data}"
POSTGRES_USER="${POSTGRES_USER:-postgres}"
POSTGRES_PASSWORD="${POSTGRES_PASSWORD:-postgres}"
POSTGRES_DB="${POSTGRES_DB:-$POSTGRES_USER}"
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
as_pg() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }
if [ "${1:-}" = postgres ]; then shift; fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
	mkdir -p "$PGDATA" /var/run/postgresql
	chown postgres:postgres "$PGDATA" /var/run/postgresql
	chmod 700 "$PGDATA"
	pw=$(mktemp)
	printf '%s\n' "$POSTGRES_PASSWORD" > "$pw"
	chown postgres "$pw"
	as_pg "$bin/initdb" -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pw" --auth-local=trust --auth-host=scram-sha-256 >/dev/null
	rm -f "$pw"
	echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
	if [ "$POSTGRES_DB" != postgres ]; then
		echo "CREATE DATABASE \"$POSTGRES_DB\"" | as_pg "$bin/postgres" --single -D "$PGDATA" postgres >/dev/null
	fi
fi
echo "contested-postgres: starting $("$bin/postgres" --version)"
exec setpriv --reuid=postgres --regid=postgres --init-groups "$bin/postgres" -D "$PGDATA" -c listen_addresses='*' "$@"
`

// buildDebootstrap makes a Debian root filesystem with the postgresql package
// from the host's apt mirror (debootstrap, minbase variant), adds the
// entrypoint and imports it as an image.
func buildDebootstrap(ctx context.Context, d Docker, tag string, log io.Writer) error {
	src, err := HostAptSource()
	if err != nil {
		return err
	}
	debootstrap, err := exec.LookPath("debootstrap")
	if err != nil {
		return errors.New("debootstrap is not installed: install it (apt-get install debootstrap), or set CONTESTED_PG_IMAGE to an image already loaded in the engine")
	}
	if os.Geteuid() != 0 {
		return errors.New("building the Postgres image needs root (debootstrap): run `go tool mage images` once as root, or use CONTESTED_LAYER=embedded")
	}
	dir, err := os.MkdirTemp("", "contested-postgres-rootfs-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	rootfs := filepath.Join(dir, "rootfs")

	fmt.Fprintf(log, "images: debootstrap %s from %s (read from %s); this takes a minute or two\n", src.Suite, src.URI, src.File)
	cmd := exec.CommandContext(ctx, debootstrap, "--variant=minbase", "--include=postgresql", src.Suite, rootfs, src.URI)
	if err := runWithProgress(cmd, log, "debootstrap"); err != nil {
		return err
	}

	// A cluster created by the package's postinst, the package lists and
	// the downloaded archives are not needed in the image.
	for _, g := range []string{"var/lib/postgresql/*/main", "etc/postgresql/*/main", "var/cache/apt/archives/*.deb", "var/lib/apt/lists/*"} {
		matches, _ := filepath.Glob(filepath.Join(rootfs, g))
		for _, m := range matches {
			if err := os.RemoveAll(m); err != nil {
				return err
			}
		}
	}
	ep := filepath.Join(rootfs, "usr/local/bin/contested-postgres")
	if err := os.WriteFile(ep, []byte(postgresEntrypoint), 0o755); err != nil {
		return err
	}

	fmt.Fprintf(log, "images: importing the root filesystem as %s\n", tag)
	tarCmd := exec.CommandContext(ctx, "tar", "--numeric-owner", "-C", rootfs,
		"--exclude=./dev/*", "--exclude=./proc/*", "--exclude=./sys/*", "-cf", "-", ".")
	stdout, err := tarCmd.StdoutPipe()
	if err != nil {
		return err
	}
	var tarErr strings.Builder
	tarCmd.Stderr = &tarErr
	if err := tarCmd.Start(); err != nil {
		return fmt.Errorf("tar root filesystem: %w", err)
	}
	res, err := d.ImageImport(ctx, client.ImageImportSource{Source: stdout, SourceName: "-"}, tag, client.ImageImportOptions{
		Message: "contested test-plane Postgres from " + src.URI + " " + src.Suite,
		Changes: []string{
			"ENV PGDATA=/var/lib/postgresql/data",
			"ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			"EXPOSE 5432",
			`ENTRYPOINT ["/usr/local/bin/contested-postgres"]`,
		},
	})
	if err != nil {
		_ = tarCmd.Process.Kill()
		_ = tarCmd.Wait()
		return fmt.Errorf("docker import: %w", err)
	}
	derr := drainJSON(res, log, "images:   ")
	res.Close()
	if err := tarCmd.Wait(); err != nil {
		return fmt.Errorf("tar root filesystem: %w: %s", err, tarErr.String())
	}
	return derr
}

// runWithProgress runs a slow command, keeping its full output and printing
// one progress line every few seconds (the latest line it wrote), so a
// minute-long build shows it is alive without flooding the terminal. On
// failure the last lines of output are part of the error.
func runWithProgress(cmd *exec.Cmd, log io.Writer, what string) error {
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	cmd.Stderr = pw
	var (
		mu    sync.Mutex
		last  string
		tail  []string
		lines int
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			mu.Lock()
			last = sc.Text()
			lines++
			tail = append(tail, last)
			if len(tail) > 30 {
				tail = tail[1:]
			}
			mu.Unlock()
		}
	}()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		pw.Close()
		return fmt.Errorf("start %s: %w", what, err)
	}
	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait(); pw.Close() }()
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		select {
		case err := <-waitErr:
			<-done
			if err != nil {
				mu.Lock()
				defer mu.Unlock()
				return fmt.Errorf("%s failed after %s: %w; last output:\n%s", what, time.Since(start).Round(time.Second), err, strings.Join(tail, "\n"))
			}
			return nil
		case <-tick.C:
			mu.Lock()
			fmt.Fprintf(log, "images:   %s %3ds, %d lines: %s\n", what, int(time.Since(start).Seconds()), lines, last)
			mu.Unlock()
		}
	}
}
