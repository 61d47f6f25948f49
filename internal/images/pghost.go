package images

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"debug/elf"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/client"

	"github.com/contested/contested/internal/envvar"
)

// ErrNoPostgres reports that no Postgres installation was found here.
var ErrNoPostgres = errors.New("no local Postgres binaries (initdb, postgres)")

// Installation is a Postgres installed on this machine: where its
// programs, modules and shared data live, and its version.
type Installation struct {
	Bin     string // initdb, postgres
	Lib     string // loadable modules (plpgsql.so, dict_snowball.so, …)
	Share   string // catalogs, timezone sets, extension scripts
	Version string // for example "15.18"
	Major   string // for example "15"
}

// PostgresInstallation finds the host's Postgres: explicit (or
// $CONTESTED_PG_BIN) when set, then pg_config --bindir, then the newest
// /usr/lib/postgresql/*/bin, then initdb on PATH.
func PostgresInstallation(explicit string) (Installation, error) {
	if explicit == "" {
		explicit = strings.TrimSpace(os.Getenv(envvar.PostgresBin))
	}
	bin, err := postgresBin(explicit)
	if err != nil {
		return Installation{}, err
	}
	in := Installation{Bin: bin, Lib: filepath.Join(filepath.Dir(bin), "lib")}
	out, err := exec.Command(filepath.Join(bin, "postgres"), "--version").Output()
	if err != nil {
		return Installation{}, fmt.Errorf("%s/postgres --version: %w", bin, err)
	}
	// "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)"
	f := strings.Fields(string(out))
	if len(f) < 3 {
		return Installation{}, fmt.Errorf("%s/postgres --version printed %q", bin, out)
	}
	in.Version = f[2]
	in.Major, _, _ = strings.Cut(in.Version, ".")
	in.Share = filepath.Join("/usr/share/postgresql", in.Major)
	if pc := filepath.Join(bin, "pg_config"); isFile(pc) {
		if out, err := exec.Command(pc, "--sharedir", "--pkglibdir").Output(); err == nil {
			if lines := strings.Fields(string(out)); len(lines) == 2 {
				in.Share, in.Lib = lines[0], lines[1]
			}
		}
	}
	for _, d := range []string{in.Lib, in.Share} {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			return Installation{}, fmt.Errorf("the Postgres in %s has no directory %s", bin, d)
		}
	}
	return in, nil
}

func postgresBin(explicit string) (string, error) {
	ok := func(dir string) bool {
		return isFile(filepath.Join(dir, "initdb")) && isFile(filepath.Join(dir, "postgres"))
	}
	if explicit != "" {
		if ok(explicit) {
			return filepath.Abs(explicit)
		}
		return "", fmt.Errorf("%w: %s=%s has no initdb and postgres", ErrNoPostgres, envvar.PostgresBin, explicit)
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		if d := strings.TrimSpace(string(out)); ok(d) {
			return d, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return majorOf(dirs[i]) > majorOf(dirs[j]) })
	for _, d := range dirs {
		if ok(d) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil && ok(filepath.Dir(real)) {
			return filepath.Dir(real), nil
		}
	}
	return "", fmt.Errorf("%w were found: install postgresql (apt-get install postgresql) or set %s", ErrNoPostgres, envvar.PostgresBin)
}

func majorOf(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// pgentrySource is the image's entrypoint, compiled statically at build.
//
//go:embed pgentry/main.go
var pgentrySource []byte

// hostRecipeVersion changes whenever what the host recipe puts in the
// image changes, so that a cached image of an older recipe is not reused.
const hostRecipeVersion = "host-4"

// PostgresDatabase is the database the fault layer asks for; the locally
// built image holds it ready (created at build), so a start does not pay
// for CREATE DATABASE.
const PostgresDatabase = "contested"

// PostgresReadyLine is what the locally built image's entrypoint logs once
// the server accepts connections with the role, password and database it
// was given (pgentry's ReadyLine). The image carries it in the label
// ReadyLineLabel, so a caller knows which line to wait for.
const PostgresReadyLine = "contested-postgres: ready"

// ReadyLineLabel is the image label that holds the log line an image
// prints once it is ready; images without it announce nothing.
const ReadyLineLabel = "dev.contested.ready-line"

// ReadyLine returns the log line ref announces its readiness with, from
// its ReadyLineLabel, or "" when it announces none (an upstream image) or
// cannot be inspected.
func ReadyLine(ctx context.Context, d Docker, ref string) string {
	res, err := d.ImageInspect(ctx, ref)
	if err != nil || res.Config == nil {
		return ""
	}
	return res.Config.Labels[ReadyLineLabel]
}

// The postgres user inside the image (pgentry's uid and gid).
const (
	imageUID = 999
	imageGID = 999
)

// hostRecipe builds the Postgres image from the host's own installation:
// its binaries, the modules and data they load, the shared libraries they
// link (found by reading their ELF headers), a shell for initdb, and a
// static entrypoint, on scratch. The data directory is initialised while
// the image is built, so a container is ready about a second after start.
type hostRecipe struct{ in Installation }

// hostDockerfile is the image's Dockerfile: the host's binaries directory,
// the shared libraries' directories, the postgres uid and gid, and the
// database created at build.
const hostDockerfile = `FROM scratch
ADD rootfs.tar /
ENV PGBIN=%[1]s PGDATA=/var/lib/postgresql/data PGSEED=/var/lib/postgresql/seed PATH=%[1]s:/bin LD_LIBRARY_PATH=%[2]s TZ=UTC
RUN ["/contested-postgres", "init", "%[5]s"]
USER %[3]d:%[4]d
EXPOSE 5432
STOPSIGNAL SIGINT
ENTRYPOINT ["/contested-postgres"]
`

// tag names the image by everything that goes into it besides the host's
// files: the recipe version, the Dockerfile, the entrypoint's source, the
// database it holds, and the host Postgres' location and version. A change
// to any of them is a new tag, so a stale image is never reused.
func (r hostRecipe) tag() string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%s\n%s\n%s\n%s\n", hostRecipeVersion, r.in.Bin, r.in.Version, hostDockerfile, PostgresDatabase, pgentrySource)
	return fmt.Sprintf("contested.local/postgres:%s-%s", r.in.Major, hex.EncodeToString(h.Sum(nil))[:10])
}

func (r hostRecipe) describe() string {
	return fmt.Sprintf("from this machine's Postgres %s (%s), no system package needed", r.in.Version, r.in.Bin)
}

// aliasTag also names the newest locally built Postgres image, for the
// compose devstack, which cannot compute the recipe's tag.
const aliasTag = "contested.local/postgres:local"

func (r hostRecipe) build(ctx context.Context, d Docker, tag string, log io.Writer) error {
	tags := []string{tag}
	if tag == r.tag() {
		tags = append(tags, aliasTag)
	}
	dir, err := os.MkdirTemp("", "contested-postgres-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	entry := filepath.Join(dir, "contested-postgres")
	fmt.Fprintf(log, "images: compiling the entrypoint (CGO_ENABLED=0)\n")
	if err := compileStatic(ctx, dir, "contested.local/pgentry", pgentrySource, entry); err != nil {
		return err
	}
	files, err := r.files(entry)
	if err != nil {
		return err
	}
	dockerfile := fmt.Sprintf(hostDockerfile, r.in.Bin, strings.Join(libDirs(files), ":"), imageUID, imageGID, PostgresDatabase)
	fmt.Fprintf(log, "images: %d files from the host; building %s\n", len(files), strings.Join(tags, ", "))
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeContext(pw, dockerfile, files)) }()
	res, err := d.ImageBuild(ctx, pr, client.ImageBuildOptions{
		Tags: tags, Remove: true, ForceRemove: true,
		Labels: map[string]string{"dev.contested.image": "postgres", "dev.contested.postgres.version": r.in.Version, "dev.contested.recipe": hostRecipeVersion, ReadyLineLabel: PostgresReadyLine},
	})
	if err != nil {
		pr.CloseWithError(err)
		return fmt.Errorf("docker build: %w", err)
	}
	defer res.Body.Close()
	return drainJSON(res.Body, log, "images:   ")
}

// file is one entry of the image's root filesystem: content read from
// src (a regular file, symlinks resolved), or a directory when src is "".
type file struct {
	path string // absolute, inside the image
	src  string
	mode fs.FileMode
	data []byte // literal content instead of src
	uid  int
}

// files lists what the image holds.
func (r hostRecipe) files(entry string) ([]file, error) {
	var out []file
	add := func(path, src string) { out = append(out, file{path: path, src: src}) }
	add("/contested-postgres", entry)
	for _, b := range []string{"postgres", "initdb"} {
		add(filepath.Join(r.in.Bin, b), filepath.Join(r.in.Bin, b))
	}
	// initdb runs the bootstrap backend through popen, which needs /bin/sh.
	sh, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		return nil, fmt.Errorf("initdb needs a shell and /bin/sh is missing: %w", err)
	}
	add("/bin/sh", sh)
	modules, err := os.ReadDir(r.in.Lib)
	if err != nil {
		return nil, err
	}
	for _, m := range modules {
		// JIT support links LLVM and is never used by the test plane (jit is
		// off for short queries); the bitcode is only for the JIT.
		if m.IsDir() || strings.HasPrefix(m.Name(), "llvmjit") {
			continue
		}
		add(filepath.Join(r.in.Lib, m.Name()), filepath.Join(r.in.Lib, m.Name()))
	}
	for _, tree := range []string{r.in.Share, "/usr/share/zoneinfo"} {
		err := filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "man" {
				return filepath.SkipDir
			}
			// A symlink to a directory (zoneinfo's posix -> .) is skipped;
			// one to a file is copied as the file.
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				add(p, p)
			}
			return nil
		})
		if err != nil && !(tree == "/usr/share/zoneinfo" && errors.Is(err, fs.ErrNotExist)) {
			return nil, err
		}
	}
	libs, err := sharedLibraries(out)
	if err != nil {
		return nil, err
	}
	out = append(out, libs...)
	out = append(out,
		file{path: "/etc/passwd", data: []byte(fmt.Sprintf("root:x:0:0::/:/bin/sh\npostgres:x:%d:%d::/var/lib/postgresql:/bin/sh\n", imageUID, imageGID))},
		file{path: "/etc/group", data: []byte(fmt.Sprintf("root:x:0:\npostgres:x:%d:\n", imageGID))},
		file{path: "/etc/nsswitch.conf", data: []byte("passwd: files\ngroup: files\n")},
		file{path: "/tmp", mode: fs.ModeDir | fs.ModeSticky | 0o777},
		file{path: "/var/lib/postgresql", mode: fs.ModeDir | 0o755, uid: imageUID},
		file{path: "/var/run/postgresql", mode: fs.ModeDir | 0o775, uid: imageUID},
	)
	return out, nil
}

// sharedLibraries returns the dynamic loader and every shared library the
// ELF files among files need, transitively, each at the path the loader
// searches. A module whose libraries are not all on this machine is an
// error naming it.
func sharedLibraries(files []file) ([]file, error) {
	dirs := loaderDirs()
	have := map[string]bool{}
	var out []file
	var walk func(path string) error
	walk = func(path string) error {
		f, err := elf.Open(path)
		if err != nil {
			return nil // not an ELF file: a script, data
		}
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type != elf.PT_INTERP {
				continue
			}
			b, err := io.ReadAll(p.Open())
			if err != nil {
				return err
			}
			interp := strings.TrimRight(string(b), "\x00")
			if !have[interp] {
				have[interp] = true
				out = append(out, file{path: interp, src: interp})
			}
		}
		needed, err := f.ImportedLibraries()
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		runpath, _ := f.DynString(elf.DT_RUNPATH)
		rpath, _ := f.DynString(elf.DT_RPATH)
		search := append(splitPaths(append(runpath, rpath...)), dirs...)
		for _, name := range needed {
			if have[name] {
				continue
			}
			var found string
			for _, d := range search {
				if p := filepath.Join(d, name); isFile(p) {
					found = p
					break
				}
			}
			if found == "" {
				return fmt.Errorf("%s needs %s, which is in none of %s", path, name, strings.Join(search, ", "))
			}
			have[name] = true
			out = append(out, file{path: found, src: found})
			if err := walk(found); err != nil {
				return err
			}
		}
		return nil
	}
	for _, f := range files {
		if f.src == "" || !strings.Contains(f.path, "/bin/") && !strings.HasSuffix(f.path, ".so") && f.path != "/contested-postgres" {
			continue
		}
		if err := walk(f.src); err != nil {
			return nil, err
		}
	}
	// glibc before 2.34 loads the files NSS module at run time.
	for _, d := range dirs {
		if p := filepath.Join(d, "libnss_files.so.2"); isFile(p) && !have["libnss_files.so.2"] {
			have["libnss_files.so.2"] = true
			out = append(out, file{path: p, src: p})
		}
	}
	return out, nil
}

// loaderDirs are the directories the dynamic loader searches on this
// machine: multiarch directories first, as Debian configures them.
func loaderDirs() []string {
	var dirs []string
	for _, g := range []string{"/lib/*-linux-gnu*", "/usr/lib/*-linux-gnu*"} {
		m, _ := filepath.Glob(g)
		for _, d := range m {
			if st, err := os.Stat(d); err == nil && st.IsDir() {
				dirs = append(dirs, d)
			}
		}
	}
	return append(dirs, "/lib64", "/usr/lib64", "/lib", "/usr/lib")
}

func splitPaths(ps []string) []string {
	var out []string
	for _, p := range ps {
		for _, d := range strings.Split(p, ":") {
			if d != "" && !strings.Contains(d, "$") {
				out = append(out, d)
			}
		}
	}
	return out
}

// libDirs are the distinct directories of the image's shared libraries,
// for LD_LIBRARY_PATH: without /etc/ld.so.cache the loader would search
// only /lib and /usr/lib.
func libDirs(files []file) []string {
	var dirs []string
	for _, f := range files {
		if strings.Contains(filepath.Base(f.path), ".so") && !strings.HasPrefix(f.path, "/usr/lib/postgresql") {
			if d := filepath.Dir(f.path); !slices.Contains(dirs, d) {
				dirs = append(dirs, d)
			}
		}
	}
	sort.Strings(dirs)
	return dirs
}

// writeContext writes a docker build context: the Dockerfile and
// rootfs.tar, the root filesystem the Dockerfile ADDs. Files are streamed,
// so the context never sits in memory whole.
func writeContext(w io.Writer, dockerfile string, files []file) error {
	root, err := os.CreateTemp("", "contested-postgres-rootfs-*.tar")
	if err != nil {
		return err
	}
	defer os.Remove(root.Name())
	defer root.Close()
	if err := writeRootfs(root, files); err != nil {
		return err
	}
	st, err := root.Stat()
	if err != nil {
		return err
	}
	if _, err := root.Seek(0, io.SeekStart); err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	now := time.Now()
	if err := tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(dockerfile)), ModTime: now}); err != nil {
		return err
	}
	if _, err := io.WriteString(tw, dockerfile); err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: "rootfs.tar", Mode: 0o644, Size: st.Size(), ModTime: now}); err != nil {
		return err
	}
	if _, err := io.Copy(tw, root); err != nil {
		return err
	}
	return tw.Close()
}

// writeRootfs writes files as a tar archive, parents before children.
func writeRootfs(w io.Writer, files []file) error {
	sort.Slice(files, func(i, j int) bool { return files[i].path < files[j].path })
	tw := tar.NewWriter(w)
	dirs := map[string]bool{}
	var mkdirs func(dir string) error
	mkdirs = func(dir string) error {
		if dir == "/" || dirs[dir] {
			return nil
		}
		if err := mkdirs(filepath.Dir(dir)); err != nil {
			return err
		}
		dirs[dir] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(dir, "/") + "/", Mode: 0o755})
	}
	for _, f := range files {
		if err := mkdirs(filepath.Dir(f.path)); err != nil {
			return err
		}
		name := strings.TrimPrefix(f.path, "/")
		if f.mode.IsDir() {
			if dirs[f.path] {
				continue
			}
			dirs[f.path] = true
			mode := int64(f.mode.Perm())
			if f.mode&fs.ModeSticky != 0 {
				mode |= 0o1000
			}
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: f.uid, Gid: f.uid}); err != nil {
				return err
			}
			continue
		}
		if f.data != nil {
			if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(f.data))}); err != nil {
				return err
			}
			if _, err := tw.Write(f.data); err != nil {
				return err
			}
			continue
		}
		if err := copyFile(tw, name, f.src); err != nil {
			return err
		}
	}
	return tw.Close()
}

func copyFile(tw *tar.Writer, name, src string) error {
	in, err := os.Open(src) // follows symlinks: the image holds the real file
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: int64(st.Mode().Perm()), Size: st.Size(), ModTime: st.ModTime()}); err != nil {
		return err
	}
	_, err = io.Copy(tw, in)
	return err
}

// compileStatic builds one main package from source, with the standard
// library only, into out: a throwaway module, so it works from any
// adopter's working directory and needs nothing from the network.
func compileStatic(ctx context.Context, dir, module string, source []byte, out string) error {
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module "+module+"\n\ngo 1.22\n"), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), source, 0o644); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", module, err, b)
	}
	return nil
}
