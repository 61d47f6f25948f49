package safety

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contested/contested/e2e/internal/e2etest"
	"github.com/contested/contested/internal/dockerenv"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/reap"
)

// slowAdopter is a copy of the adopter whose battery is still running when
// the signal comes, whatever the machine's speed: nothing but the stop
// ends it in time. The tests run the compiled targets (targets), so that
// they can signal them and read their exit code directly: under go tool
// mage, a SIGTERM to the group kills Mage too, and go tool reports a tool
// killed by a signal as exit 0.
func slowAdopter(t *testing.T) string {
	t.Helper()
	return e2etest.Adopter(t, map[string]string{
		"slow_test.go": "package stock\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n\nfunc TestSlowBattery(t *testing.T) { time.Sleep(5 * time.Minute) }\n",
	})
}

// ownLayerEnv is the environment of a run that brings up its own layer
// (the first the machine can: containers, else embedded).
func ownLayerEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CONTESTED_") {
			env = append(env, kv)
		}
	}
	return append(env, "NO_COLOR=1")
}

// stoppedRun starts validate as a GitHub Actions step does (githubJob),
// waits until its battery runs, sends sigs to its process group (as GNU
// timeout and CI runners do) with gap between them, and returns its exit
// code, its output, its run id, how long it took from the first signal to
// its last output, and the job's summary it wrote.
func stoppedRun(t *testing.T, sigs []syscall.Signal, gap time.Duration) (code int, out string, run string, took time.Duration, summary string) {
	t.Helper()
	dir := slowAdopter(t)
	cmd := exec.Command(e2etest.Targets(t), "validate")
	cmd.Dir = dir
	github, summaryFile := githubJob(t)
	cmd.Env = append(ownLayerEnv(), github...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	var b strings.Builder
	lines := bufio.NewScanner(pr)
	runRE := regexp.MustCompile(`validate: run (\S+) in`)
	deadline := time.AfterFunc(10*time.Minute, func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	defer deadline.Stop()
	for lines.Scan() {
		b.WriteString(lines.Text() + "\n")
		if m := runRE.FindStringSubmatch(lines.Text()); m != nil {
			run = m[1]
		}
		if strings.HasPrefix(lines.Text(), "battery: go test") {
			break
		}
	}
	if !strings.Contains(b.String(), "battery: go test") {
		if strings.Contains(b.String(), "cannot run") {
			dockerenv.SkipOrFail(t, "no fault layer comes up here:\n"+b.String())
		}
		t.Fatalf("validate never started its battery:\n%s", b.String())
	}
	time.Sleep(2 * time.Second) // the battery's test binaries are running (TestSlowBattery sleeps)
	start := time.Now()
	for i, s := range sigs {
		if i > 0 {
			time.Sleep(gap)
		}
		syscall.Kill(-cmd.Process.Pid, s)
	}
	done := make(chan error, 1)
	go func() { err := cmd.Wait(); pw.Close(); done <- err }()
	for lines.Scan() {
		b.WriteString(lines.Text() + "\n")
	}
	took = time.Since(start)
	err := <-done
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	if run == "" {
		t.Fatalf("no run id in the output:\n%s", b.String())
	}
	md, err := os.ReadFile(summaryFile)
	if err != nil {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), b.String(), run, took, string(md)
}

// saysStopped checks that a stopped run's job summary and annotation say
// so, once, and that nothing else speaks for the runner.
func saysStopped(t *testing.T, out, summary, signal string) {
	t.Helper()
	if strings.Count(summary, "### contested validate: STOPPED") != 1 || !strings.Contains(summary, "exit 1") || !strings.Contains(summary, signal) {
		t.Errorf("the job's summary does not say once that %s stopped the run:\n%s", signal, summary)
	}
	ownCommands(t, out)
}

// leftovers lists what run left: labelled Docker resources, embedded data
// directories, and processes still working in dir (the battery).
func leftovers(t *testing.T, run string) []string {
	t.Helper()
	var out []string
	if cli, err := dockerenv.Connect(context.Background()); err == nil {
		defer cli.Close()
		left, err := reap.Leftovers(context.Background(), cli, reap.Run(run))
		if err != nil {
			t.Fatal(err)
		}
		if !left.Empty() {
			out = append(out, fmt.Sprintf("docker: %s %v %v", left, left.Containers, left.Networks))
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "contested-embedded-*"))
	for _, d := range dirs {
		if b, err := os.ReadFile(filepath.Join(d, "owner")); err == nil && strings.Contains(string(b), run) {
			out = append(out, "embedded layer "+d)
		}
	}
	return out
}

// batteryProcesses lists the processes whose environment names run: the
// battery's go test and test binaries carry the layer's run id.
func batteryProcesses(run string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), envvar.RunID+"="+run+"\x00") {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "cmdline"))
		if len(cmdline) > 0 {
			out = append(out, strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return out
}

// TestSIGTERMStopsValidateAndItTearsDown: SIGTERM to the group while the
// battery runs stops validate within seconds: the battery's processes are
// gone, the layer it brought up is torn down, it says it was interrupted
// and exits 1, and under GitHub Actions the job's summary and one
// annotation say it was stopped.
//
// The signal tests are not parallel: any layer's bring-up sweeps what runs
// whose owner is gone left, so another test's bring-up could remove a
// leftover of this run before the check sees it. They run alone, before
// the parallel tests.
func TestSIGTERMStopsValidateAndItTearsDown(t *testing.T) {
	code, out, run, took, summary := stoppedRun(t, []syscall.Signal{syscall.SIGTERM}, 0)
	t.Logf("SIGTERM to exit: %s", took.Round(10*time.Millisecond))
	if code != 1 || !strings.Contains(out, "interrupted by SIGTERM") {
		t.Errorf("exit %d, want 1 saying interrupted by SIGTERM:\n%s", code, tail(out))
	}
	saysStopped(t, out, summary, "SIGTERM")
	if strings.Contains(out, "a second signal") || strings.Contains(out, "did not finish within") {
		t.Errorf("one SIGTERM forced the exit instead of a teardown:\n%s", tail(out))
	}
	if left := leftovers(t, run); len(left) > 0 {
		t.Errorf("run %s left %v", run, left)
	}
	if ps := batteryProcesses(run); len(ps) > 0 {
		t.Errorf("run %s left battery processes running: %v", run, ps)
	}
}

// TestASecondSIGINTForcesTheExit: a second Ctrl-C 400ms after the first
// ends validate at once, its battery killed, exit 1, with the job's
// summary and one annotation saying it was stopped; what the teardown did
// not reach is owned by a process that is gone, so the next sweep removes
// it.
func TestASecondSIGINTForcesTheExit(t *testing.T) {
	code, out, run, took, summary := stoppedRun(t, []syscall.Signal{syscall.SIGINT, syscall.SIGINT}, 400*time.Millisecond)
	t.Logf("first SIGINT to exit: %s", took.Round(10*time.Millisecond))
	if code != 1 || !strings.Contains(out, "interrupted by SIGINT") && !strings.Contains(out, "a second signal (SIGINT)") {
		t.Errorf("exit %d, want 1 saying it was interrupted:\n%s", code, tail(out))
	}
	saysStopped(t, out, summary, "SIGINT")
	if ps := batteryProcesses(run); len(ps) > 0 {
		t.Errorf("run %s left battery processes running: %v", run, ps)
	}
	sweep := exec.Command(e2etest.Targets(t), "sweep")
	sweep.Dir, sweep.Env = e2etest.Adopter(t, nil), ownLayerEnv()
	b, err := sweep.CombinedOutput()
	if err != nil {
		t.Fatalf("sweep: %v\n%s", err, b)
	}
	if left := leftovers(t, run); len(left) > 0 {
		t.Errorf("after the sweep, run %s left %v; the sweep said:\n%s\nvalidate said:\n%s", run, left, b, tail(out))
	}
}

func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return strings.Join(lines, "\n")
}
