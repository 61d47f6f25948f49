package command

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/gate"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gate/shard"
	"github.com/contested/contested/internal/gotest"
	"github.com/contested/contested/internal/rundir"
)

// shardSpec is the shard validate runs: the -shard flag, else
// CONTESTED_SHARD; the zero Spec when neither is set. A bad value, or a
// flag and a variable that disagree, is a usage error saying what to write.
func shardSpec(flagValue string, flagSet bool) (shard.Spec, error) {
	if flagSet && strings.TrimSpace(flagValue) == "" {
		return shard.Spec{}, fmt.Errorf("%w: -shard is empty; write -shard=I/N, such as -shard=2/3", ErrUsage)
	}
	env, envSet := os.LookupEnv(envvar.Shard)
	env = strings.TrimSpace(env)
	var spec, fromEnv shard.Spec
	var err error
	if envSet {
		if env == "" {
			return shard.Spec{}, fmt.Errorf("%w: %s is set but empty; unset it, or write I/N such as %s=2/3", ErrUsage, envvar.Shard, envvar.Shard)
		}
		if fromEnv, err = shard.Parse(envvar.Shard, env); err != nil {
			return shard.Spec{}, fmt.Errorf("%w: %w", ErrUsage, err)
		}
		spec = fromEnv
	}
	if flagValue != "" {
		if spec, err = shard.Parse("-shard", flagValue); err != nil {
			return shard.Spec{}, fmt.Errorf("%w: %w", ErrUsage, err)
		}
		if envSet && spec != fromEnv {
			return shard.Spec{}, fmt.Errorf("%w: -shard=%s and %s=%s disagree: give one of them", ErrUsage, spec, envvar.Shard, fromEnv)
		}
	}
	return spec, nil
}

// sharding is validate's share of a battery split across machines.
type sharding struct {
	spec        shard.Spec
	shared      string
	sharedFrom  string
	module      string
	plan        shard.Plan
	owned       []shard.Owned
	timingsFile string
	stamp       shard.Stamp
}

// planShard reads the inventory and the timing file, splits the battery
// and gives the run its shard's run id under the shared one. A -run,
// -skip or package selection with -shard is a usage error: a shard runs
// its share of the whole battery.
func planShard(ctx context.Context, spec shard.Spec, opts ValidateOptions, ws *workspace, out io.Writer) (*sharding, error) {
	if !wholeBattery(opts) {
		return nil, fmt.Errorf("%w: validate -shard=%s runs its share of the whole battery: drop the package selection and -run/-skip/-short", ErrUsage, spec)
	}
	root := ws.env.ModuleRoot
	module, _ := contract.ModulePath(root)
	shared, from, err := shard.SharedRunID(os.LookupEnv, module, gitHead(ctx, root))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	inv, err := gotest.Packages(ctx, root, opts.Patterns...)
	if err != nil {
		return nil, fmt.Errorf("%w: list the battery's tests to split them: %w", ErrUsage, err)
	}
	timings, err := shard.ReadTimings(ws.env.ResultsDir.String())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	s := &sharding{spec: spec, shared: shared, sharedFrom: from, plan: shard.Split(inv, spec.Total, timings)}
	s.owned = s.plan.Of(spec)
	s.module = module
	if timings != nil {
		s.timingsFile = ws.env.ResultsDir.Join(shard.TimingsFile)
	}
	ws.env.RunID, ws.env.SharedRunID = shard.RunID(shared, spec), true
	n := 0
	for _, o := range s.owned {
		n += len(o.Tests)
	}
	how := "every test weighed the same (no " + shard.TimingsFile + " under the results directory)"
	if timings != nil {
		how = "balanced by " + s.timingsFile
	}
	fmt.Fprintf(out, "validate: shard %s of run %s (from %s): %d top-level tests in %d packages; %s\n", spec, shared, from, n, len(s.owned), how)
	return s, nil
}

// gitHead is the commit checked out in dir, "" when git cannot say.
func gitHead(ctx context.Context, dir string) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "rev-parse", "HEAD")
	cmd.Dir = dir
	b, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// runShare runs the shard's share: its whole packages in one go test, and
// each package it owns only some tests of in a go test of its own with
// -run naming them (so that a name shared by two packages never runs in
// the wrong one). The results are one battery's.
func (s *sharding) runShare(ctx context.Context, opts battery.Options) (*battery.Result, error) {
	var whole []string
	var runs []battery.Options
	for _, o := range s.owned {
		if o.Whole {
			whole = append(whole, o.Package)
			continue
		}
		quoted := make([]string, len(o.Tests))
		for i, t := range o.Tests {
			quoted[i] = regexp.QuoteMeta(t)
		}
		r := opts
		r.Patterns = []string{o.Package}
		r.Args = append(append([]string(nil), opts.Args...), "-run", "^("+strings.Join(quoted, "|")+")$")
		runs = append(runs, r)
	}
	if len(whole) > 0 {
		r := opts
		r.Patterns = whole
		runs = append([]battery.Options{r}, runs...)
	}
	total := &battery.Result{Packages: []battery.Package{}, Tests: []battery.Test{}, Started: time.Now()}
	if len(runs) == 0 {
		fmt.Fprintf(opts.Out, "validate: shard %s owns no tests: nothing to run\n", s.spec)
	}
	for _, r := range runs {
		res, err := battery.Run(ctx, r)
		if err != nil {
			return nil, err
		}
		total.Packages = append(total.Packages, res.Packages...)
		total.Tests = append(total.Tests, res.Tests...)
		total.Elapsed += res.Elapsed
		total.ExitCode = max(total.ExitCode, res.ExitCode)
	}
	return total, nil
}

// writeManifest writes the shard's shard.json beside validate.json: what
// it owned, its stamp, and its records' digests, as they are now.
func (s *sharding) writeManifest(root rundir.Dir, faultDir string, verified *gate.Report, res *battery.Result, out io.Writer) {
	files, err := shard.ReadRecordFiles(faultDir)
	if err != nil {
		notSaved(out, "validate", root.Join(shard.ManifestName), err)
		return
	}
	digests, all := shard.Digests(files)
	m := shard.Manifest{Shard: s.spec, SharedRunID: s.shared, SharedRunIDFrom: s.sharedFrom, RunID: shard.RunID(s.shared, s.spec), Module: s.module,
		Plan:  shard.PlanRef{Digest: s.plan.Digest, Balanced: s.plan.Balanced, Timings: s.timingsFile},
		Owned: s.owned, Stamp: s.stamp, Certified: verified != nil && verified.Certified, BatteryOK: res != nil && res.OK(), Battery: shard.BatteryDigest(res),
		Records: len(files), Digest: all, Files: digests, WrittenAt: time.Now().UTC()}
	if m.Owned == nil {
		m.Owned = []shard.Owned{}
	}
	if err := shard.WriteManifest(root.String(), m); err != nil {
		notSaved(out, "validate", root.Join(shard.ManifestName), err)
		return
	}
	fmt.Fprintf(out, "validate: saved %s (shard %s: %d records, %s)\n", root.Join(shard.ManifestName), s.spec, len(files), all)
}

// saveTimings writes the durations of the tests results ran as the timing
// file the next split is balanced by.
func saveTimings(root rundir.Dir, out io.Writer, results ...*battery.Result) {
	if err := shard.WriteTimings(root.String(), shard.FromBattery(results...)); err != nil {
		notSaved(out, "validate", root.Join(shard.TimingsFile), err)
	}
}
