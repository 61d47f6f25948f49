package command

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/fixture"
	"github.com/contested/contested/internal/interrupt"
	"github.com/contested/contested/internal/secret"
)

// adopterBench is the name bench.json gives the timing of the adopter
// fixture's validate against its go test: it is no Go benchmark (it runs
// go tool mage validate and go test as a user types them), so Bench times
// it itself, in the same run, after the benchmarks.
const adopterBench = "BenchmarkAdopterValidate"

// adopterFixture is the module the e2e tests adopt contested in, relative
// to the module Bench runs in.
const adopterFixture = "testdata/adopter"

// wantsAdopter reports whether filter, go test -bench's pattern, selects
// adopterBench (its first level, as go test matches a top-level name).
func wantsAdopter(filter string) bool {
	re, err := regexp.Compile(strings.Split(filter, "/")[0])
	return err == nil && re.MatchString(adopterBench)
}

// benchRounds is how many timed rounds a -benchtime asks for: its count,
// or 3 for a duration.
func benchRounds(benchtime string) int {
	if n, ok := strings.CutSuffix(benchtime, "x"); ok {
		if c, err := strconv.Atoi(n); err == nil && c > 0 {
			return c
		}
	}
	return 3
}

// benchAdopter times `go tool mage validate` against `go test -count=1
// ./...` in a copy of the adopter fixture (its replace directive pointed at
// dir), in turns, rounds times each after one untimed run of each that
// builds what they need (the magefile, the test binaries). Both run with
// the caller's environment, so both attach to the warm layer when one is up
// ("The pre-push loop"), or both bring up a layer of their own; with a warm
// layer up, go test also runs a third way, with a cache directory of its
// own, so that it brings up its own layer as it would for a developer who
// keeps none (go-test-own-layer). The figures
// are medians; their metric names say which case was measured (-warm- or
// -cold-), so the warm goals are judged only on a run that had the warm
// layer. It returns ok false, and says why on out, when dir has no fixture;
// an error when a run failed (a validate that is not GREEN is no figure).
func benchAdopter(ctx context.Context, dir string, rounds int, out, raw io.Writer) (BenchResult, bool, error) {
	src := filepath.Join(dir, adopterFixture)
	if _, err := os.Stat(filepath.Join(src, "go.mod")); err != nil {
		fmt.Fprintf(out, "bench: %s: no %s here, not timed\n", adopterBench, adopterFixture)
		return BenchResult{}, false, nil
	}
	tmp, err := os.MkdirTemp("", "contested-bench-adopter-")
	if err != nil {
		return BenchResult{}, false, err
	}
	defer os.RemoveAll(tmp)
	work := filepath.Join(tmp, "adopter")
	if err := fixture.Copy(src, work, dir); err != nil {
		return BenchResult{}, false, fmt.Errorf("copy %s: %w", adopterFixture, err)
	}
	fmt.Fprintf(out, "bench: %s: %s copied to %s; one untimed run of each, then %d timed rounds\n", adopterBench, adopterFixture, work, rounds)
	runs := map[string][]string{
		"validate":          {"go", "tool", "mage", "validate"},
		"go-test":           {"go", "test", "-count=1", "./..."},
		"go-test-own-layer": {"go", "test", "-count=1", "./..."},
	}
	// The warm layer's record lives in the user's cache directory: a go
	// test given another one finds no warm layer and brings up a layer of
	// its own, as it does for a developer who keeps none.
	private, err := fixture.PrivateCache(ctx, filepath.Join(tmp, "cache"))
	if err != nil {
		return BenchResult{}, false, err
	}
	env := map[string][]string{"go-test-own-layer": private, "validate-red": {redFlags()}}
	runs["validate-red"] = runs["validate"]
	// This first validate is validate's untimed run; it also says whether
	// there is a warm layer to attach to.
	_, output, err := timeRun(ctx, work, runs["validate"], nil, raw)
	if err != nil {
		return BenchResult{}, false, fmt.Errorf("%s in %s: %w", strings.Join(runs["validate"], " "), adopterFixture, err)
	}
	warm := strings.Contains(output, "attached to the warm layer")
	names := []string{"validate", "go-test", "validate-red"}
	if warm {
		names = append(names, "go-test-own-layer")
	}
	took := map[string][]float64{}
	for round := 0; round <= rounds; round++ {
		order := slices.Clone(names)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, name := range order {
			if round == 0 && name == "validate" {
				continue // it had its untimed run above
			}
			d, output, err := timeRun(ctx, work, runs[name], env[name], raw)
			if name == "validate-red" {
				err = wantRed(output, err)
			}
			if err != nil {
				return BenchResult{}, false, fmt.Errorf("%s in %s: %w", strings.Join(runs[name], " "), adopterFixture, err)
			}
			if round > 0 {
				took[name] = append(took[name], d.Seconds())
			}
		}
	}
	kind := "cold"
	if warm {
		kind = "warm"
	}
	v, g := median(took["validate"]), median(took["go-test"])
	r := BenchResult{Package: "example.com/adopter (" + adopterFixture + ")", Name: adopterBench, Iterations: rounds, Metrics: map[string]float64{
		"validate-" + kind + "-s":        v,
		"go-test-" + kind + "-s":         g,
		"validate/go-test-" + kind:       v / g,
		"validate-" + kind + "-s-spread": slices.Max(took["validate"]) - slices.Min(took["validate"]),
		"go-test-" + kind + "-s-spread":  slices.Max(took["go-test"]) - slices.Min(took["go-test"]),
		"warm-layer":                     map[bool]float64{true: 1}[warm],
	}}
	red := median(took["validate-red"])
	r.Metrics["validate-red-"+kind+"-s"] = red
	r.Metrics["validate-red/validate"] = red / v
	if warm {
		o := median(took["go-test-own-layer"])
		r.Metrics["go-test-own-layer-s"] = o
		r.Metrics["validate-warm/go-test-own-layer"] = v / o
	}
	fmt.Fprintf(raw, "%s\t%d\t%s\n", adopterBench, rounds, formatMetrics(r.Metrics))
	return r, true, nil
}

// redFlags builds the adopter fixture with its planted defect (a failed
// completion batch dropped): its contract goes RED, and validate's ladder
// arbitrates the failing leg, as an on-call engineer's RED run does.
func redFlags() string {
	return "GOFLAGS=" + strings.TrimSpace(os.Getenv("GOFLAGS")+" -tags=adopter_defect")
}

// wantRed is nil for a validate that ended RED (exit 1, saying RED), the
// only figure a RED run gives; err, or an error saying what it was, else.
func wantRed(output string, err error) error {
	var exit *exec.ExitError
	switch {
	case err == nil:
		return errors.New("validate of the planted defect was GREEN: the defect is not planted, so there is no RED to time")
	case errors.As(err, &exit) && exit.ExitCode() == 1 && strings.Contains(output, "RED"):
		return nil
	}
	return err
}

// timeRun runs argv in dir as a user would (NO_COLOR, no results
// directory or surfaces of the caller's), its output scrubbed into raw, and
// returns how long it took and its output. A non-zero exit is an error.
func timeRun(ctx context.Context, dir string, argv, env []string, raw io.Writer) (time.Duration, string, error) {
	cmd := interrupt.Command(ctx, battery.StopAfter, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "NO_COLOR=1", "CONTESTED_RESULTS_DIR=", "CONTESTED_SURFACES="), env...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	start := time.Now()
	untrack, err := interrupt.Start(cmd)
	if err == nil {
		err = cmd.Wait()
	}
	untrack()
	d := time.Since(start)
	output := secret.ScrubString(buf.String())
	fmt.Fprintf(raw, "# %s (%s): %s\n%s", strings.Join(argv, " "), d.Round(time.Millisecond), errString(err), output)
	if err != nil {
		tail := output
		if len(tail) > 2000 {
			tail = tail[len(tail)-2000:]
			if i := strings.IndexByte(tail, '\n'); i >= 0 {
				tail = tail[i+1:]
			}
		}
		return d, output, fmt.Errorf("%w\n%s", err, tail)
	}
	return d, output, nil
}

func errString(err error) string {
	if err == nil {
		return "exit 0"
	}
	return err.Error()
}

// median is the median of xs (the mean of the middle two for an even
// count); xs is left unsorted.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// formatMetrics renders metrics as go test -bench does ("1.5 unit ..."),
// in a stable order.
func formatMetrics(m map[string]float64) string {
	var units []string
	for u := range m {
		units = append(units, u)
	}
	slices.Sort(units)
	var parts []string
	for _, u := range units {
		parts = append(parts, strconv.FormatFloat(m[u], 'g', 6, 64)+" "+u)
	}
	return strings.Join(parts, "\t")
}
