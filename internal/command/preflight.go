package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/fatih/color"

	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/dockerenv"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/faultlayer"
	"github.com/contested/contested/internal/faultlayer/noise"
	"github.com/contested/contested/internal/images"
	"github.com/contested/contested/internal/rundir"
	"github.com/contested/contested/internal/runenv"
	"github.com/contested/contested/internal/terminal"
)

// PreflightOptions configures FaultPreflight.
type PreflightOptions struct {
	// Required makes any failed check fatal (exit 3). Without it preflight
	// reports and exits 0, except on a proven exposure off this host (the
	// control API published off loopback, proxies listening off loopback on
	// the host's network), which is fatal in every mode.
	Required bool
	Out      io.Writer `json:"-"`
}

// FaultPreflight checks the fault layer: the one the environment names
// (CONTESTED_TOXIPROXY_URL and CONTESTED_PG_DSN), or else one it brings up
// for the purpose and tears down afterwards. The result is printed one line
// per check and saved as preflight.json under the results directory.
func FaultPreflight(ctx context.Context, opts PreflightOptions) error {
	ctx, cancel := withSignals(ctx)
	defer cancel()
	root, err := preflightResults()
	if err != nil {
		return err
	}
	cfg, err := faultlayer.ConfigFromEnv()
	if err != nil {
		return err
	}
	if cfg.Canonical, err = canonicalHere(); err != nil {
		return err
	}
	if mod, err := workingModule(); err == nil && root != "" {
		hintIgnore(ctx, mod, root, opts.Out)
	}
	cfg.Log = opts.Out
	mode := "report-only"
	if opts.Required {
		mode = "required"
	}
	if cfg.ToxiproxyURL == "" {
		fmt.Fprintf(opts.Out, "fault-preflight (%s): no layer named in the environment; the warm layer when one is up (go tool mage layer status), else one brought up to check and torn down afterwards\n", mode)
	}
	l, err := faultlayer.Up(ctx, cfg)
	var pe *faultlayer.PreflightError
	if errors.As(err, &pe) {
		// Up refused the layer before creating or deleting anything in it:
		// its identity checks failed. They are this preflight's answer.
		fmt.Fprintf(opts.Out, "fault-preflight (%s): %s layer, not touched: it failed the checks that come before any change to it\n", mode, pe.Preflight.Layer)
		return reportPreflight(pe.Preflight, opts.Required, root, opts.Out)
	}
	if err != nil {
		fmt.Fprintf(opts.Out, "fault-preflight (%s): %s\n", mode, color.RedString("the fault layer cannot run"))
		if errors.Is(err, faultlayer.ErrConfig) || opts.Required {
			return err
		}
		fmt.Fprintf(opts.Out, "  %v\n  (report-only: not failing; use -required to make this fatal)\n", err)
		return nil
	}
	defer l.Close(context.WithoutCancel(ctx))
	_, err = Preflight(ctx, l, opts.Required, root, opts.Out)
	return err
}

// Preflight runs the checks on a layer that is up, prints them and saves
// them as preflight.json under the results directory root ("" saves
// nothing), and returns an error wrapping ErrCannotRun when preflight fails
// in this mode.
func Preflight(ctx context.Context, l *faultlayer.Layer, required bool, root rundir.Dir, out io.Writer) (faultlayer.Preflight, error) {
	mode := "report-only"
	if required {
		mode = "required"
	}
	fmt.Fprintf(out, "fault-preflight (%s): %s layer (%s)\n", mode, l.Kind, l.Reason)
	p := faultlayer.RunPreflight(ctx, l)
	return p, reportPreflight(p, required, root, out)
}

// reportPreflight prints and saves a preflight result and returns its
// verdict in this mode.
func reportPreflight(p faultlayer.Preflight, required bool, root rundir.Dir, out io.Writer) error {
	p.Write(out)
	if path, err := savePreflight(p, root); err != nil {
		notSaved(out, "fault-preflight", path, err)
	}
	err := preflightVerdict(p, required)
	failed := len(p.Failed())
	switch {
	case p.Hard():
		fmt.Fprintf(out, "fault-preflight: %s\n", color.RedString("FAILED: %s: reachable off this host", hardFailure(p)))
	case failed > 0 && required:
		fmt.Fprintf(out, "fault-preflight: %s\n", color.RedString("FAILED (%d of %d checks)", failed, len(p.Checks)))
	case failed > 0:
		fmt.Fprintf(out, "fault-preflight: %s\n", color.YellowString("%d of %d checks failed (report-only: not failing; use -required to make this fatal)", failed, len(p.Checks)))
	default:
		fmt.Fprintf(out, "fault-preflight: %s (%s)\n", color.GreenString("ok"), p.Took.Round(time.Millisecond))
	}
	return err
}

// reportUpError prints the checks of a layer that Up refused on its
// identity checks (nothing for any other error, or none), and keeps the
// failed ones with their fixes for the CI's summary (noteCannotRun).
func reportUpError(out io.Writer, err error) {
	var pe *faultlayer.PreflightError
	if errors.As(err, &pe) {
		noteCannotRun(pe.Preflight)
		fmt.Fprintf(out, "fault layer: refused before anything was created or deleted in it:\n")
		pe.Preflight.Write(out)
	}
}

// preflightVerdict decides whether a preflight result fails the command: a
// hard failure always does, any failure does in required mode.
func preflightVerdict(p faultlayer.Preflight, required bool) error {
	if p.Hard() || (required && !p.OK()) {
		return fmt.Errorf("%w: fault-preflight: %s", ErrCannotRun, firstFailure(p))
	}
	return nil
}

func hardFailure(p faultlayer.Preflight) string {
	for _, c := range p.Failed() {
		if c.Hard {
			return c.Name
		}
	}
	return ""
}

func firstFailure(p faultlayer.Preflight) string {
	for _, c := range p.Failed() {
		return c.Name + ": " + c.Detail + "; fix: " + c.Fix
	}
	return ""
}

// preflightResults is the results directory preflight.json goes to when
// fault-preflight runs on its own: that of the working directory's module
// (runenv.ModuleRoot, rundir.Prepare), checked as every command checks it
// before the layer comes up. Outside a module, with a relative
// CONTESTED_RESULTS_DIR, there is none ("", nil): preflight runs and says
// it saved nothing.
func preflightResults() (rundir.Dir, error) {
	mod, _ := workingModule()
	root, err := rundir.Prepare(mod)
	switch {
	case errors.Is(err, rundir.ErrNoModuleRoot):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("%w: %w", ErrUsage, err)
	}
	return root, nil
}

// workingModule is the root of the module the working directory is in.
func workingModule() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return runenv.ModuleRoot(wd)
}

// savePreflight saves preflight.json under the results directory root and
// returns its path.
func savePreflight(p faultlayer.Preflight, root rundir.Dir) (string, error) {
	if root == "" {
		return "preflight.json", fmt.Errorf("no module root to anchor %s", envvar.ResultsDir)
	}
	return saveJSON(root, "preflight.json", p)
}

// Images makes sure both fault-layer images are in the engine, building
// the local equivalents when the upstream ones cannot be pulled. It is the
// step an air-gapped CI runs once before the battery.
func Images(ctx context.Context, out io.Writer) error {
	ctx, cancel := withSignals(ctx)
	defer cancel()
	cli, err := dockerenv.Connect(ctx)
	if err != nil {
		return fmt.Errorf("%w: %v; install and start Docker, or use CONTESTED_LAYER=embedded, which needs no images", ErrCannotRun, err)
	}
	defer cli.Close()
	for _, im := range []struct {
		image images.Image
		env   string
	}{
		{images.Toxiproxy(), envvar.ToxiproxyImage},
		{images.Postgres(), envvar.PostgresImage},
	} {
		ref, err := im.image.Ensure(ctx, cli, os.Getenv(im.env), out)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrCannotRun, err)
		}
		fmt.Fprintf(out, "images: %s ready as %s\n", im.image.Name, ref)
	}
	// In this repository, also the cluster rig's image of the reference
	// service, which the compose files' cluster profile runs.
	if dir, err := os.Getwd(); err == nil {
		if _, err := os.Stat(filepath.Join(dir, "examples", "ledger", "cmd", "ledger")); err == nil {
			ref, err := images.BuildService(ctx, cli, dir, "ledger", "./examples/ledger/cmd/ledger", out)
			if err != nil {
				return fmt.Errorf("%w: the rig image: %v", ErrCannotRun, err)
			}
			fmt.Fprintf(out, "images: ledger rig ready as %s\n", ref)
		}
	}
	return nil
}

// Sweep removes what killed runs of this project left behind on this host:
// labelled containers, networks and volumes whose owner process is gone,
// embedded layers' data directories, and the noise writers' files a
// killed run left in the working module's results directory. Nothing
// without our label is touched.
func Sweep(ctx context.Context, out io.Writer) error {
	if err := faultlayer.Sweep(ctx, out); err != nil {
		return err
	}
	if mod, err := workingModule(); err == nil {
		// The same check every command makes: a sweep removes files, and
		// never anywhere a results directory may not be.
		if dir, err := rundir.Prepare(mod); err == nil {
			noise.Sweep(dir.String(), out)
			atomicfile.RemoveStaleTemps(dir.String(), atomicfile.StaleTemp, out)
		} else {
			fmt.Fprintf(out, "sweep: the results directory: %s; nothing swept there\n", terminal.Escape(err.Error()))
		}
	}
	sweepWarmVictims(ctx, out)
	fmt.Fprintln(out, "sweep: done")
	return nil
}

// sweepWarmVictims drops, in this user's own warm layer, the victim
// databases and roles that runs whose process is gone left behind: the
// warm layer outlives them, so nothing else removes them.
func sweepWarmVictims(ctx context.Context, out io.Writer) {
	canonical, err := canonicalHere()
	if err != nil {
		fmt.Fprintf(out, "sweep: the warm layer's victims are left alone: %v\n", err)
		return
	}
	pool, _, err := faultlayer.WarmTestPlane(ctx, canonical)
	switch {
	case errors.Is(err, faultlayer.ErrNoWarm):
		return
	case err != nil:
		fmt.Fprintf(out, "sweep: the warm layer's victims are left alone: %v\n", err)
		return
	}
	defer pool.Close()
	reclaimVictims(ctx, pool, canonical, "sweep: warm layer", out)
}
