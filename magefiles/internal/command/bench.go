package command

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/interrupt"
	"github.com/contested/contested/internal/secret"
)

// BenchOptions configures Bench.
type BenchOptions struct {
	Dir       string
	Benchtime string // go test -benchtime; default 3x
	Filter    string // go test -bench; default "."
	Out       io.Writer
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
	Took      time.Duration `json:"took_ns"`
}

// benchPackages are the packages with benchmarks, in the order they run:
// bring-up per provider (cold and warm), per-leg overhead, proxied against
// direct throughput, gate verification at 10k and 100k records, lease
// throughput with 16 clients, porcupine check time, the ledger's own, and
// the replay figures (a schedule-dependent defect found and replayed, a
// nondeterministic one classified).
var benchPackages = []string{
	"./faultrecord", "./contested/history", "./examples/ledger/oracle",
	"./faultlayer", "./contested", "./internal/images", "./examples/ledger",
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
	rep.Took = time.Since(start)
	if path, err := saveJSON(root, filepath.Join("bench", "bench.json"), rep); err != nil {
		return fmt.Errorf("bench: NOT saved %s: %w", path, err)
	}
	writeBenchTable(opts.Out, rep)
	fmt.Fprintf(opts.Out, "bench: %s, %s and %s\n", filepath.Join(root, "bench", "bench.json"), filepath.Join(root, "bench", "bench.txt"), rep.Took.Round(time.Second))
	if waitErr != nil {
		return fmt.Errorf("%w: a benchmark failed (see %s): %v", ErrRed, filepath.Join(root, "bench", "bench.txt"), waitErr)
	}
	return nil
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
