package shard

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/battery"
)

// TimingsFile is where a split looks for the durations of a previous run,
// relative to the results directory. program-gate -merge writes it for the
// whole battery, and an unsharded validate for what it ran; a CI cache (or
// the previous run's artifact) puts it back before the shards start.
const TimingsFile = "shards/timings.json"

// timingsSchema is the "schema" of the timing file.
const timingsSchema = "contested/timings@1"

// maxTimingsSize bounds the timing file read.
const maxTimingsSize = 16 << 20

// ErrBadTimings means the timing file exists but cannot be used.
var ErrBadTimings = errors.New("bad timing file")

// Timings are the durations of top-level tests, by "package test".
type Timings map[string]time.Duration

type timingsFile struct {
	Schema string             `json:"schema"`
	Tests  map[string]float64 `json:"tests"` // seconds
}

func key(pkg, test string) string { return pkg + " " + test }

// weigher returns a test's weight: its duration (at least a millisecond),
// or the mean of the known durations for a test the timings do not know.
func (t Timings) weigher() func(pkg, test string) time.Duration {
	if len(t) == 0 {
		return func(string, string) time.Duration { return defaultWeight }
	}
	var sum time.Duration
	for _, d := range t {
		sum += max(d, time.Millisecond)
	}
	mean := sum / time.Duration(len(t))
	return func(pkg, test string) time.Duration {
		if d, ok := t[key(pkg, test)]; ok {
			return max(d, time.Millisecond)
		}
		return mean
	}
}

// FromBattery is the durations of the top-level tests a battery ran to an
// end (passed or failed; a skip says nothing of a test's length).
func FromBattery(results ...*battery.Result) Timings {
	t := Timings{}
	for _, r := range results {
		if r == nil {
			continue
		}
		for _, x := range r.Tests {
			if strings.Contains(x.Name, "/") || x.Action == "skip" {
				continue
			}
			t[key(x.Package, x.Name)] = x.Elapsed
		}
	}
	return t
}

// ReadTimings reads the timing file of the results directory root: no file
// is no timings (nil, nil); a file that does not parse is an error wrapping
// [ErrBadTimings] that says what to do.
func ReadTimings(root string) (Timings, error) {
	r, err := atomicfile.OpenRoot(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Join(root, TimingsFile), err)
	}
	var f timingsFile
	err = r.ReadJSON(TimingsFile, &f, maxTimingsSize)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("%w: %s: %v; remove it (the split then weighs every test the same) or restore the one the previous run wrote", ErrBadTimings, filepath.Join(root, TimingsFile), err)
	case f.Schema != timingsSchema:
		return nil, fmt.Errorf("%w: %s: schema %q, want %q; remove it or restore the one the previous run wrote", ErrBadTimings, filepath.Join(root, TimingsFile), f.Schema, timingsSchema)
	}
	t := make(Timings, len(f.Tests))
	for k, s := range f.Tests {
		if s < 0 || s > 1e7 {
			return nil, fmt.Errorf("%w: %s: %q takes %v seconds; remove the file or restore the previous run's", ErrBadTimings, filepath.Join(root, TimingsFile), k, s)
		}
		t[k] = time.Duration(s * float64(time.Second))
	}
	return t, nil
}

// WriteTimings writes t as the timing file of the results directory root,
// atomically.
func WriteTimings(root string, t Timings) error {
	f := timingsFile{Schema: timingsSchema, Tests: make(map[string]float64, len(t))}
	for k, d := range t {
		f.Tests[k] = d.Seconds()
	}
	r, err := atomicfile.MakeRoot(root)
	if err != nil {
		return fmt.Errorf("write the timing file: %w", err)
	}
	if err := r.WriteJSON(TimingsFile, f); err != nil {
		return fmt.Errorf("write the timing file: %w", err)
	}
	return nil
}

// SaySlowdown is Slowdown in words, every count with its unit and the
// ratio with what it compares: "3 top-level tests (in 2 packages) that
// also ran in the last whole run took 1.14x the time they took there
// (12.3s now against 10.8s)". Empty when res and t share no test.
func (t Timings) SaySlowdown(res *battery.Result) string {
	var now, before time.Duration
	tests := 0
	pkgs := map[string]bool{}
	for k, d := range FromBattery(res) {
		if was, ok := t[k]; ok && was > 0 {
			now, before, tests = now+d, before+was, tests+1
			pkg, _, _ := strings.Cut(k, " ")
			pkgs[pkg] = true
		}
	}
	if before == 0 {
		return ""
	}
	unit := func(n int, one, many string) string {
		if n == 1 {
			return "1 " + one
		}
		return fmt.Sprintf("%d %s", n, many)
	}
	return fmt.Sprintf("%s (in %s) that also ran in the last whole run took %.2fx the time they took there (%s now against %s)",
		unit(tests, "top-level test", "top-level tests"), unit(len(pkgs), "package", "packages"),
		float64(now)/float64(before), now.Round(10*time.Millisecond), before.Round(10*time.Millisecond))
}

// Slowdown is how much longer the top-level tests res ran to an end took
// than the same tests in t (the last whole run's), summed over the n tests
// both hold: 0 and 0 when they share none.
func (t Timings) Slowdown(res *battery.Result) (ratio float64, n int) {
	var now, before time.Duration
	for k, d := range FromBattery(res) {
		if was, ok := t[k]; ok && was > 0 {
			now, before, n = now+d, before+was, n+1
		}
	}
	if before == 0 {
		return 0, 0
	}
	return float64(now) / float64(before), n
}
