package ledger_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/contested/contested/examples/internal/planted"
	"github.com/contested/contested/internal/faultlayer/faulttest"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gate/verdict"
	"github.com/contested/contested/internal/registry"
	"github.com/contested/contested/internal/rundir"
	"github.com/contested/contested/internal/runenv"
)

// The replay figures: what a seed means. Each benchmark runs the store's reset leg built with a
// planted defect, as go test children attached to one fault layer, the way mage contested
// runs a surface. Run them with a count, not a duration:
//
//	go tool mage bench -filter='Replay|Classified' -benchtime=10x

// BenchmarkReplayReproduces: contested over the reset leg's hardening budget (three seeds,
// picked for their schedules) finds the retry planted inside Store.Transfer, which fails only
// when a reset drops the answer of an applied transfer, and classifies it; then the replay
// command it printed is run as printed, once per iteration. Reported: found (1 or 0), whether
// it was classified FAIL-reproducible, and how many replays of 10 reproduced the failure.
func BenchmarkReplayReproduces(b *testing.B) {
	env, s := defectRun(b, "contested_defect_retryinside")
	ctx := context.Background()
	if found == nil {
		// Once per process: go test runs a benchmark with b.N = 1 before the count asked for.
		seeds := contract.PickSeeds(s.Budget.Hardening.Seeds, s.Legs, 1, rand.Int64N)
		res, err := contract.Run(ctx, s, contract.Options{Env: env, Seeds: seeds, Out: io.Discard})
		if err != nil {
			b.Fatal(err)
		}
		leg, _ := res.Leg("reset")
		found = &leg
		say(b, "contested over seeds %v (covering %v): %s: %s; replay: %s", seeds, contract.Covers(seeds, s.Legs, 1), leg.Verdict, leg.Reason, leg.Replay)
	}
	leg := *found
	if !leg.Verdict.Fail() {
		b.Fatalf("contested did not find the defect: %s (%s)", leg.Verdict, leg.Reason)
	}
	b.ResetTimer()
	reproduced := 0
	for i := range b.N {
		cmd := exec.CommandContext(ctx, "sh", "-c", leg.Replay)
		cmd.Dir = env.ModuleRoot
		cmd.Env = append(os.Environ(), env.WithResultsDir(filepath.Join(b.TempDir(), fmt.Sprint(i))).Environ()...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			reproduced++
		} else {
			say(b, "replay %d passed:\n%s", i+1, planted.Tail(out))
		}
	}
	say(b, "%d of %d replays reproduced the failure", reproduced, b.N)
	b.ReportMetric(b2f(leg.Verdict.Fail()), "found")
	b.ReportMetric(b2f(leg.Verdict == verdict.FailReproducible), "classified-reproducible")
	b.ReportMetric(float64(reproduced)*10/float64(b.N), "reproduced/10")
}

// found is what contested found in BenchmarkReplayReproduces.
var found *verdict.Leg

// say logs one line of a measurement. Nothing may print between go test's benchmark name and
// its result line (mage bench reads the two as one), so the lines go to the benchmark's log,
// which go test prints after the result.
func say(b *testing.B, format string, args ...any) { b.Logf("measure: "+format, args...) }

// BenchmarkNondeterministicClassified: a defect that fails one process in three by the clock,
// whatever the seed. Each iteration runs contested on fresh seeds, one at a time, until one
// fails (at most eight), and takes its classification: a failing seed is rerun up to four
// times with the same seed, and only a failure every rerun repeats is FAIL-reproducible.
// Reported: how many of 10 failures were classified FAIL-nondeterministic, and the seeds run
// per failure found.
func BenchmarkNondeterministicClassified(b *testing.B) {
	env, s := defectRun(b, "contested_defect_flaky")
	ctx := context.Background()
	nondeterministic, found, tried := 0, 0, 0
	for range b.N {
		for range 8 {
			tried++
			seeds := contract.PickSeeds(1, s.Legs, 1, rand.Int64N)
			res, err := contract.Run(ctx, s, contract.Options{Env: env, Seeds: seeds, Out: io.Discard})
			if err != nil {
				b.Fatal(err)
			}
			leg, _ := res.Leg("reset")
			if !leg.Verdict.Fail() {
				continue
			}
			found++
			if leg.Verdict == verdict.FailNondeterministic {
				nondeterministic++
			}
			say(b, "seed %v: %s after %d reruns: %s", seeds, leg.Verdict, res.Seeds[0].Reruns, leg.Reason)
			break
		}
	}
	if found == 0 {
		b.Fatalf("no seed of %d failed: the defect never showed", tried)
	}
	say(b, "%d of %d failures classified FAIL-nondeterministic, over %d seeds", nondeterministic, found, tried)
	b.ReportMetric(float64(nondeterministic)*10/float64(found), "nondeterministic/10")
	b.ReportMetric(float64(tried)/float64(found), "seeds/failure")
}

// defectRun is the run environment of the ledger's store reset leg built with a planted
// defect's tag, attached to this benchmark's fault layer, and the surface narrowed to that leg.
func defectRun(b *testing.B, tag string) (runenv.Env, registry.Surface) {
	b.Helper()
	layer := faulttest.Layer(b)
	root := planted.ModuleRoot(b)
	reg, err := registry.Load(filepath.Join(root, runenv.DefaultRegistry))
	if err != nil {
		b.Fatal(err)
	}
	s, ok := reg.Surface("ledger.store")
	if !ok {
		b.Fatal("ledger.store is not in the registry")
	}
	s.Legs, s.Tests = []string{"reset"}, []string{"TestStoreContract/reset"}
	env := runenv.Env{ModuleRoot: root, Registry: reg.Path, ResultsDir: rundir.Dir(b.TempDir()), Level: 1}
	return env.Attach(append(layer.Env(), "GOFLAGS=-tags="+tag), layer.RunID), s
}

func b2f(v bool) float64 {
	if v {
		return 1
	}
	return 0
}
