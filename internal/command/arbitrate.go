package command

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/fatih/color"

	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/capacity"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/faultlayer"
	"github.com/contested/contested/internal/faultlayer/noise"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gate/flakes"
	"github.com/contested/contested/internal/gate/ladder"
	"github.com/contested/contested/internal/legstart"
	"github.com/contested/contested/internal/replayenv"
	"github.com/contested/contested/internal/rundir"
)

// ArbitrateOptions configures Arbitrate.
type ArbitrateOptions struct {
	Dir  string
	Test string // a test id: TestX, TestX/sub, or import/path.TestX/sub
	// Rerun walks the ladder even for a test the last validate run on
	// this code saw pass; without it that run's evidence answers (NO
	// FAILURE) in the time it takes to read it.
	Rerun bool
	Out   io.Writer `json:"-"`
}

// Arbitrate walks the arbitration ladder for one failing test, contract
// test or not, and prints its owner and action, saving ladder/<test>.json
// and ladder/<test>.md (a ready-to-paste "fix:" issue body) under the
// results directory. It uses the capacity samples, the legs' seeds, the
// neighbour and the battery of the last validate run, when there are any.
// A test that battery saw pass, on this code, is answered from it (NO
// FAILURE, exit 0, no layer, no rerun) unless Rerun is set.
// Exit: 3 when the fault layer cannot run or the module's tests cannot be
// listed; 2 for an unknown test id; 0 for a test that did not fail (not in
// the last validate run, nor in any rerun: nothing is saved, whatever its
// flake history says); otherwise 1: a failing test always ends with an
// owner and an action to take.
func Arbitrate(ctx context.Context, opts ArbitrateOptions) error {
	ctx, cancel := withSignals(ctx)
	defer cancel()
	out := opts.Out
	if strings.TrimSpace(opts.Test) == "" {
		return fmt.Errorf("%w: name the failing test: go tool mage arbitrate TestStoreContract/reset", ErrUsage)
	}
	// Everything the ladder will read, before step 1 lists tests and long
	// before step 3 reruns anything.
	if err := checkVariables(varLayer, varLevel, varSeed, varSeeds, varTimeout, varNoise); err != nil {
		return err
	}
	ws, err := openWorkspace(opts.Dir)
	if err != nil {
		return err
	}
	dir, root := ws.env.ModuleRoot, ws.env.ResultsDir
	cfg, err := layerConfig(ws, out)
	if err != nil {
		return err
	}
	lo := ladder.Options{Env: ws.env, Registry: ws.reg, Out: out, Contracts: map[string]*contract.Result{}}
	// A name no _test.go file declares is refused from the sources alone,
	// in well under a second, before the registry is consulted.
	if err := declaredTest(ctx, dir, opts.Test); err != nil {
		return err
	}
	// Step 1 first: an unknown test is refused before any layer comes up.
	if _, err := ladder.Locate(ctx, opts.Test, lo); err != nil && !errors.Is(err, ladder.ErrNotContractTest) {
		return arbitrateError(err)
	}
	hintIgnore(ctx, dir, root, out)
	history := readHistory(ctx, root, ws.reg.Guard.CanonicalDatabases, out)
	showHistory(history, opts.Test, out)
	lo.History = history
	rev := flakes.ReadRevision(ctx, dir)
	last := lastValidate(root, out)
	lo.Seen, lo.SeenRunID, lo.Noise, lo.Interference, lo.Replay = last.Battery, last.RunID, last.Noise, last.Interference, last.ReplayEnv
	if last.Battery != nil && !last.Revision.Same(rev) {
		// A failure of other code says nothing of this code's.
		lo.Stale = fmt.Sprintf("the last validate ran other code (%s; this is %s), so its failures say nothing of this code's", last.Revision.Say(), rev.Say())
		fmt.Fprintf(out, "ladder: %s\n", lo.Stale)
		lo.Seen, lo.Interference = nil, nil
	}
	if o, ok := ladder.FromSeen(opts.Test, lo); ok && !opts.Rerun {
		// The last validate on this code saw it pass: that is the answer,
		// without a layer or a rerun.
		fmt.Fprintln(out)
		o.Write(out)
		fmt.Fprintf(out, "\nladder: %s: no failure to arbitrate; no outcome saved, no issue body\n", color.GreenString(string(ladder.NoFailure)))
		return nil
	}
	if l, err := faultlayer.Up(ctx, cfg); err != nil {
		reportUpError(out, err)
		lo.LayerErr = err
	} else {
		defer l.Close(context.WithoutCancel(ctx))
		p, _ := Preflight(ctx, l, true, root, out)
		lo.Preflight, lo.Env = &p, lo.Env.Attach(l.Env(), l.RunID)
	}
	if c, err := capacity.Load(root.Join(rundir.CapacityJSON)); err == nil {
		lo.Capacity = c
		fmt.Fprintf(out, "ladder: using the capacity samples of the last validate run (%d samples)\n", len(c.Samples))
	}
	if starts, _, err := legstart.Read(root.String()); err == nil {
		lo.Starts = legstart.OfRun(starts, last.RunID)
	}
	if spec, set, _ := noise.FromEnv(); set && !spec.Zero() {
		lo.Beside = &spec
		fmt.Fprintf(out, "ladder: a test that does not fail every rerun alone is rerun beside a noisy neighbour, %s (%s)\n", spec, envvar.Noise)
	}
	var closeBinaries func()
	lo.Binaries, closeBinaries = testBinaries(root, out)
	defer closeBinaries()
	o, err := ladder.Walk(ctx, opts.Test, lo)
	if err != nil {
		return arbitrateError(err)
	}
	appendRuns(context.WithoutCancel(ctx), root, ws.reg.Guard.CanonicalDatabases, "arbitrate", lo.Env.RunID, o.Runs, rev, out)
	fmt.Fprintln(out)
	o.Write(out)
	fmt.Fprintln(out)
	if o.NoFailure() {
		fmt.Fprintf(out, "ladder: %s: no failure to arbitrate; no outcome saved, no issue body\n", color.GreenString(string(ladder.NoFailure)))
		return nil
	}
	saveOutcome(root, o, out)
	if o.Owner == ladder.FaultLayer {
		return fmt.Errorf("%w: owner %s: %s", ErrCannotRun, o.Owner, o.Action)
	}
	return fmt.Errorf("%w: owner %s", ErrRed, o.Owner)
}

// declaredTest refuses, with ErrUsage, a test id whose top-level name no
// _test.go file of its package (or of the module, without a package)
// declares as a function. A test that go test would list is always
// declared so; the reverse is left to go test -list in step 1 (a file
// behind a build tag, a package that does not build). When the sources
// cannot be listed it says nothing and step 1 decides.
func declaredTest(ctx context.Context, dir, id string) error {
	pkg, name := ladder.SplitID(id)
	top, _, _ := strings.Cut(name, "/")
	pattern := pkg
	if pattern == "" {
		pattern = "./..."
	}
	cmd := exec.CommandContext(ctx, "go", "list", "-e", "-json=Dir,TestGoFiles,XTestGoFiles", pattern)
	cmd.Dir = dir
	b, err := cmd.Output()
	if err != nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	files := 0
	for dec.More() {
		var p struct {
			Dir                       string
			TestGoFiles, XTestGoFiles []string
		}
		if err := dec.Decode(&p); err != nil {
			return nil
		}
		for _, f := range append(p.TestGoFiles, p.XTestGoFiles...) {
			files++
			ok, err := declaresFunc(filepath.Join(p.Dir, f), top)
			if err != nil || ok {
				return nil
			}
		}
	}
	return fmt.Errorf("%w: unknown test: %s is not a test of %s (none of its %d _test.go files declares func %s); give a test name as the battery reports it", ErrUsage, top, pattern, files, top)
}

// declaresFunc reports whether a Go file declares a top-level function
// (no receiver) named name.
func declaresFunc(path, name string) (bool, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		return false, err
	}
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == name {
			return true, nil
		}
	}
	return false, nil
}

// arbitrateError maps a ladder error to the command's: an unknown test or
// one that is not a contract test is bad input; a module whose tests
// cannot be listed at all cannot be arbitrated.
func arbitrateError(err error) error {
	switch {
	case errors.Is(err, ladder.ErrUnknownTest):
		return fmt.Errorf("%w: %v", ErrUsage, err)
	case errors.Is(err, ladder.ErrCannotList):
		return fmt.Errorf("%w: %v; fix what go says (go.mod, a module it cannot find) and arbitrate again", ErrCannotRun, err)
	}
	return err
}

// lastRun is what arbitrate reads of the last validate run.
type lastRun struct {
	RunID    string          `json:"run_id"`
	Battery  *battery.Result `json:"battery"`
	Noise    *noise.Evidence `json:"noise"`
	Revision flakes.Revision `json:"revision"`
	// Interference is what other runs on this Docker host did to that
	// run's containers during its battery.
	Interference []ladder.Interference `json:"interference"`
	// ReplayEnv are the variables its packages' tests read: the reruns
	// run with them again.
	ReplayEnv *replayenv.Set `json:"replay_env"`
}

// lastValidate is the last validate run (validate.json under the results
// directory), empty when there is none or it cannot be read.
func lastValidate(root rundir.Dir, out io.Writer) lastRun {
	var last lastRun
	r, err := atomicfile.OpenRoot(root.String())
	if err != nil {
		return lastRun{}
	}
	if err := r.ReadJSON(rundir.ValidateJSON, &last, atomicfile.MaxArtifact); err != nil || last.Battery == nil {
		return lastRun{}
	}
	fmt.Fprintf(out, "ladder: comparing with the last validate run (run %s: %s)\n", last.RunID, last.Battery.Tally())
	return last
}

// saveOutcome saves ladder/<test>.json and ladder/<test>.md (a fix: issue
// body) under the results directory and says which were saved and which
// were not.
func saveOutcome(root rundir.Dir, o *ladder.Outcome, out io.Writer) {
	base := filepath.Join("ladder", ladder.FileName(o.Test))
	if path, err := saveJSON(root, base+".json", o); err != nil {
		notSaved(out, "ladder", path, err)
	} else {
		fmt.Fprintf(out, "ladder: saved %s\n", path)
	}
	if path, err := saveArtifact(root, base+".md", []byte(o.Issue())); err != nil {
		notSaved(out, "ladder", path, err)
	} else {
		fmt.Fprintf(out, "ladder: saved %s (a fix: issue body)\n", path)
	}
}

// ladderBudget is how long validate spends arbitrating failing tests:
// CONTESTED_LADDER_BUDGET, default ten minutes.
func ladderBudget() (time.Duration, error) {
	v := strings.TrimSpace(os.Getenv(envvar.LadderBudget))
	if v == "" {
		return 10 * time.Minute, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%w: %s=%q is not a duration such as 10m", ErrUsage, envvar.LadderBudget, v)
	}
	return d, nil
}

// paintOwner paints an owner's words (the decision's) by who it is.
func paintOwner(o ladder.Owner, words string) string {
	switch o {
	case ladder.Component:
		return color.RedString(words)
	case ladder.FaultLayer:
		return color.MagentaString(words)
	default:
		return color.YellowString(words)
	}
}
