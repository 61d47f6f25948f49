package command

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/fatih/color"

	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/interrupt"
	"github.com/contested/contested/internal/secret"
)

// BenchOptions configures Bench.
type BenchOptions struct {
	Dir       string
	Benchtime string    // go test -benchtime; default 3x
	Filter    string    // go test -bench; default "."
	Out       io.Writer `json:"-"`
}

// BenchResult is one benchmark's line of output.
type BenchResult struct {
	Package    string             `json:"package"`
	Name       string             `json:"name"`
	Iterations int                `json:"iterations"`
	Metrics    map[string]float64 `json:"metrics"` // unit → value, ns/op included
}

// BenchReport is bench.json.
type BenchReport struct {
	Benchtime string        `json:"benchtime"`
	Filter    string        `json:"filter"`
	Results   []BenchResult `json:"results"`
	// Goals holds every figure that has a goal, the figure measured in this
	// run beside it (absent when its benchmark did not run).
	Goals []BenchGoal   `json:"goals"`
	Took  time.Duration `json:"took_ns"`
}

// BenchGoal is one figure of bench.json with the goal it is held to.
type BenchGoal struct {
	Figure    string   `json:"figure"`    // what it measures, in words
	Benchmark string   `json:"benchmark"` // benchmark name without the GOMAXPROCS suffix
	Metric    string   `json:"metric"`    // the unit the benchmark reports it in
	Goal      string   `json:"goal"`      // "<= 3", ">= 3000"
	Value     *float64 `json:"value,omitempty"`
	Met       *bool    `json:"met,omitempty"`
	// Noise is, for a figure whose benchmark reports its own spread, the
	// margin within which a value on the wrong side of the goal is taken
	// as meeting it (twice the standard error it reported); WithinNoise
	// says the goal was met only so.
	Noise       *float64 `json:"noise,omitempty"`
	WithinNoise bool     `json:"within_noise,omitempty"`
}

// benchGoals are the figures the project holds itself to. Ratios are
// measured within one run, since the machines are noisy; absolute figures
// are kept for the record and read against their ratio.
var benchGoals = []struct {
	figure, bench, metric string
	max                   bool // the goal is an upper bound
	bound                 float64
	// noise names the metric of the same benchmark that holds the
	// figure's standard error; the goal allows two of it.
	noise string
}{
	{"layer bring-up and teardown, containers over embedded (warm images)", "BenchmarkBringUp", "containers/embedded", true, 3, ""},
	{"layer bring-up and teardown, containers, seconds", "BenchmarkBringUp", "containers-s/op", true, 4, ""},
	{"attach to the warm layer over a cold containers bring-up", "BenchmarkWarmAttach", "warm/cold", true, 0.2, ""},
	{"attach to the warm layer, seconds", "BenchmarkWarmAttach", "warm-attach-s/op", true, 1, ""},
	{"leg overhead p50, reset, ms", "BenchmarkLegOverhead/reset", "p50-ms", true, 5, ""},
	{"leg overhead p99, reset, ms", "BenchmarkLegOverhead/reset", "p99-ms", true, 20, ""},
	{"leg overhead p50, disconnect, ms", "BenchmarkLegOverhead/disconnect", "p50-ms", true, 5, ""},
	{"leg overhead p99, disconnect, ms", "BenchmarkLegOverhead/disconnect", "p99-ms", true, 20, ""},
	{"leg overhead p50, pool-exhaustion, ms", "BenchmarkLegOverhead/pool-exhaustion", "p50-ms", true, 10, ""},
	{"lease acquire+release pairs/s, 16 clients", "BenchmarkLeaseThroughput", "pairs/s-16-clients", false, 3000, ""},
	{"proxied through the layer over a bare Toxiproxy binary in front of the same Postgres (its published port)", "BenchmarkProxiedVsDirect", "proxied/bare", false, 1, "proxied/bare-se"},
	{"validate of the adopter fixture with the warm layer over its go test -count=1 ./... bringing up its own layer", adopterBench, "validate-warm/go-test-own-layer", true, 0.5, ""},
	{"validate of the adopter fixture, warm layer, seconds", adopterBench, "validate-warm-s", true, 5, ""},
	{"RED validate of the adopter fixture with its planted defect (every failing leg arbitrated) over its GREEN validate", adopterBench, "validate-red/validate", true, 4, ""},
}

// judgeGoals puts each goal beside the figure this run measured.
func judgeGoals(results []BenchResult) []BenchGoal {
	var out []BenchGoal
	for _, g := range benchGoals {
		bg := BenchGoal{Figure: g.figure, Benchmark: g.bench, Metric: g.metric}
		if g.max {
			bg.Goal = "<= " + strconv.FormatFloat(g.bound, 'g', -1, 64)
		} else {
			bg.Goal = ">= " + strconv.FormatFloat(g.bound, 'g', -1, 64)
		}
		for _, r := range results {
			if benchName(r.Name) != g.bench {
				continue
			}
			if v, ok := r.Metrics[g.metric]; ok {
				met := v <= g.bound
				if !g.max {
					met = v >= g.bound
				}
				if se, ok := r.Metrics[g.noise]; ok && g.noise != "" {
					margin := 2 * se
					bg.Noise = &margin
					if !met && (g.max && v-margin <= g.bound || !g.max && v+margin >= g.bound) {
						met, bg.WithinNoise = true, true
					}
				}
				bg.Value, bg.Met = &v, &met
			}
		}
		out = append(out, bg)
	}
	return out
}

// benchName drops the -GOMAXPROCS suffix go test adds to a benchmark name.
func benchName(name string) string {
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			return name[:i]
		}
	}
	return name
}

// benchPackages are the packages with benchmarks, in the order they run:
// bring-up per provider (cold and warm), per-leg overhead, proxied against
// direct throughput, gate verification at 10k and 100k records, lease
// throughput with 16 clients, porcupine check time, the ledger's own, and
// the replay figures (a schedule-dependent defect found and replayed, a
// nondeterministic one classified).
var benchPackages = []string{
	"./faultrecord", "./contested/history", "./examples/ledger/oracle",
	"./internal/faultlayer", "./contested", "./internal/images", "./examples/ledger", "./internal/secret", "./internal/battery",
}

// Bench runs the project's benchmarks and writes a table and
// bench/bench.json under the results directory. Every figure the
// benchmarks report as a ratio (containers/embedded, cold/warm, 16/1
// clients, proxied/direct, 100k/10k, 8k/2k) was measured in one run.
func Bench(ctx context.Context, opts BenchOptions) error {
	ctx, cancel := withSignals(ctx)
	defer cancel()
	if opts.Benchtime == "" {
		opts.Benchtime = "3x"
	}
	if opts.Filter == "" {
		opts.Filter = "."
	}
	// The benchmarks bring up fault layers from the environment.
	if err := checkBenchFlags(opts); err != nil {
		return err
	}
	if err := checkVariables(varLayer); err != nil {
		return err
	}
	dir, err := moduleDir(opts.Dir)
	if err != nil {
		return err
	}
	root, err := resultsRoot(dir)
	if err != nil {
		return err
	}
	hintIgnore(ctx, dir, root, opts.Out)
	start := time.Now()
	var pkgs []string
	for _, p := range benchPackages {
		if ok, _ := filepath.Glob(filepath.Join(dir, p, "*_test.go")); len(ok) > 0 {
			pkgs = append(pkgs, p)
		}
	}
	raw, err := createArtifact(root, filepath.Join("bench", "bench.txt"))
	if err != nil {
		return fmt.Errorf("create bench.txt: %w", err)
	}
	defer raw.Close()
	args := append([]string{"test", "-run", "^$", "-bench", opts.Filter, "-benchtime", opts.Benchtime, "-timeout", "60m"}, pkgs...)
	fmt.Fprintf(opts.Out, "bench: go %s\n", strings.Join(args, " "))
	cmd := interrupt.Command(ctx, battery.StopAfter, "go", args...)
	cmd.Dir = dir
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout
	untrack, err := interrupt.Start(cmd)
	if err != nil {
		return err
	}
	defer untrack()
	rep := BenchReport{Benchtime: opts.Benchtime, Filter: opts.Filter}
	rep.Results = readBench(stdout, raw, opts.Out)
	waitErr := cmd.Wait()
	var adopterErr error
	if wantsAdopter(opts.Filter) && ctx.Err() == nil {
		fmt.Fprintf(opts.Out, "bench: %s\n", adopterBench)
		r, ok, err := benchAdopter(ctx, dir, benchRounds(opts.Benchtime), opts.Out, raw)
		if ok {
			rep.Results = append(rep.Results, r)
		}
		if err != nil {
			adopterErr = fmt.Errorf("%w: %s: %v", ErrRed, adopterBench, err)
			fmt.Fprintf(opts.Out, "bench: %s: %v\n", adopterBench, err)
		}
	}
	rep.Took = time.Since(start)
	rep.Goals = judgeGoals(rep.Results)
	if path, err := saveJSON(root, filepath.Join("bench", "bench.json"), rep); err != nil {
		return fmt.Errorf("bench: NOT saved %s: %w", path, err)
	}
	writeBenchTable(opts.Out, rep)
	writeGoals(opts.Out, rep.Goals)
	fmt.Fprintf(opts.Out, "bench: %s, %s and %s\n", root.Join("bench", "bench.json"), root.Join("bench", "bench.txt"), rep.Took.Round(time.Second))
	if waitErr != nil {
		return errors.Join(fmt.Errorf("%w: a benchmark failed (see %s): %v", ErrRed, root.Join("bench", "bench.txt"), waitErr), adopterErr)
	}
	return adopterErr
}

// readBench reads go test -bench's output: every line goes to raw,
// scrubbed of secrets (relayed child output); packages, results and
// failures are named on out; the results are returned.
func readBench(stdout io.Reader, raw, out io.Writer) []BenchResult {
	var results []BenchResult
	pkg := ""
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := secret.ScrubString(sc.Text())
		fmt.Fprintln(raw, line)
		switch {
		case strings.HasPrefix(line, "pkg: "):
			pkg = strings.TrimPrefix(line, "pkg: ")
			fmt.Fprintf(out, "bench: %s\n", pkg)
		case strings.HasPrefix(line, "Benchmark"):
			if r, ok := parseBenchLine(pkg, line); ok {
				results = append(results, r)
				fmt.Fprintf(out, "bench:   %s\n", r.Name)
			}
		case strings.HasPrefix(line, "--- FAIL"), strings.HasPrefix(line, "FAIL"), strings.HasPrefix(line, "panic:"):
			fmt.Fprintf(out, "bench: %s\n", line)
		}
	}
	return results
}

// checkBenchFlags refuses a -benchtime that is neither a count (3x) nor a
// duration (2s) and a -filter that is not go test -bench's pattern, before
// anything is built.
func checkBenchFlags(opts BenchOptions) error {
	bt := opts.Benchtime
	if n, ok := strings.CutSuffix(bt, "x"); ok {
		if c, err := strconv.Atoi(n); err != nil || c < 1 {
			return fmt.Errorf("%w: -benchtime=%q: a count is a positive number and x, such as 3x", ErrUsage, bt)
		}
	} else if d, err := time.ParseDuration(bt); err != nil || d <= 0 {
		return fmt.Errorf("%w: -benchtime=%q is neither a count (3x) nor a duration (2s)", ErrUsage, bt)
	}
	for _, part := range strings.Split(opts.Filter, "/") {
		if _, err := regexp.Compile(part); err != nil {
			return fmt.Errorf("%w: -filter=%q: %v", ErrUsage, opts.Filter, err)
		}
	}
	return nil
}

// parseBenchLine reads "BenchmarkX-2  3  123 ns/op  1.5 foo/op ...".
func parseBenchLine(pkg, line string) (BenchResult, bool) {
	f := strings.Fields(line)
	if len(f) < 4 || len(f)%2 != 0 {
		return BenchResult{}, false
	}
	n, err := strconv.Atoi(f[1])
	if err != nil {
		return BenchResult{}, false
	}
	r := BenchResult{Package: pkg, Name: f[0], Iterations: n, Metrics: map[string]float64{}}
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return BenchResult{}, false
		}
		r.Metrics[f[i+1]] = v
	}
	return r, true
}

func writeBenchTable(w io.Writer, rep BenchReport) {
	fmt.Fprintf(w, "\n%s (benchtime %s)\n", bold("benchmarks"), rep.Benchtime)
	for _, r := range rep.Results {
		var units []string
		for u := range r.Metrics {
			units = append(units, u)
		}
		sort.Slice(units, func(i, j int) bool {
			// Ratios first: they are the figures to read.
			ri, rj := !strings.Contains(units[i], "/op") && strings.Contains(units[i], "/"), !strings.Contains(units[j], "/op") && strings.Contains(units[j], "/")
			if ri != rj {
				return ri
			}
			return units[i] < units[j]
		})
		var parts []string
		for _, u := range units {
			parts = append(parts, fmt.Sprintf("%s %s", fmtFloat(r.Metrics[u]), u))
		}
		fmt.Fprintf(w, "  %-48s %s\n", strings.TrimPrefix(r.Name, "Benchmark"), strings.Join(parts, "  "))
	}
}

// writeGoals prints each goal with this run's figure beside it.
func writeGoals(w io.Writer, goals []BenchGoal) {
	fmt.Fprintf(w, "\n%s\n", bold("goals"))
	for _, g := range goals {
		switch {
		case g.Value == nil:
			fmt.Fprintf(w, "  %-70s %-9s not measured in this run\n", g.Figure, g.Goal)
		case *g.Met && g.WithinNoise:
			fmt.Fprintf(w, "  %-70s %-9s %s\n", g.Figure, g.Goal, color.GreenString(fmtFloat(*g.Value)+" (within noise ±"+fmtFloat(*g.Noise)+")"))
		case *g.Met:
			fmt.Fprintf(w, "  %-70s %-9s %s\n", g.Figure, g.Goal, color.GreenString(fmtFloat(*g.Value)))
		default:
			fmt.Fprintf(w, "  %-70s %-9s %s\n", g.Figure, g.Goal, color.RedString(fmtFloat(*g.Value)+" (missed)"))
		}
	}
}

func fmtFloat(v float64) string {
	switch {
	case v >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
}
