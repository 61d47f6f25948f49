package testmodule

import (
	"strconv"
	"strings"
)

// QuietTest is the source of a test file of package pkg holding test
// name, which needs a quiet machine: it samples the kernel's run queue
// (the running field of /proc/loadavg) every 10 ms, samples times, and
// fails when the median held seven threads per core or more. A neighbour
// of eight busy threads per core always makes it fail; a machine to
// itself never does. What the ladder tells apart with it is a test that
// fails alone from one that fails only when the machine is busy.
//
// When the environment variable QUIET_SIGNAL names a directory, the
// test's first run there (the one that creates QUIET_SIGNAL/started)
// first waits, up to 20 s, for the run queue to reach seven per core,
// and creates QUIET_SIGNAL/done once it has sampled it: a test starts
// other work at the first file and stops it at the second, to spoil
// exactly one run.
func QuietTest(pkg, name string, samples int) string {
	return strings.NewReplacer("PKG", pkg, "NAME", name, "SAMPLES", strconv.Itoa(samples)).Replace(quietTest)
}

const quietTest = `package PKG

import (
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

func runQueue() int {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	running, _, _ := strings.Cut(f[3], "/")
	n, _ := strconv.Atoi(running)
	return n
}

func NAME(t *testing.T) {
	first := false
	if dir := os.Getenv("QUIET_SIGNAL"); dir != "" {
		f, err := os.OpenFile(filepath.Join(dir, "started"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if first = err == nil; first {
			f.Close()
			defer os.WriteFile(filepath.Join(dir, "done"), nil, 0o600)
			for deadline := time.Now().Add(20 * time.Second); runQueue() < 7*runtime.NumCPU() && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	var queue []int
	for range SAMPLES {
		queue = append(queue, runQueue())
		time.Sleep(10 * time.Millisecond)
	}
	sort.Ints(queue)
	if q := queue[len(queue)/2]; q >= 7*runtime.NumCPU() {
		t.Fatalf("%d threads waited for %d cores: this test needs a quiet machine", q, runtime.NumCPU())
	}
}
`
