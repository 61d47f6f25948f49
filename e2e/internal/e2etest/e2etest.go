// Package e2etest is what the end-to-end test packages share: a copy of
// the adopter fixture per test, the adopter's magefile compiled once per
// package, the targets run as subprocesses on the package's shared fault
// layer, and readers for the artifacts they leave.
//
// The end-to-end tests are split into packages along what they exercise
// (validate, verdict, safety, stages), so that the battery's shards
// balance and a change that reaches one of them reruns only that one.
package e2etest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contested/contested/internal/faultdir"
	"github.com/contested/contested/internal/faultlayer/faulttest"
	"github.com/contested/contested/internal/faultlayer/noise"
	"github.com/contested/contested/internal/fixture"
	"github.com/contested/contested/internal/gate"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gate/ladder"
	"github.com/contested/contested/internal/tier"
)

// parallel is how many tests of a package run at once unless go test's
// -parallel says otherwise. They spend their time waiting on subprocesses,
// containers and the adopter's own tests rather than on a CPU (a serial
// run kept under a third of one core busy), so more of them than the
// machine has cores overlap their waits.
const parallel = 4

// module is the first line of this repository's go.mod.
const module = "module github.com/contested/contested\n"

// Main runs a package's tests with the package's parallelism, then closes
// its shared fault layer and removes the compiled targets.
func Main(m *testing.M) {
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		flag.Set("test.parallel", strconv.Itoa(max(parallel, runtime.GOMAXPROCS(0))))
	}
	code := m.Run()
	faulttest.Close()
	if compiled.dir != "" {
		os.RemoveAll(compiled.dir)
	}
	os.Exit(code)
}

// RepoRoot is this repository's root: the nearest directory above the
// test's own whose go.mod is contested's.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(b, []byte(module)) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no directory above the test's holds contested's go.mod")
		}
		dir = parent
	}
}

// Adopter copies testdata/adopter into a temporary directory, points its
// replace directive at this checkout, and applies edits (path → new
// content; "" deletes the file).
func Adopter(t testing.TB, edits map[string]string) string {
	t.Helper()
	tier.Full(t, "the targets compiled and run on the adopter fixture")
	dst := filepath.Join(t.TempDir(), "adopter")
	root := RepoRoot(t)
	if err := fixture.Copy(filepath.Join(root, "testdata", "adopter"), dst, root); err != nil {
		t.Fatal(err)
	}
	for name, body := range edits {
		p := filepath.Join(dst, name)
		if body == "" {
			os.Remove(p)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// compiled is the adopter's magefile compiled once for the package by go
// tool mage -compile: the program go tool mage builds and runs. No test
// edits the magefile, so every copy of the adopter runs the same one, and
// the tests run it directly instead of paying go tool mage's check and
// build on each call (seconds each on a busy machine), and instead of
// racing each other to rebuild mage's cached binary. The go tool mage
// path itself is run by GoToolMage.
var compiled struct {
	once     sync.Once
	dir, bin string
	err      error
}

// Targets returns the compiled targets, building them on first use.
func Targets(t testing.TB) string {
	t.Helper()
	tier.Full(t, "the targets compiled and run on the adopter fixture")
	root := RepoRoot(t)
	compiled.once.Do(func() {
		if compiled.dir, compiled.err = os.MkdirTemp("", "contested-e2e-targets-"); compiled.err != nil {
			return
		}
		src := filepath.Join(compiled.dir, "adopter")
		if compiled.err = fixture.Copy(filepath.Join(root, "testdata", "adopter"), src, root); compiled.err != nil {
			return
		}
		bin := filepath.Join(compiled.dir, "targets")
		cmd := exec.Command("go", "tool", "mage", "-compile", bin)
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			compiled.err = fmt.Errorf("go tool mage -compile in the adopter: %v\n%s", err, out)
			return
		}
		compiled.bin = bin
	})
	if compiled.err != nil {
		t.Fatal(compiled.err)
	}
	return compiled.bin
}

// Mage runs the adopter's targets (the compiled magefile) with args in dir
// against the shared fault layer and returns its output and exit code.
func Mage(t testing.TB, dir string, env []string, args ...string) (string, int) {
	t.Helper()
	return runTarget(t, dir, env, append([]string{Targets(t)}, args...))
}

// GoToolMage is mage through `go tool mage`, as a user types it: mage
// compiles the magefile of dir, then runs it.
func GoToolMage(t testing.TB, dir string, env []string, args ...string) (string, int) {
	t.Helper()
	return runTarget(t, dir, env, append([]string{"go", "tool", "mage"}, args...))
}

// LayerEnv is the environment a target runs with: the shared fault
// layer's, colour off, and the results directory and registry at their
// defaults.
func LayerEnv(t testing.TB) []string {
	t.Helper()
	return append(append(os.Environ(), faulttest.Layer(t).Env()...), "NO_COLOR=1", "CONTESTED_RESULTS_DIR=", "CONTESTED_SURFACES=")
}

// targetBound is how long one target may run: what is left of the test
// binary's own deadline (go test -timeout), less a minute to report what
// it printed. A busy machine makes a target slower, not wrong, so the
// bound is the battery's, not a figure from a quiet machine; without a
// deadline it is 30 minutes.
func targetBound(t testing.TB) time.Duration {
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if at, ok := d.Deadline(); ok {
			return max(time.Until(at)-time.Minute, time.Second)
		}
	}
	return 30 * time.Minute
}

func runTarget(t testing.TB, dir string, env, argv []string) (string, int) {
	t.Helper()
	args := argv[1:]
	ctx, cancel := context.WithTimeout(context.Background(), targetBound(t))
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], args...)
	cmd.Dir = dir
	cmd.Env = append(LayerEnv(t), env...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("%v: %v\n%s", argv, err, out)
	}
	t.Logf("%s %s: exit %d in %s", filepath.Base(argv[0]), strings.Join(args, " "), code, time.Since(start).Round(100*time.Millisecond))
	return string(out), code
}

// ReadReport reads the gate's fault-report.json under dir's results.
func ReadReport(t *testing.T, dir string) *gate.Report {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "test-results", "fault", faultdir.ReportName))
	if err != nil {
		t.Fatal(err)
	}
	var r gate.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// ValidateJSON is the part of validate.json these tests read.
type ValidateJSON struct {
	Green           bool                  `json:"green"`
	Level           int                   `json:"level"`
	Surfaces        []gate.SurfaceVerdict `json:"surfaces"`
	BatteryFailures []ladder.Plain        `json:"battery_failures"`
	Ladder          []*ladder.Outcome     `json:"ladder"`
	Capabilities    []CapabilityRow       `json:"capabilities"`
	NotArbitrated   []string              `json:"not_arbitrated"`
	Noise           *noise.Evidence       `json:"noise"`
	Gate            *gate.Report          `json:"gate"`
}

// CapabilityRow is one row of validate.json's capability matrix.
type CapabilityRow struct {
	Name     string   `json:"name"`
	NeededBy []string `json:"needed_by"`
	Present  bool     `json:"present"`
	Provide  string   `json:"provide"`
}

// ReadJSON decodes the JSON file at path into v.
func ReadJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// SameVerdicts compares validate's entry for a surface with contested's
// result for it: the surface's verdict and every leg's.
func SameVerdicts(t *testing.T, dir, surface string, validate []gate.SurfaceVerdict) {
	t.Helper()
	var got *gate.SurfaceVerdict
	for i := range validate {
		if validate[i].ID == surface {
			got = &validate[i]
		}
	}
	if got == nil {
		t.Fatalf("validate.json has no entry for %s: %+v", surface, validate)
	}
	var want contract.Result
	ReadJSON(t, filepath.Join(dir, "test-results", "contested", surface+".json"), &want)
	if got.Verdict != want.Contract {
		t.Errorf("%s: validate says %s, contested says %s", surface, got.Verdict, want.Contract)
	}
	if len(got.Legs) != len(want.Legs) {
		t.Fatalf("%s: validate has %d legs, contested %d", surface, len(got.Legs), len(want.Legs))
	}
	for i, l := range want.Legs {
		if got.Legs[i].Lever != l.Lever || got.Legs[i].Verdict != l.Verdict {
			t.Errorf("%s leg %s: validate says %s (%s), contested says %s (%s)", surface, l.Lever, got.Legs[i].Verdict, got.Legs[i].Reason, l.Verdict, l.Reason)
		}
	}
}

// CopyTree copies the regular files under src to dst.
func CopyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
