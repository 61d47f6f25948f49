package verdict

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contested/contested/e2e/internal/e2etest"
)

// BenchmarkAdopterValidatesBesideANeighbour runs, in one run, the adopter
// fixture's validate with CONTESTED_NOISE=cpu:2 ten times on the machine
// as it is, then ten times beside two busy loops, each through go tool
// mage as a user types it, with -full so that every run has a battery
// (and a neighbour beside it). Its battery takes a second or two: the
// short battery whose neighbour used to measure against no baseline. Every
// run must fire its neighbour and be GREEN; it reports how many did, the
// seconds a validate took and the median and least slowdown the probe
// measured (the threshold is 1.1), on both sides.
func BenchmarkAdopterValidatesBesideANeighbour(b *testing.B) {
	dir := e2etest.Adopter(b, nil)
	e2etest.Targets(b)
	const runs = 10
	type side struct {
		fired, green int
		took         time.Duration
		slowdowns    []float64
	}
	run := func(s *side, label string, i int) {
		start := time.Now()
		out, code := e2etest.GoToolMage(b, dir, []string{"CI=", "CONTESTED_NOISE=cpu:2"}, "validate", "-full")
		s.took += time.Since(start)
		var v e2etest.ValidateJSON
		e2etest.ReadJSON(b, filepath.Join(dir, "test-results", "validate.json"), &v)
		fired := v.Noise != nil && v.Noise.Fired()
		if fired {
			s.fired++
			s.slowdowns = append(s.slowdowns, v.Noise.Slowdown)
		}
		if code == 0 && v.Green && strings.Contains(out, "validate: GREEN") {
			s.green++
		}
		if !fired || code != 0 {
			b.Errorf("%s validate %d: exit %d, neighbour %+v:\n%s", label, i+1, code, v.Noise, out)
		}
	}
	var quiet, noisy side
	b.ResetTimer()
	for range b.N {
		for i := range runs {
			run(&quiet, "quiet", i)
		}
		stop := busyLoops(b, 2)
		for i := range runs {
			run(&noisy, "beside two busy loops", i)
		}
		stop()
	}
	for _, s := range []struct {
		name string
		side
	}{{"quiet", quiet}, {"noisy", noisy}} {
		n := float64(runs * b.N)
		b.ReportMetric(float64(s.fired)/float64(b.N), "fired/10-"+s.name)
		b.ReportMetric(float64(s.green)/float64(b.N), "green/10-"+s.name)
		b.ReportMetric(s.took.Seconds()/n, "s/validate-"+s.name)
		b.ReportMetric(median(s.slowdowns), "slowdown-"+s.name)
		if len(s.slowdowns) > 0 {
			b.ReportMetric(slices.Min(s.slowdowns), "min-slowdown-"+s.name)
		}
	}
}

// busyLoops starts n shell loops that spin on the CPU, as a saturated CI
// machine's other jobs do, and returns what stops them. They die with the
// benchmark (a parent-death signal) and are stopped by its cleanup, so
// nothing is left running.
func busyLoops(tb testing.TB, n int) (stop func()) {
	tb.Helper()
	var cmds []*exec.Cmd
	for range n {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			tb.Fatalf("start a busy loop: %v", err)
		}
		cmds = append(cmds, cmd)
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		for _, c := range cmds {
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
			_ = c.Wait()
		}
	}
	tb.Cleanup(stop)
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		tb.Logf("%d busy loops started; load %s", n, strings.Fields(string(b))[0])
	}
	return stop
}

func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	vs = slices.Clone(vs)
	slices.Sort(vs)
	return vs[len(vs)/2]
}
