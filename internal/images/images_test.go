package images

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/moby/moby/client"

	"github.com/contested/contested/internal/dockerenv"
)

func TestParseAptSources(t *testing.T) {
	tests := []struct {
		name string
		text string
		deb  bool
		want []AptSource
	}{
		{
			name: "deb822 with overlays and a snapshot comment",
			deb:  true,
			text: "Types: deb\n# http://snapshot.example/archive\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\nTypes: deb\nURIs: http://deb.debian.org/debian-security\nSuites: bookworm-security\nComponents: main\n",
			want: []AptSource{{URI: "http://deb.debian.org/debian", Suite: "bookworm"}},
		},
		{
			name: "deb822 disabled and source-only stanzas are skipped",
			deb:  true,
			text: "Types: deb-src\nURIs: http://a/debian\nSuites: trixie\nComponents: main\n\nEnabled: no\nTypes: deb\nURIs: http://b/debian\nSuites: trixie\nComponents: main\n\nTypes: deb\nURIs: http://c/debian\nSuites: trixie\nComponents: contrib main\n",
			want: []AptSource{{URI: "http://c/debian", Suite: "trixie"}},
		},
		{
			name: "one-line with options and comments",
			text: "# comment\ndeb [arch=amd64 signed-by=/k.gpg] http://mirror.local/debian trixie main contrib\ndeb http://mirror.local/debian trixie-updates main\n",
			want: []AptSource{{URI: "http://mirror.local/debian", Suite: "trixie"}},
		},
		{
			name: "one-line without main",
			text: "deb http://mirror.local/debian trixie contrib\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []AptSource
			if tt.deb {
				got = ParseDeb822(tt.text)
			} else {
				got = ParseOneLine(tt.text)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("sources (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEnsureBuildsWhatCannotBePulled runs the real path on this engine: the
// upstream references cannot be pulled (no registry), so Ensure must return
// the locally built equivalents, building them when they are not cached.
func TestEnsureBuildsWhatCannotBePulled(t *testing.T) {
	cli := dockerenv.Require(t)
	ctx := context.Background()
	for _, im := range []Image{Toxiproxy(), Postgres()} {
		t.Run(im.Name, func(t *testing.T) {
			var log strings.Builder
			ref, err := im.Ensure(ctx, cli, "", &log)
			if err != nil {
				t.Fatalf("Ensure: %v\n%s", err, log.String())
			}
			if ref != im.Upstream && ref != im.Local {
				t.Fatalf("Ensure returned %q, want %q or %q", ref, im.Upstream, im.Local)
			}
			if !Present(ctx, cli, ref) {
				t.Fatalf("%s is not in the engine after Ensure", ref)
			}
			t.Log(log.String())
		})
	}
}

// TestEnsureSaysASubstitutionOnce: a run ensures its images before it
// brings a layer up and again as it does; the substitution of the locally
// built image for the upstream one is said once, not each time.
func TestEnsureSaysASubstitutionOnce(t *testing.T) {
	cli := dockerenv.Require(t)
	ctx := context.Background()
	im := Toxiproxy()
	if _, err := im.Ensure(ctx, cli, "", io.Discard); err != nil {
		t.Fatal(err)
	}
	if Present(ctx, cli, im.Upstream) {
		t.Skipf("%s is in the engine: nothing is substituted for it", im.Upstream)
	}
	substituted.Clear()
	var log strings.Builder
	for range 2 {
		if _, err := im.Ensure(ctx, cli, "", &log); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(log.String(), "is not present; using the locally built"); n != 1 {
		t.Errorf("two Ensures said the substitution %d times, want once:\n%s", n, log.String())
	}
}

func TestEnsureRefusesAnUnknownImageItCannotPull(t *testing.T) {
	cli := dockerenv.Require(t)
	_, err := Toxiproxy().Ensure(context.Background(), cli, "registry.invalid/nothing:here", os.Stderr)
	if err == nil || !strings.Contains(err.Error(), "registry.invalid/nothing:here") {
		t.Fatalf("Ensure of an unpullable custom image: err = %v, want an error naming it", err)
	}
}

// BenchmarkColdBuild builds both images from nothing under throwaway tags
// (the cached ones are left alone) and reports the time against a warm
// Ensure, which finds them cached, measured in the same run.
func BenchmarkColdBuild(b *testing.B) {
	cli := dockerenv.Require(b)
	ctx := context.Background()
	for _, im := range []Image{Toxiproxy(), Postgres()} {
		b.Run(im.Name, func(b *testing.B) {
			var cold, warm time.Duration
			for i := range b.N {
				tag := fmt.Sprintf("contested.local/%s:bench-%d-%d", im.Name, os.Getpid(), i)
				start := time.Now()
				if err := im.build(ctx, cli, tag, io.Discard); err != nil {
					b.Fatal(err)
				}
				cold += time.Since(start)
				cli.ImageRemove(ctx, tag, client.ImageRemoveOptions{Force: true, PruneChildren: true})
				start = time.Now()
				if _, err := im.Ensure(ctx, cli, "", io.Discard); err != nil {
					b.Fatal(err)
				}
				warm += time.Since(start)
			}
			b.ReportMetric(cold.Seconds()/float64(b.N), "cold-s/op")
			b.ReportMetric(warm.Seconds()*1000/float64(b.N), "warm-ms/op")
			b.ReportMetric(float64(cold)/float64(warm), "cold/warm")
		})
	}
}

func TestSharedLibrariesOfTheHostPostgres(t *testing.T) {
	in, err := PostgresInstallation("")
	if err != nil {
		// The words of package capability (which imports this one).
		dockerenv.SkipOrFail(t, fmt.Sprintf("missing capability postgres: %v; provide it: apt-get install postgresql", err))
	}
	bin := filepath.Join(in.Bin, "postgres")
	libs, err := sharedLibraries([]file{{path: bin, src: bin}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range libs {
		if !isFile(l.src) {
			t.Errorf("%s: source %s is not a file", l.path, l.src)
		}
		names = append(names, filepath.Base(l.path))
	}
	// The loader and libc are always needed; a lookup that stopped at the
	// first level would miss libc's own dependency on the loader.
	for _, want := range []string{"libc.so.6", "ld-linux-x86-64.so.2"} {
		if runtime.GOARCH == "amd64" && !slices.Contains(names, want) {
			t.Errorf("libraries of %s lack %s: %v", bin, want, names)
		}
	}
	if _, err := sharedLibraries([]file{{path: "/usr/lib/x.so", src: writeELFNeeding(t, "libcontested-missing.so.9")}}); err == nil || !strings.Contains(err.Error(), "libcontested-missing.so.9") {
		t.Errorf("a library that is nowhere: err = %v, want one naming it", err)
	}
}

// writeELFNeeding returns a shared object that needs lib, which exists
// nowhere: it links an empty C file against a stub of that name and then
// removes the stub.
func writeELFNeeding(t *testing.T, lib string) string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("cc is not installed")
	}
	dir := t.TempDir()
	stub := filepath.Join(dir, lib)
	src := filepath.Join(dir, "x.c")
	if err := os.WriteFile(src, []byte("int x(void){return 0;}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cc, "-shared", "-o", stub, "-Wl,-soname,"+lib, src).CombinedOutput(); err != nil {
		t.Skipf("cc: %v\n%s", err, out)
	}
	out := filepath.Join(dir, "needs.so")
	if b, err := exec.Command(cc, "-shared", "-o", out, src, "-L"+dir, "-Wl,--no-as-needed", "-l:"+lib).CombinedOutput(); err != nil {
		t.Skipf("cc: %v\n%s", err, b)
	}
	os.Remove(stub)
	return out
}

func TestRootfsOwnershipAndModes(t *testing.T) {
	var buf bytes.Buffer
	err := writeRootfs(&buf, []file{
		{path: "/var/lib/postgresql", mode: fs.ModeDir | 0o755, uid: imageUID},
		{path: "/tmp", mode: fs.ModeDir | fs.ModeSticky | 0o777},
		{path: "/etc/passwd", data: []byte("postgres:x:999:999::/:/bin/sh\n")},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*tar.Header{}
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got[h.Name] = h
	}
	tests := []struct {
		name     string
		uid      int
		mode     int64
		typeflag byte
	}{
		{"var/", 0, 0o755, tar.TypeDir},
		{"var/lib/postgresql/", imageUID, 0o755, tar.TypeDir},
		{"tmp/", 0, 0o1777, tar.TypeDir},
		{"etc/passwd", 0, 0o644, tar.TypeReg},
	}
	for _, tt := range tests {
		h, ok := got[tt.name]
		if !ok {
			t.Errorf("%s is missing from the root filesystem", tt.name)
			continue
		}
		if h.Uid != tt.uid || h.Mode != tt.mode || h.Typeflag != tt.typeflag {
			t.Errorf("%s: uid %d mode %o type %c, want uid %d mode %o type %c", tt.name, h.Uid, h.Mode, h.Typeflag, tt.uid, tt.mode, tt.typeflag)
		}
	}
}

func TestHostRecipeTagFollowsVersionAndRecipe(t *testing.T) {
	a := hostRecipe{Installation{Bin: "/usr/lib/postgresql/15/bin", Version: "15.18", Major: "15"}}
	b := hostRecipe{Installation{Bin: "/usr/lib/postgresql/15/bin", Version: "15.19", Major: "15"}}
	if a.tag() == b.tag() {
		t.Errorf("an upgraded host Postgres keeps the tag %s: a stale image would be reused", a.tag())
	}
	if !strings.HasPrefix(a.tag(), "contested.local/postgres:15-") {
		t.Errorf("tag %s does not name the major version", a.tag())
	}
}

// seededLine is pgentry's SeededLine.
const seededLine = "contested-postgres: data directory copied from the image's seed"

// TestPostgresImageHonoursItsVariables starts the locally built image the
// way a user of the upstream image would: another superuser, a password
// with a quote in it, a database of its own, with the image's empty data
// directory or a tmpfs over it (both filled from the image's seed at
// start), then restarts it.
func TestPostgresImageHonoursItsVariables(t *testing.T) {
	cli := dockerenv.Require(t)
	ctx := context.Background()
	im := Postgres()
	ref, err := im.Ensure(ctx, cli, im.Local, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		tmpfs bool
	}{
		{"the seed copied into the container's file system", false},
		{"the seed copied into a tmpfs", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			password := "it's a \"secret\""
			args := []string{"run", "-d", "--label", "dev.contested.managed=true", "-e", "POSTGRES_USER=alice", "-e", "POSTGRES_PASSWORD=" + password,
				"-e", "POSTGRES_DB=shop", "-p", "127.0.0.1::5432"}
			if tt.tmpfs {
				args = append(args, "--tmpfs", fmt.Sprintf("/var/lib/postgresql/data:uid=%d,gid=%d", imageUID, imageGID))
			}
			out, err := exec.Command("docker", append(args, ref, "-c", "max_connections=50")...).Output()
			if err != nil {
				t.Fatalf("docker run: %v", err)
			}
			id := strings.TrimSpace(string(out))
			t.Cleanup(func() { exec.Command("docker", "rm", "-f", id).Run() })
			// The published port changes on restart: look it up each time.
			dsnFor := func(password string) string {
				port, err := exec.Command("docker", "port", id, "5432/tcp").Output()
				if err != nil {
					t.Fatalf("docker port: %v", err)
				}
				addr := strings.TrimSpace(strings.Split(string(port), "\n")[0])
				u := url.URL{Scheme: "postgres", User: url.UserPassword("alice", password), Host: addr, Path: "/shop", RawQuery: "sslmode=disable"}
				return u.String()
			}
			query := func() (string, error) {
				ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				defer cancel()
				conn, err := pgx.Connect(ctx, dsnFor(password))
				if err != nil {
					return "", err
				}
				defer conn.Close(ctx)
				var s string
				err = conn.QueryRow(ctx, "SELECT current_user || '/' || current_database() || '/' || current_setting('max_connections')").Scan(&s)
				return s, err
			}
			waitFor := func() string {
				var last error
				for range 100 {
					s, err := query()
					if err == nil {
						return s
					}
					last = err
					time.Sleep(100 * time.Millisecond)
				}
				logs, _ := exec.Command("docker", "logs", id).CombinedOutput()
				t.Fatalf("no connection: %v\n%s", last, logs)
				return ""
			}
			if got := waitFor(); got != "alice/shop/50" {
				t.Errorf("connected as %q, want alice/shop/50", got)
			}
			if logs, _ := exec.Command("docker", "logs", id).CombinedOutput(); !strings.Contains(string(logs), seededLine) {
				t.Errorf("the data directory was not copied from the image's seed (no %q):\n%s", seededLine, logs)
			}
			if err := exec.Command("docker", "restart", id).Run(); err != nil {
				t.Fatal(err)
			}
			if got := waitFor(); got != "alice/shop/50" {
				t.Errorf("after a restart, connected as %q, want alice/shop/50", got)
			}
			if conn, err := pgx.Connect(ctx, dsnFor("wrong")); err == nil {
				conn.Close(ctx)
				t.Error("a wrong password was accepted")
			}
		})
	}
}

// TestPostgresAnnouncesReadyOnlyOnceConfigured follows the locally built
// image's log as it starts: the moment it prints PostgresReadyLine, one
// connection with the password it was given must succeed, with no retry;
// the image says which line it prints in its label.
func TestPostgresAnnouncesReadyOnlyOnceConfigured(t *testing.T) {
	cli := dockerenv.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	im := Postgres()
	ref, err := im.Ensure(ctx, cli, im.Local, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	if got := ReadyLine(ctx, cli, ref); got != PostgresReadyLine {
		t.Fatalf("image %s labels its ready line %q, want %q", ref, got, PostgresReadyLine)
	}
	if !strings.Contains(string(pgentrySource), `ReadyLine = "`+PostgresReadyLine+`"`) {
		t.Fatalf("the entrypoint does not print %q", PostgresReadyLine)
	}
	if !strings.Contains(string(pgentrySource), `SeededLine = "`+seededLine+`"`) {
		t.Fatalf("the entrypoint does not print %q", seededLine)
	}
	password := "fresh-" + fmt.Sprint(time.Now().UnixNano())
	out, err := exec.Command("docker", "run", "-d", "--label", "dev.contested.managed=true", "-e", "POSTGRES_PASSWORD="+password,
		"-e", "POSTGRES_DB="+PostgresDatabase, "-p", "127.0.0.1::5432", ref).Output()
	if err != nil {
		t.Fatalf("docker run: %v", err)
	}
	id := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("docker", "rm", "-f", id).Run() })
	logs := exec.CommandContext(ctx, "docker", "logs", "-f", id)
	stream, err := logs.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := logs.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { logs.Process.Kill(); logs.Wait() }()
	var seen []string
	buf := make([]byte, 4096)
	var text string
	for !strings.Contains(text, PostgresReadyLine) {
		n, err := stream.Read(buf)
		if err != nil {
			t.Fatalf("the log ended before %q: %v\n%s", PostgresReadyLine, err, strings.Join(seen, ""))
		}
		text += string(buf[:n])
		seen = append(seen, string(buf[:n]))
	}
	port, err := exec.Command("docker", "port", id, "5432/tcp").Output()
	if err != nil {
		t.Fatalf("docker port: %v", err)
	}
	addr := strings.TrimSpace(strings.Split(string(port), "\n")[0])
	u := url.URL{Scheme: "postgres", User: url.UserPassword("postgres", password), Host: addr, Path: "/" + PostgresDatabase, RawQuery: "sslmode=disable"}
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatalf("connect right after %q: %v\n%s", PostgresReadyLine, err, text)
	}
	conn.Close(ctx)
	if strings.Contains(text, "CREATE DATABASE") || strings.Contains(text, "initdb") {
		t.Errorf("a start of the image with the database it holds ran initdb or CREATE DATABASE:\n%s", text)
	}
}
