package command

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fatih/color"

	"github.com/contested/contested/faultlayer"
	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/gotest"
	"github.com/contested/contested/registry"
)

// ValidateOptions configures Validate.
type ValidateOptions struct {
	// Dir is the module to validate; empty means the working directory.
	Dir string
	// Patterns are the battery's packages; default ./...
	Patterns []string
	// Args are extra go test flags (for example -run).
	Args []string
	Out  io.Writer
}

// ValidateReport is what one validate run found, saved as validate.json
// under the results directory.
type ValidateReport struct {
	RunID     string               `json:"run_id"`
	Layer     string               `json:"layer"`
	Preflight faultlayer.Preflight `json:"preflight"`
	Battery   *battery.Result      `json:"battery,omitempty"`
	Gate      *faultrecord.Report  `json:"gate,omitempty"`
	Registry  []string             `json:"registry_problems,omitempty"`
	Green     bool                 `json:"green"`
	Reasons   []string             `json:"reasons,omitempty"`
	Took      time.Duration        `json:"took_ns"`
}

// Validate is the paired run: bring the fault layer up, run fault-preflight
// in required mode (never skipped), purge the old records and write a fresh
// gate stamp, run the battery with the layer's coordinates in its
// environment, verify the six phases (consuming the stamp only on success)
// and print a summary. Battery failures and gate refusals are reported
// separately; either makes validate red. Nothing is purged when preflight
// fails, and a refused record set is left untouched for triage.
func Validate(ctx context.Context, opts ValidateOptions) error {
	ctx, cancel := withSignals(ctx)
	defer cancel()
	start := time.Now()
	out := opts.Out
	dir, err := moduleDir(opts.Dir)
	if err != nil {
		return err
	}
	reg, regPath, err := loadRegistryIn(dir)
	if err != nil {
		return err
	}
	root, err := resultsRoot(dir)
	if err != nil {
		return err
	}
	faultDir := faultrecord.FaultDir(root)

	cfg, err := faultlayer.ConfigFromEnv()
	if err != nil {
		return err
	}
	cfg.Log = out
	rep := &ValidateReport{RunID: cfg.RunID}
	fmt.Fprintf(out, "%s run %s in %s\n", bold("validate:"), cfg.RunID, dir)

	l, err := faultlayer.Up(ctx, cfg)
	if err != nil {
		fmt.Fprintf(out, "validate: %s: the fault layer cannot run; refusing to run the battery\n", color.RedString("CANNOT RUN"))
		return err
	}
	defer l.Close(context.WithoutCancel(ctx))
	rep.Layer = string(l.Kind)
	p, err := Preflight(ctx, l, true, out)
	rep.Preflight = p
	if err != nil {
		fmt.Fprintf(out, "validate: %s: fault-preflight failed; refusing to run the battery (nothing was purged)\n", color.RedString("CANNOT RUN"))
		return err
	}

	if err := faultrecord.Purge(faultDir); err != nil {
		return fmt.Errorf("purge old records: %w", err)
	}
	if err := faultrecord.WriteStamp(faultDir, cfg.RunID); err != nil {
		return fmt.Errorf("write the gate stamp: %w", err)
	}
	fmt.Fprintf(out, "validate: purged old records and wrote %s\n", filepath.Join(faultDir, faultrecord.StampName))

	events, err := createArtifact(root, "battery", "go-test.json")
	if err != nil {
		return err
	}
	env := append(l.Env(),
		faultrecord.EnvResultsDir+"="+root,
		registry.EnvPath+"="+regPath,
	)
	res, err := battery.Run(ctx, battery.Options{Dir: dir, Patterns: opts.Patterns, Args: opts.Args, Env: env, Out: out, Events: events})
	events.Close()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrRed, err)
	}
	rep.Battery = res

	inv := cachedInventory(dir)
	gate, gerr := faultrecord.Verify(ctx, faultrecord.Options{
		Dir:              faultDir,
		Mode:             faultrecord.Paired,
		RecordingClasses: reg.Gate.RecordingClasses,
		KnownClasses:     reg.Classes(),
		Surfaces:         reg.IDs(),
		SelfTests:        reg.Gate.SelfTests,
		Inventory:        inv,
	})
	if gerr != nil && gate == nil {
		return fmt.Errorf("verify: %w", gerr)
	}
	rep.Gate = gate
	if names, err := inv(ctx); err == nil {
		if err := reg.CheckTests(names); err != nil {
			rep.Registry = strings.Split(err.Error(), "\n")
		}
	}

	fmt.Fprintln(out)
	gate.WriteSummary(out)
	writeBatterySummary(out, res)
	if len(rep.Registry) > 0 {
		fmt.Fprintf(out, "\n%s\n", bold("registry"))
		for _, line := range rep.Registry {
			fmt.Fprintf(out, "  %s\n", line)
		}
	}

	if !res.OK() {
		rep.Reasons = append(rep.Reasons, fmt.Sprintf("battery failed (%d tests, %d packages)", len(res.Failed()), len(res.FailedPackages())))
	}
	if !gate.Certified {
		rep.Reasons = append(rep.Reasons, "gate refused: "+failedPhases(gate))
	}
	if len(rep.Registry) > 0 {
		rep.Reasons = append(rep.Reasons, "registry names tests that do not exist")
	}
	rep.Green = len(rep.Reasons) == 0
	rep.Took = time.Since(start)
	if err := saveJSON(filepath.Join(root, "validate.json"), rep); err != nil {
		fmt.Fprintf(out, "validate: could not save validate.json: %v\n", err)
	}
	if rep.Green {
		fmt.Fprintf(out, "\nvalidate: %s in %s\n", color.GreenString("GREEN"), rep.Took.Round(time.Second))
		return nil
	}
	fmt.Fprintf(out, "\nvalidate: %s: %s\n", color.RedString("RED"), strings.Join(rep.Reasons, "; "))
	return fmt.Errorf("%w: %s", ErrRed, strings.Join(rep.Reasons, "; "))
}

// ProgramGateOptions configures ProgramGate.
type ProgramGateOptions struct {
	Dir string
	Out io.Writer
}

// ProgramGate runs fault-preflight in required mode, then the six phases
// over whatever records are on disk, standalone: a missing stamp is
// announced, a present one is left in place. It is for triage after a
// battery, never a substitute for validate.
func ProgramGate(ctx context.Context, opts ProgramGateOptions) error {
	ctx, cancel := withSignals(ctx)
	defer cancel()
	out := opts.Out
	dir, err := moduleDir(opts.Dir)
	if err != nil {
		return err
	}
	reg, _, err := loadRegistryIn(dir)
	if err != nil {
		return err
	}
	root, err := resultsRoot(dir)
	if err != nil {
		return err
	}
	if err := FaultPreflight(ctx, PreflightOptions{Required: true, Out: out}); err != nil {
		fmt.Fprintf(out, "program-gate: %s: fault-preflight failed; not verifying\n", color.RedString("CANNOT RUN"))
		return err
	}
	faultDir := faultrecord.FaultDir(root)
	if _, err := os.Stat(filepath.Join(faultDir, faultrecord.StampName)); err != nil {
		fmt.Fprintf(out, "program-gate: no gate stamp in %s: the records on disk are not tied to a run; verifying them anyway (standalone)\n", faultDir)
	}
	gate, err := faultrecord.Verify(ctx, faultrecord.Options{
		Dir:              faultDir,
		Mode:             faultrecord.Standalone,
		RecordingClasses: reg.Gate.RecordingClasses,
		KnownClasses:     reg.Classes(),
		Surfaces:         reg.IDs(),
		SelfTests:        reg.Gate.SelfTests,
		Inventory:        cachedInventory(dir),
	})
	if gate == nil {
		return fmt.Errorf("verify: %w", err)
	}
	fmt.Fprintln(out)
	gate.WriteSummary(out)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrRed, err)
	}
	return nil
}

// moduleDir returns dir (default: the working directory) made absolute,
// after checking it holds a go.mod.
func moduleDir(dir string) (string, error) {
	if dir == "" {
		var err error
		if dir, err = os.Getwd(); err != nil {
			return "", err
		}
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return "", fmt.Errorf("%w: %s has no go.mod: run the targets from the module root", ErrUsage, dir)
	}
	return dir, nil
}

// loadRegistryIn loads CONTESTED_SURFACES (relative to the module) and
// returns it with its absolute path.
func loadRegistryIn(dir string) (*registry.Registry, string, error) {
	p := registry.Path()
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	reg, err := registry.Load(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, p, fmt.Errorf("%w: %v: create the registry (see the README) or point %s at it", ErrUsage, err, registry.EnvPath)
		}
		if !errors.Is(err, registry.ErrInvalid) {
			err = fmt.Errorf("%w: %v", ErrUsage, err)
		}
		return nil, p, err
	}
	return reg, p, nil
}

// resultsRoot is the absolute results directory for a module: the
// battery's packages all run in other directories, so it is passed to them
// absolute.
func resultsRoot(dir string) (string, error) {
	v := os.Getenv(faultrecord.EnvResultsDir)
	if v == "" {
		v = faultrecord.DefaultResultsDir
	}
	if !filepath.IsAbs(v) {
		v = filepath.Join(dir, v)
	}
	return filepath.Clean(v), nil
}

// cachedInventory lists the module's tests once, however often it is asked.
func cachedInventory(dir string) func(context.Context) ([]string, error) {
	var once sync.Once
	var names []string
	var err error
	return func(ctx context.Context) ([]string, error) {
		once.Do(func() { names, err = gotest.List(ctx, dir) })
		return names, err
	}
}

func createArtifact(root string, parts ...string) (*os.File, error) {
	p := filepath.Join(append([]string{root}, parts...)...)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, err
	}
	return os.Create(p)
}

func saveJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return writeAtomic(path, append(b, '\n'))
}

func failedPhases(r *faultrecord.Report) string {
	var parts []string
	for _, p := range r.Phases {
		if !p.OK {
			parts = append(parts, fmt.Sprintf("phase %d (%s)", p.Number, p.Name))
		}
	}
	return strings.Join(parts, ", ")
}

func writeBatterySummary(out io.Writer, res *battery.Result) {
	fmt.Fprintf(out, "\n%s\n", bold("battery"))
	if res.OK() {
		fmt.Fprintf(out, "  %s: %d tests in %d packages (%s)\n", color.GreenString("passed"), len(res.Tests), len(res.Packages), res.Elapsed.Round(time.Second))
		return
	}
	for _, p := range res.FailedPackages() {
		fmt.Fprintf(out, "  %s package %s\n%s", color.RedString("FAIL"), p.Name, indent(tail(p.Output, 15), "      "))
	}
	for _, t := range res.Failed() {
		fmt.Fprintf(out, "  %s %s %s (%s)\n", color.RedString("FAIL"), t.Package, t.Name, t.Elapsed.Round(10*time.Millisecond))
	}
}

func bold(s string) string { return color.New(color.Bold).Sprint(s) }

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func indent(s, prefix string) string {
	if s == "" {
		return ""
	}
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix) + "\n"
}
