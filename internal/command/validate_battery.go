package command

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/capacity"
	"github.com/contested/contested/internal/dockerenv"
	"github.com/contested/contested/internal/faultdir"
	"github.com/contested/contested/internal/gate"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gate/ladder"
	"github.com/contested/contested/internal/gate/report"
	"github.com/contested/contested/internal/gate/shard"
	"github.com/contested/contested/internal/hostevents"
	"github.com/contested/contested/internal/legstart"
	"github.com/contested/contested/internal/replayenv"
	"github.com/contested/contested/internal/rundir"
	"github.com/contested/contested/internal/runenv"
	"github.com/contested/contested/internal/touched"
)

// stamp purges the previous run's evidence and writes a fresh gate stamp.
func (v *validation) stamp() error {
	if err := v.clearEarlier(); err != nil {
		return err
	}
	if err := gate.WriteStamp(v.faultDir(), v.env.RunID); err != nil {
		return fmt.Errorf("write the gate stamp: %w", err)
	}
	fmt.Fprintf(v.out, "validate: purged old records and wrote %s\n", filepath.Join(v.faultDir(), faultdir.StampName))
	if v.shard != nil {
		st, err := shard.ReadStamp(v.faultDir())
		if err != nil {
			return err
		}
		v.shard.stamp = st
	}
	return nil
}

// clearEarlier leaves the results directory to this run: the run before's
// fault records, reports and legs' start records are purged, and its
// pages, issue bodies and battery output go aside under
// previous/<its run id>/ (rundir), so that this run's reports link, and
// its directory holds, its own evidence only. Every run does it, also one
// that reuses everything and runs nothing.
func (v *validation) clearEarlier() error {
	prev := previousRunID(v.env.ResultsDir)
	if err := gate.Purge(v.faultDir()); err != nil {
		return fmt.Errorf("purge old records: %w", err)
	}
	// The legs' start records are the battery's, like its fault records.
	if err := atomicfile.EmptyDir(v.env.ResultsDir.String(), legstart.DirName); err != nil {
		return fmt.Errorf("purge the legs' start records: %w", err)
	}
	// The gate's purge leaves the page rendered from its report to us.
	if err := os.Remove(v.env.ResultsDir.Join(report.HTML{}.Path())); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the previous run's fault report: %w", err)
	}
	if _, err := v.env.ResultsDir.Rotate(prev, v.out); err != nil {
		return fmt.Errorf("move the previous run's pages aside: %w", err)
	}
	return nil
}

// runBattery runs go test over the module with the run environment, its
// events saved, while the machine is sampled. The registry's [battery]
// packages_per_core sets go test's -p (flags of validate's own come later
// and win), which is only the ceiling: another package starts only while
// the machine's run queue is under two per core (capacity.Admission), so
// the battery takes what the machine can give, its own load and a noisy
// neighbour's alike.
func (v *validation) runBattery(ctx context.Context, patterns, args []string) (*battery.Result, error) {
	ceiling := v.reg.Battery.P(runtime.GOMAXPROCS(0))
	if ceiling > 0 {
		args = append([]string{"-p", strconv.Itoa(ceiling)}, args...)
	}
	queue := capacity.FollowRunQueue(ctx)
	defer queue.Stop()
	root := v.env.ResultsDir
	events, err := createArtifact(root, filepath.Join("battery", "go-test.json"))
	if err != nil {
		return nil, fmt.Errorf("create the battery's event log: %w", err)
	}
	sampler := startSampler(ctx, root)
	host := watchHost(ctx, v.env.RunID)
	neighbour, err := v.armNoise(ctx)
	if err != nil {
		events.Close()
		sampler.Stop()
		host.Stop()
		return nil, err
	}
	logs, dropLogs := v.testLogs()
	defer dropLogs()
	bo := battery.Options{Dir: v.env.ModuleRoot, Patterns: patterns, Args: args,
		Env: v.env.Environ(), Out: v.out, Events: events, Binaries: v.binaries, TestLogs: logs,
		Admit: capacity.Admission{Queue: queue}.Admit}
	var res *battery.Result
	if v.shard != nil {
		res, err = v.shard.runShare(ctx, bo)
	} else {
		res, err = battery.Run(ctx, bo)
	}
	v.recordNoise(neighbour, res)
	events.Close()
	v.replay = replayEnvs(v.env, res, v.reuse.sourceEnv)
	v.rep.ReplayEnv = v.replay
	if say := res.AtOnce(); say != "" {
		fmt.Fprintf(v.out, "battery: %s; another started only while the machine's run queue was under 2 per core\n", say)
	}
	v.capacity = sampler.Stop()
	v.rep.Capacity = &v.capacity
	for _, i := range host.Stop() {
		v.interference = append(v.interference, ladder.Interference{At: i.At, What: i.Say()})
		fmt.Fprintf(v.out, "validate: interference: %s\n", i.Say())
	}
	v.rep.Interference = v.interference
	if path, err := saveJSON(root, rundir.CapacityJSON, v.capacity); err != nil {
		notSaved(v.out, "validate", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRed, err)
	}
	v.rep.Battery = res
	return res, nil
}

// testLogs is the directory the battery's test binaries log what they
// read to: reuse's, which it keeps until it has certified the run, or one
// of the replays' own, gone once they are read (drop).
func (v *validation) testLogs() (dir string, drop func()) {
	if v.reuse.logs != "" {
		return v.reuse.logs, func() {}
	}
	dir, err := os.MkdirTemp("", "contested-testlogs-")
	if err != nil {
		fmt.Fprintf(v.out, "validate: no directory for the tests' logs of what they read (%v): replays carry no variable the tests read\n", err)
		return "", func() {}
	}
	return dir, func() { os.RemoveAll(dir) }
}

// replayEnvs are the variables each package's tests read that its
// replays must set (package replayenv): from the logs of what they read,
// and from what its source names (sourceEnv), which covers what the log
// cannot see (package init, TestMain, a worker). A package go test ran
// itself logged nothing, and its replays carry what its source names.
func replayEnvs(env runenv.Env, res *battery.Result, sourceEnv func(pkg string) []string) *replayenv.Set {
	if res == nil {
		return nil
	}
	read := map[string][]string{}
	for pkg, log := range res.TestLogs {
		if rec, err := touched.ParseFile(log, touched.Paths{Root: env.ModuleRoot, Dir: env.ModuleRoot}); err == nil {
			read[pkg] = rec.Env
		}
	}
	for _, p := range res.Packages {
		if names := sourceEnv(p.Name); len(names) > 0 {
			read[p.Name] = slices.Compact(slices.Sorted(slices.Values(append(read[p.Name], names...))))
		}
	}
	return replaySet(env, read)
}

// replaySet is the replays' variables of the packages whose tests read
// the variables read names; GOFLAGS too, when it is set, since a replay
// builds the test again. Nil when no replay needs any.
func replaySet(env runenv.Env, read map[string][]string) *replayenv.Set {
	mod, _ := contract.ModulePath(env.ModuleRoot)
	set := &replayenv.Set{Module: mod, Packages: map[string][]replayenv.Var{}}
	given := given(env.Environ())
	var build []replayenv.Var
	if f := os.Getenv("GOFLAGS"); strings.TrimSpace(f) != "" {
		build = replayenv.Read([]string{"GOFLAGS"}, nil, os.LookupEnv)
	}
	for pkg, names := range read {
		names = slices.Sorted(slices.Values(names))
		if vars := append(slices.Clone(build), replayenv.Read(names, given, os.LookupEnv)...); len(vars) > 0 {
			set.Packages[pkg] = vars
		}
	}
	if len(set.Packages) == 0 {
		return nil
	}
	return set
}

// previousRunID is the run id of the validate.json the run before left,
// "" when there is none.
func previousRunID(root rundir.Dir) string {
	var last struct {
		RunID string `json:"run_id"`
	}
	r, err := atomicfile.OpenRoot(root.String())
	if err != nil || r.ReadJSON(rundir.ValidateJSON, &last, atomicfile.MaxArtifact) != nil {
		return ""
	}
	return last.RunID
}

// testsRan is how many tests of pkg ran to an end in the battery.
func testsRan(res *battery.Result, pkg string) int {
	n := 0
	for _, t := range res.Tests {
		if t.Package == pkg {
			n++
		}
	}
	return n
}

// startSampler samples the machine (and the project's containers, when an
// engine answers) every two seconds while the battery runs.
func startSampler(ctx context.Context, root rundir.Dir) *capacity.Sampler {
	var stats capacity.Stats
	if cli, err := dockerenv.Connect(ctx); err == nil {
		stats = cli
	}
	return capacity.Start(ctx, root.String(), stats, 2*time.Second)
}

// watchHost follows the Docker engine's events for this run's containers
// while the battery runs: another run's sweep of one of them is
// interference, which the ladder names as such.
func watchHost(ctx context.Context, run string) *hostevents.Watch {
	var d hostevents.Eventer
	if cli, err := dockerenv.Connect(ctx); err == nil {
		d = cli
	}
	return hostevents.Follow(ctx, d, run)
}
