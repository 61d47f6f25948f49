package mutants

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/fatih/color"

	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/interrupt"
	"github.com/contested/contested/internal/secret"
)

// Options configures Run.
type Options struct {
	// Dir is the module root, an absolute path.
	Dir string
	// Targets are the packages to mutate, from Resolve.
	Targets []Target
	// Accepted are the registry's accepted survivors.
	Accepted []Accepted
	// Threshold is the lowest kill rate, in percent; 0 for none.
	Threshold float64
	// Env is added to this process's environment for gremlins and the
	// tests it runs: the fault layer's coordinates, a results directory of
	// their own, the registry.
	Env []string
	// Results is the results directory; Work, a directory under it that
	// Run may fill (gremlins' configuration, output files and logs).
	Results *atomicfile.Root
	Work    string
	// Workers is how many mutants are tested at once; default the number
	// of CPUs.
	Workers int
	// TimeoutCoefficient bounds each mutant's tests to this many times the
	// package's coverage run; default DefaultTimeoutCoefficient.
	TimeoutCoefficient int
	Out                io.Writer
}

// DefaultTimeoutCoefficient is gremlins' own default: a mutant's tests may
// take three times as long as the coverage run of its package.
const DefaultTimeoutCoefficient = 3

// Mutations are the mutation types mutants enables: gremlins' defaults.
// Each is set explicitly, so no .gremlins.yaml changes what runs.
var Mutations = []string{"ARITHMETIC_BASE", "CONDITIONALS_BOUNDARY", "CONDITIONALS_NEGATION", "INCREMENT_DECREMENT", "INVERT_NEGATIVES"}

// gremlinsTool is how mutants runs gremlins: as a tool of the module
// (go.mod's tool directive), the way it runs Mage.
var gremlinsTool = []string{"tool", "gremlins"}

// Install is the command that pins gremlins as a tool of a module.
const Install = "go get -tool github.com/go-gremlins/gremlins/cmd/gremlins@v0.6.0"

// CheckTool makes sure the module in dir has gremlins as a tool (and builds
// it, so the first package's time is not spent compiling gremlins).
func CheckTool(ctx context.Context, dir string) error {
	cmd := interrupt.Command(ctx, 2*time.Second, "go", append([]string{"tool", "-n"}, gremlinsTool[1:]...)...)
	cmd.Dir = dir
	out, err := runCaptured(cmd)
	if err != nil {
		return fmt.Errorf("%w: go tool -n gremlins in %s: %v: %s; pin it as a tool of the module: %s", ErrNoTool, dir, err, strings.TrimSpace(out), Install)
	}
	return nil
}

func runCaptured(cmd *exec.Cmd) (string, error) {
	var b strings.Builder
	cmd.Stdout, cmd.Stderr = &b, &b
	untrack, err := interrupt.Start(cmd)
	if err != nil {
		return "", err
	}
	err = cmd.Wait()
	untrack()
	return b.String(), err
}

// Run mutates each target in turn with gremlins and returns the judged
// report. A package that gremlins cannot measure (its tests fail with no
// mutation, it does not build) is reported with its error and makes the
// report red; Run goes on with the others. Run's own error means it could
// not run at all, or was cancelled.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if opts.Workers <= 0 {
		opts.Workers = runtime.NumCPU()
	}
	if opts.TimeoutCoefficient <= 0 {
		opts.TimeoutCoefficient = DefaultTimeoutCoefficient
	}
	if err := opts.Results.Write(path.Join(opts.Work, "gremlins.yaml"), []byte("# mutants passes every setting on the command line\n")); err != nil {
		return nil, fmt.Errorf("write gremlins' configuration: %w", err)
	}
	rep := &Report{Threshold: opts.Threshold, Workers: opts.Workers, TimeoutCoefficient: opts.TimeoutCoefficient, Mutations: Mutations}
	start := time.Now()
	var used []bool
	for i, t := range opts.Targets {
		fmt.Fprintf(opts.Out, "mutants: %s (%d of %d): gathering coverage, then testing each covered mutant\n", t.Dir, i+1, len(opts.Targets))
		pr, u, err := runTarget(ctx, opts, i, t)
		if err != nil {
			return nil, err
		}
		used = orInto(used, u)
		rep.Packages = append(rep.Packages, pr)
		writePackageLine(opts.Out, pr)
	}
	rep.Stale = stale(opts.Accepted, used, opts.Targets)
	rep.Took = time.Since(start)
	rep.Judge()
	return rep, nil
}

// runTarget runs gremlins on one package and summarizes its output.
func runTarget(ctx context.Context, opts Options, i int, t Target) (PackageResult, []bool, error) {
	pr := PackageResult{Target: t}
	start := time.Now()
	name := fmt.Sprintf("%d-%s", i+1, safeName(t.Dir))
	outRel := path.Join(opts.Work, name+".json")
	logRel := path.Join(opts.Work, name+".log")
	logf, err := opts.Results.Create(logRel)
	if err != nil {
		return pr, nil, fmt.Errorf("create %s: %w", logRel, err)
	}
	defer logf.Close()
	cmd := interrupt.Command(ctx, 10*time.Second, "go", gremlinsArgs(opts.Results.Path(), opts, t, outRel)...)
	cmd.Dir = opts.Dir
	cmd.Env = append(withoutGremlinsEnv(os.Environ()), opts.Env...)
	// CI=true: a test that would skip for want of a fault layer fails
	// instead, so a mutant that breaks the layer's bring-up (the package
	// under test may be part of it) is killed, not passed over by skips.
	cmd.Env = append(cmd.Env, "NO_COLOR=1", "CI=true", goflags())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return pr, nil, err
	}
	cmd.Stderr = cmd.Stdout
	untrack, err := interrupt.Start(cmd)
	if err != nil {
		return pr, nil, fmt.Errorf("start gremlins: %w", err)
	}
	p := progress{out: opts.Out, pkg: t.Dir, coefficient: opts.TimeoutCoefficient}
	var tail []string
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := secret.ScrubString(sc.Text())
		fmt.Fprintln(logf, line)
		tail = append(tail, line)
		if len(tail) > 40 {
			tail = tail[1:]
		}
		p.line(line)
	}
	waitErr := cmd.Wait()
	untrack()
	pr.Took, pr.Coverage = time.Since(start), p.coverage
	if ctx.Err() != nil {
		return pr, nil, fmt.Errorf("mutants: %s: %w", t.Dir, ctx.Err())
	}
	logPath := opts.Results.Join(logRel)
	if waitErr != nil {
		pr.Error = fmt.Sprintf("gremlins failed (%v); its log is %s:\n%s", waitErr, logPath, strings.Join(tail, "\n"))
		return pr, nil, nil
	}
	ms, err := readOutput(opts, outRel, t, tail)
	if err != nil {
		pr.Error = fmt.Sprintf("%v (log: %s)", err, logPath)
		return pr, nil, nil
	}
	if n, err := Reclassify(ctx, opts.Dir, t, ms); err != nil {
		fmt.Fprintf(opts.Out, "mutants: %s: %v; a string concatenation's + turned into - counts as gremlins says (killed)\n", t.Dir, err)
	} else if n > 0 {
		fmt.Fprintf(opts.Out, "mutants: %s: %d mutants turn a string concatenation's + into -, which does not compile: not viable, not killed\n", t.Dir, n)
	}
	for j := range ms {
		if ms[j].Status == Lived || ms[j].Status == TimedOut {
			if src, err := os.ReadFile(filepath.Join(opts.Dir, filepath.FromSlash(ms[j].File))); err == nil {
				describe(&ms[j], src)
			}
		}
	}
	s := Summarize(ms, opts.Accepted)
	pr.Summary = s
	if r, ok := s.Counts.Rate(); ok {
		pr.Rate = &r
	}
	return pr, s.used, nil
}

// readOutput reads gremlins' output file. gremlins writes none for a
// package without a single mutant, and says so.
func readOutput(opts Options, rel string, t Target, tail []string) ([]Mutant, error) {
	data, err := opts.Results.ReadFile(rel, atomicfile.MaxArtifact)
	if errors.Is(err, os.ErrNotExist) && len(tail) > 0 && strings.Contains(strings.Join(tail, "\n"), "No results to report") {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read gremlins' output for %s: %w", t.Dir, err)
	}
	return ParseOutput(data, t.Dir)
}

// gremlinsArgs is the go command line that mutates one package: every
// setting explicit, the package's subdirectories (other packages, each its
// own target) and its build-constrained files left out.
func gremlinsArgs(results string, opts Options, t Target, outRel string) []string {
	args := append([]string(nil), gremlinsTool...)
	args = append(args, "unleash",
		"--config", filepath.Join(results, opts.Work, "gremlins.yaml"),
		"--output", filepath.Join(results, outRel),
		"--workers", strconv.Itoa(opts.Workers),
		"--timeout-coefficient", strconv.Itoa(opts.TimeoutCoefficient),
		"--exclude-files", "/",
	)
	for _, f := range t.Skip {
		args = append(args, "--exclude-files", "^"+regexp.QuoteMeta(f)+"$")
	}
	for _, m := range Types {
		on := false
		for _, e := range Mutations {
			on = on || e == m
		}
		args = append(args, "--"+strings.ToLower(strings.ReplaceAll(m, "_", "-"))+"="+strconv.FormatBool(on))
	}
	return append(args, filepath.Join(opts.Dir, filepath.FromSlash(t.Dir)))
}

// goflags adds to the user's GOFLAGS what keeps each mutant's time bound
// honest. -trimpath: gremlins tests each mutant in a copy of the module,
// and without it every package of the copy would compile again (a build's
// cache key holds its directory), so the first mutants would time out on a
// build the coverage run never paid for. -count=1: a coverage run answered
// from the test cache would take a second and bound every mutant to three.
func goflags() string {
	return "GOFLAGS=" + strings.TrimSpace(os.Getenv("GOFLAGS")+" -trimpath -count=1")
}

// withoutGremlinsEnv drops GREMLINS_* variables, which would change
// gremlins' settings behind mutants' back.
func withoutGremlinsEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "GREMLINS_") {
			out = append(out, kv)
		}
	}
	return out
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// safeName turns a package directory into a file name: "./a/b" → "a_b".
func safeName(dir string) string {
	s := strings.Trim(unsafeName.ReplaceAllString(strings.TrimPrefix(dir, "./"), "_"), "_.")
	if s == "" {
		return "root"
	}
	return s
}

// progress relays gremlins' lines as mutants' progress: the coverage time,
// and each mutant that was tested (not-covered ones only count).
type progress struct {
	out         io.Writer
	pkg         string
	coefficient int
	coverage    time.Duration
	tested      int
}

var (
	coverageLine = regexp.MustCompile(`Gathering coverage\.\.\. done in (\S+)`)
	mutantLine   = regexp.MustCompile(`^\s*(KILLED|LIVED|TIMED OUT|NOT VIABLE) (\S+) at (\S+)$`)
)

func (p *progress) line(l string) {
	if m := coverageLine.FindStringSubmatch(l); m != nil {
		p.coverage, _ = time.ParseDuration(m[1])
		fmt.Fprintf(p.out, "mutants: %s: coverage gathered in %s; each mutant's tests may take %s\n", p.pkg, p.coverage.Round(100*time.Millisecond), (p.coverage * time.Duration(p.coefficient)).Round(100*time.Millisecond))
		return
	}
	m := mutantLine.FindStringSubmatch(l)
	if m == nil {
		return
	}
	p.tested++
	st := m[1]
	switch Status(st) {
	case Lived:
		st = color.RedString("SURVIVED")
	case TimedOut:
		st = color.YellowString(st)
	}
	fmt.Fprintf(p.out, "mutants: %s: #%d %s %s at %s\n", p.pkg, p.tested, st, m[2], m[3])
}

func orInto(a, b []bool) []bool {
	for len(a) < len(b) {
		a = append(a, false)
	}
	for i, v := range b {
		a[i] = a[i] || v
	}
	return a
}
