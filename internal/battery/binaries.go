package battery

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/flock"
	"github.com/contested/contested/internal/interrupt"
	"github.com/contested/contested/internal/secret"
)

// Binaries keeps the test binaries of one command, so that a package the
// command runs again (the next seed of a contract, a rerun of a failing
// leg, the ladder's reruns) is built and linked once, not once per run.
//
// A go test of one package spends most of its CPU before the test starts:
// the go command loads the package graph and links a binary of some tens of
// megabytes (1.5 CPU-seconds of the 1.6 a short contract test costs here),
// and the contested and arbitrate commands run the same package a dozen
// times. With Binaries, Run builds each package's test binary once with go
// test -c (vet runs as go test runs it, the binary is linked as go test
// links one: without DWARF) and runs it as go test does: in the package's
// directory, with GOROOT/bin first on PATH, its output converted by
// test2json and ended with go test's own "ok" or "FAIL" line, so the events
// are the ones go test -json prints.
//
// The binaries live in the store (StoreDir: a directory of the user's
// cache directory only this user can enter, as the go command keeps its
// build cache), never in the results directory, which is an artifact that
// CI uploads, downloads and restores from caches: nothing there is ever
// executed. A binary kept for the next command is run again only when it
// is the very file this tool recorded after building it (its device,
// inode, size, time and the SHA-256 of its content, in a record beside it
// that only this user can write): anything else found in its place (a
// file a cache restored, a foreign binary with a forged build ID, a
// script, the same file rewritten in place) is removed and said, and the
// package is built again. Every run checks the content once more just
// before it starts, through the descriptor it then executes.
//
// Invariant: the module's sources do not change while the command runs (a
// package is built once per Binaries). A run whose flags this path does not
// carry (coverage, profiles, benchmarks, a -ldflags of its own), whose
// packages go list cannot load, or a package whose build fails, goes
// through go test itself, which reports it as it always does.
type Binaries struct {
	root   *atomicfile.Root // the store
	rel    string           // this command's directory under root
	unlock func()
	// keep is false when the store could not be used (no user cache
	// directory, one that is not private): the binaries are this
	// command's alone, in a temporary directory Close removes.
	keep bool
	log  io.Writer

	mu    sync.Mutex
	built map[string]*binary
	tools *toolchain
}

// binary is one package's test binary, built once, and the SHA-256 of
// the content built: each run checks it just before the binary starts.
type binary struct {
	once   sync.Once
	path   string
	digest string
	err    error
}

// toolchain is what running a test binary as go test does needs from the
// go command: GOROOT/bin (first on the tests' PATH) and test2json.
type toolchain struct {
	once      sync.Once
	gorootBin string
	test2json string
	err       error
}

// keptDir holds, under the store, one copy of every test binary a command
// built, each beside the lock its builds take and the record of the file
// this tool built (keptRecord), for the next command to start from;
// keptFor is how long one nobody used stays.
const (
	keptDir = "kept"
	keptFor = 72 * time.Hour
)

// legacyBinDir is where test binaries were kept under the results
// directory before they moved to the store: whatever is found there is
// removed, never run.
const legacyBinDir = "battery/bin"

// runFlags are the go test flags a prebuilt run carries, by name: true for
// the test binary's own (passed as -test.name), false for go test -c's.
// Boolean flags take no separate value.
var runFlags = map[string]struct {
	test, boolean bool
}{
	"run": {test: true}, "skip": {test: true}, "count": {test: true}, "timeout": {test: true},
	"parallel": {test: true}, "cpu": {test: true}, "shuffle": {test: true},
	"short": {test: true, boolean: true}, "v": {test: true, boolean: true}, "failfast": {test: true, boolean: true},
	"tags": {}, "race": {boolean: true},
	"p": {},
}

// goflagsBuild are the flags GOFLAGS may hold for a prebuilt run: go test
// -c reads them as go test would. Any other (a test flag such as -count or
// -cover) sends the run through go test, which applies it.
var goflagsBuild = []string{"mod", "modcacherw", "modfile", "tags", "race", "msan", "asan", "trimpath", "buildvcs",
	"gcflags", "asmflags", "ldflags", "p", "pgo", "overlay", "installsuffix"}

// invocation is a go test command line split the way a prebuilt run needs
// it: the flags for go test -c and the ones for the test binary.
type invocation struct {
	build []string // for go test -c
	test  []string // -test.* flags, for the binary
	p     int      // packages run at once (go test's -p); 0 for GOMAXPROCS
}

// split splits args (goTestArgs' flags, patterns excluded) into an
// invocation, or says this path cannot carry them.
func split(args []string, goflags string) (invocation, bool) {
	var inv invocation
	for _, f := range strings.Fields(goflags) {
		name, value, _ := strings.Cut(strings.TrimLeft(f, "-"), "=")
		if !slices.Contains(goflagsBuild, name) {
			return inv, false
		}
		if name == "p" {
			if inv.p, _ = strconv.Atoi(value); inv.p < 1 {
				return inv, false
			}
		}
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-json" {
			continue
		}
		if !strings.HasPrefix(a, "-") {
			return inv, false
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		name = strings.TrimPrefix(name, "test.")
		f, ok := runFlags[name]
		if !ok {
			return inv, false
		}
		if !f.boolean && !hasValue {
			if i+1 >= len(args) {
				return inv, false
			}
			i++
			value, hasValue = args[i], true
		}
		switch {
		case name == "p":
			// How many packages run at once, not how one is built: it
			// sizes the run's slots and is no part of a binary's key.
			if inv.p, _ = strconv.Atoi(value); inv.p < 1 {
				return inv, false
			}
		case f.test && hasValue:
			inv.test = append(inv.test, "-test."+name+"="+value)
		case f.test:
			inv.test = append(inv.test, "-test."+name)
		case hasValue:
			inv.build = append(inv.build, "-"+name+"="+value)
		default:
			inv.build = append(inv.build, "-"+name)
		}
	}
	if !strings.Contains(goflags, "-ldflags") {
		// What go test does for a binary it does not keep (OmitDebug): no
		// symbol table, no DWARF; a third less to link.
		inv.build = append(inv.build, "-ldflags=-s -w")
	}
	return inv, true
}

// listed is one package as go list describes it.
type listed struct {
	ImportPath   string
	Dir          string
	TestGoFiles  []string
	XTestGoFiles []string
	Error        *struct{ Err string }
	DepsErrors   []struct{ Err string }
}

func (p listed) hasTests() bool { return len(p.TestGoFiles)+len(p.XTestGoFiles) > 0 }

// list lists the packages of a prebuilt run, or reports that one of them
// cannot be loaded (go test reports that).
func list(ctx context.Context, dir string, env, build, patterns []string) ([]listed, bool, error) {
	args := append(append([]string{"list", "-e", "-json=ImportPath,Dir,TestGoFiles,XTestGoFiles,Error,DepsErrors"}, build...), patterns...)
	out, err := goOutput(ctx, dir, env, args...)
	if err != nil {
		return nil, false, err
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, false, fmt.Errorf("go list %s: %w", strings.Join(patterns, " "), err)
		}
		if p.Error != nil || len(p.DepsErrors) > 0 {
			return nil, false, nil
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, len(pkgs) > 0, nil
}

// binaryFor returns the test binary of pkg built with build in env, and
// the SHA-256 of its content, building it on first use; an error means it
// could not be built, and the package goes through go test, which reports
// why.
func (b *Binaries) binaryFor(ctx context.Context, dir string, env []string, build []string, pkg string, out io.Writer) (string, string, error) {
	key := buildKey(dir, env, build, pkg)
	b.mu.Lock()
	bin, ok := b.built[key]
	if !ok {
		bin = &binary{}
		b.built[key] = bin
	}
	b.mu.Unlock()
	bin.once.Do(func() {
		bin.path = filepath.Join(b.Dir(), binaryName(key, pkg))
		bin.digest, bin.err = b.build(ctx, dir, env, build, pkg, filepath.Base(bin.path), out)
	})
	if bin.err != nil && ctx.Err() != nil {
		// A cancelled build says nothing of the package: the next run tries again.
		b.mu.Lock()
		delete(b.built, key)
		b.mu.Unlock()
	}
	return bin.path, bin.digest, bin.err
}

// binaryName is the file name of pkg's test binary built under key.
func binaryName(key, pkg string) string {
	sum := sha256.Sum256([]byte(key))
	return strings.NewReplacer("/", "_", ".", "_").Replace(pkg) + "-" + hex.EncodeToString(sum[:6]) + ".test"
}

// discard forgets pkg's test binary, whose content was found not to be
// what was built: it removes the command's copy and the kept one with its
// record, so the next binaryFor builds it afresh.
func (b *Binaries) discard(dir string, env, build []string, pkg string) {
	key := buildKey(dir, env, build, pkg)
	name := binaryName(key, pkg)
	b.mu.Lock()
	delete(b.built, key)
	b.mu.Unlock()
	_ = b.root.Remove(filepath.Join(b.rel, name))
	if !b.keep {
		return
	}
	// A build that holds the kept copy's lock checks it (checkKept) and
	// refuses it itself: never wait for it here.
	kept := filepath.Join(keptDir, name)
	if unlock, ok := tryLock(b.root.Join(kept) + ".lock"); ok {
		_ = b.root.Remove(kept)
		_ = b.root.Remove(kept + recordSuffix)
		unlock()
	}
}

// build makes the command's binary name of pkg and returns the SHA-256 of
// its content. It builds into the kept copy (keptDir/name) under that
// copy's lock, so that go test -c, which leaves a binary whose build ID
// still matches its sources and flags as it is, links only what changed
// since any earlier command; then it links the kept copy into the
// command's directory. The command runs that link: a later build replaces
// the kept copy (go removes a file before it writes one), never the file a
// command runs. A kept copy is built upon only when it is the file this
// tool recorded there, content included (checkKept); anything else in its
// place is removed first and said, so go never takes a foreign file whose
// build ID matches for its own. Where the kept copy cannot be made, it
// builds into the command's directory alone, and says why.
func (b *Binaries) build(ctx context.Context, dir string, env, build []string, pkg, name string, out io.Writer) (string, error) {
	path := filepath.Join(b.Dir(), name)
	alone := func(out io.Writer, how string) (string, error) {
		if err := goTestC(ctx, dir, env, build, pkg, path, out, how); err != nil {
			return "", err
		}
		_ = os.Chmod(path, 0o700)
		return digestPath(path)
	}
	if !b.keep {
		return alone(out, "once for this command")
	}
	kept := filepath.Join(keptDir, name)
	unlock, err := flock.Lock(ctx, b.root.Join(kept)+".lock", 0o600, 20*time.Millisecond)
	if err != nil {
		return alone(out, "once for this command")
	}
	defer unlock()
	reuse := "once for this command, kept for the next"
	checked, why := b.checkKept(kept)
	switch {
	case why == nil:
		reuse = "once for this command (go relinks the kept one only if its sources changed)"
	case errors.Is(why, fs.ErrNotExist):
	default:
		if !b.removeKept(kept, why, pkg, out) {
			return alone(out, "once for this command")
		}
	}
	if err := goTestC(ctx, dir, env, build, pkg, b.root.Join(kept), out, reuse); err != nil {
		if ctx.Err() != nil {
			return "", err
		}
		// The package may build where its kept copy could not be written:
		// the prebuilt run goes on, and says why nothing is kept.
		if sum, aerr := alone(io.Discard, ""); aerr == nil {
			fmt.Fprintf(out, "battery: %s's test binary is built for this command alone: its kept copy could not be made (%s)\n", short(pkg), firstLine(err.Error()))
			return sum, nil
		}
		return "", err
	}
	now := time.Now()
	_ = os.Chmod(b.root.Join(kept), 0o700)      // whatever the umask: this user's alone
	_ = os.Chtimes(b.root.Join(kept), now, now) // last used, for the sweep
	id, err := b.recordKept(kept)
	if err == nil && why == nil && id.sameInode(checked) && id.SHA256 != checked.SHA256 {
		// go left the file in place, so its content is the one checked
		// unless something rewrote it while go looked at it.
		err = fmt.Errorf("%w (rewritten in place while go checked it)", errNotAsBuilt)
	}
	if err != nil {
		_ = b.root.Remove(kept)
		_ = b.root.Remove(kept + recordSuffix)
		fmt.Fprintf(out, "battery: %s's test binary is not kept for the next command: %v\n", short(pkg), err)
		return alone(io.Discard, "")
	}
	if err := os.Link(b.root.Join(kept), path); err != nil {
		return alone(io.Discard, "")
	}
	return id.SHA256, nil
}

// removeKept removes the kept copy rel that checkKept refused for why,
// with its record, and says so; false when it could not be removed.
func (b *Binaries) removeKept(rel string, why error, pkg string, out io.Writer) bool {
	rmErr := b.root.RemoveAll(rel)
	_ = b.root.Remove(rel + recordSuffix)
	if rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) {
		fmt.Fprintf(out, "battery: %s: %v, and it cannot be removed (%v): never run; %s's test binary is built for this command alone\n", b.root.Join(rel), why, rmErr, short(pkg))
		return false
	}
	fmt.Fprintf(out, "battery: removed %s: %v; it is never run, and %s's test binary is built again\n", b.root.Join(rel), why, short(pkg))
	return true
}

// goTestC builds pkg's test binary at path with go test -c, saying so on
// out; an error carries go's output.
func goTestC(ctx context.Context, dir string, env, build []string, pkg, path string, out io.Writer, how string) error {
	if how != "" {
		fmt.Fprintf(out, "battery: building %s's test binary %s\n", short(pkg), how)
	}
	args := append(append([]string{"test", "-c", "-o", path}, build...), pkg)
	cmd := interrupt.Command(ctx, StopAfter, "go", args...)
	cmd.Dir, cmd.Env = dir, env
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	untrack, err := interrupt.Start(cmd)
	if err == nil {
		err = cmd.Wait()
		untrack()
	}
	if err == nil {
		_, err = os.Stat(path)
	}
	if err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, secret.ScrubString(output.String()))
	}
	return nil
}

// buildKey names a build: the module directory and the package, the flags,
// and every variable of env that can change what go builds (GO*, CGO_*,
// CC, CXX, PKG_CONFIG).
func buildKey(dir string, env []string, build []string, pkg string) string {
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GO") || strings.HasPrefix(k, "CGO_") || k == "CC" || k == "CXX" || k == "PKG_CONFIG" {
			vars[k] = v
		}
	}
	var b strings.Builder
	b.WriteString(dir + "\x00" + pkg)
	for _, f := range build {
		b.WriteString("\x00" + f)
	}
	names := make([]string, 0, len(vars))
	for k := range vars {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		b.WriteString("\x00" + k + "=" + vars[k])
	}
	return b.String()
}

// toolchainFor resolves GOROOT/bin and test2json once.
func (b *Binaries) toolchainFor(ctx context.Context, dir string, env []string) (*toolchain, error) {
	t := b.tools
	t.once.Do(func() {
		run := func(args ...string) (string, error) {
			out, err := goOutput(ctx, dir, env, args...)
			return strings.TrimSpace(string(out)), err
		}
		var goroot string
		if goroot, t.err = run("env", "GOROOT"); t.err != nil {
			return
		}
		t.gorootBin = filepath.Join(goroot, "bin")
		t.test2json, t.err = run("tool", "-n", "test2json")
	})
	if t.err != nil {
		return nil, t.err
	}
	return t, nil
}

// errNoPrebuilt says a run cannot take the prebuilt path; Run falls back
// to go test.
var errNoPrebuilt = errors.New("no prebuilt run")
