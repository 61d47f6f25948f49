package cluster

import (
	"bufio"
	"context"
	"fmt"
	"github.com/contested/contested/internal/testlog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/dockerenv"
	"github.com/contested/contested/internal/reap"
	"github.com/contested/contested/internal/reexec"
)

func TestMain(m *testing.M) {
	reexec.Main(reexec.Roles{"rig": rigProcess})
	os.Exit(m.Run())
}

// moduleRoot is this repository's root, where the service is built from.
func moduleRoot(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// rigProcess runs the rig as a separate process, for the tests that
// interrupt or kill it. RIG_KEEP keeps it up.
func rigProcess() int {
	_, err := Run(context.Background(), Options{
		Dir: os.Getenv("RIG_DIR"), ResultsRoot: os.Getenv("RIG_RESULTS"),
		Keep: os.Getenv("RIG_KEEP") != "", Transfers: 90, Out: os.Stdout,
	})
	if err != nil {
		fmt.Println("rig:", err)
		return 1
	}
	return 0
}

// TestClusterRig is a green run of the rig on containers, with the legs'
// records in the battery's results, so the gate counts the cluster class.
func TestClusterRig(t *testing.T) {
	dockerenv.Require(t)
	root, err := faultrecord.ResultsDir()
	if err != nil {
		t.Fatal(err)
	}
	artifacts := t.TempDir()
	rep, err := Run(context.Background(), Options{Dir: moduleRoot(t), ResultsRoot: artifacts, RecordDir: root,
		TestName: t.Name(), Out: testlog.Writer(t)})
	if err != nil {
		t.Fatalf("a healthy rig is not green: %v", err)
	}
	if rep.Mode != "containers" || len(rep.Legs) != len(legs) {
		t.Fatalf("mode %s, %d legs; want containers and %d legs", rep.Mode, len(rep.Legs), len(legs))
	}
	for _, l := range rep.Legs {
		if !l.Fired || l.Record == "" || len(l.Oracles) != 3 {
			t.Errorf("leg %s: fired %v, record %q, %d oracles", l.Name, l.Fired, l.Record, len(l.Oracles))
		}
	}
	for _, f := range []string{"ps.txt", "logs.txt", "legs.json"} {
		b, err := os.ReadFile(filepath.Join(artifacts, "cluster", f))
		if err != nil || len(b) == 0 {
			t.Errorf("artifact %s missing or empty: %v", f, err)
		}
	}
	logs, _ := os.ReadFile(filepath.Join(artifacts, "cluster", "logs.txt"))
	for i := 1; i <= 3; i++ {
		if !strings.Contains(string(logs), fmt.Sprintf("[replica-%d]", i)) {
			t.Errorf("logs.txt has no line of replica-%d", i)
		}
	}
	left, err := reap.Leftovers(context.Background(), dockerenv.Require(t), reap.Run(rep.Run))
	if err != nil {
		t.Fatal(err)
	}
	if !left.Empty() {
		t.Errorf("the rig left %s after a normal run: %+v", left, left)
	}
}

// TestClusterRigOnLocalProcesses runs the same legs with replicas as local
// processes, the way the rig runs without Docker.
func TestClusterRigOnLocalProcesses(t *testing.T) {
	rep, err := Run(context.Background(), Options{Dir: moduleRoot(t), ResultsRoot: t.TempDir(), Local: true, Transfers: 120, Out: testlog.Writer(t)})
	if err != nil {
		t.Fatalf("local rig: %v", err)
	}
	if rep.Mode != "local processes" {
		t.Errorf("mode %q, want local processes", rep.Mode)
	}
}

func TestTooFewReplicasIsAUsageError(t *testing.T) {
	_, err := Run(context.Background(), Options{Dir: moduleRoot(t), ResultsRoot: t.TempDir(), Replicas: 2})
	if err == nil || !strings.Contains(err.Error(), "between 3 and 9") {
		t.Fatalf("err = %v, want a usage error", err)
	}
}

// startRig runs the rig in a child process and returns once its replicas
// are up.
func startRig(t *testing.T, env ...string) (*exec.Cmd, *strings.Builder) {
	t.Helper()
	cmd := reexec.Command(t, "rig", append([]string{"RIG_DIR=" + moduleRoot(t), "RIG_RESULTS=" + t.TempDir()}, env...)...)
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	up := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		once := false
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if !once && strings.Contains(sc.Text(), "replicas up") {
				once = true
				close(up)
			}
		}
		if !once {
			close(up)
		}
	}()
	select {
	case <-up:
	case <-time.After(5 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("the rig did not come up:\n%s", out.String())
	}
	return cmd, &out
}

func TestSIGINTMidRunLeavesNothingLabelled(t *testing.T) {
	cli := dockerenv.Require(t)
	cmd, out := startRig(t)
	cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("the rig did not stop within 2 minutes of SIGINT:\n%s", out)
	}
	if !strings.Contains(out.String(), "tearing down") {
		t.Errorf("the rig did not say it tore down:\n%s", out)
	}
	left, err := reap.Leftovers(context.Background(), cli, reap.OwnedBy(cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if !left.Empty() {
		t.Errorf("SIGINT mid-run left %s: %+v", left, left)
	}
}

func TestSIGKILLedRigIsSweptByTheNextRun(t *testing.T) {
	cli := dockerenv.Require(t)
	cmd, _ := startRig(t)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	ctx := context.Background()
	left, err := reap.Leftovers(ctx, cli, reap.OwnedBy(cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if len(left.Containers) < 3 {
		t.Fatalf("SIGKILL left %s: the test did not catch the rig running", left)
	}
	// The sweep is the first thing Run does.
	if err := Sweep(ctx, testlog.Writer(t)); err != nil {
		t.Fatal(err)
	}
	if left, _ = reap.Leftovers(ctx, cli, reap.OwnedBy(cmd.Process.Pid)); !left.Empty() {
		t.Errorf("after the sweep, the killed rig still has %s: %+v", left, left)
	}
}

func TestAKeptRigStaysUpUntilTheNextSweep(t *testing.T) {
	cli := dockerenv.Require(t)
	cmd, out := startRig(t, "RIG_KEEP=1")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("kept rig: %v\n%s", err, out)
	}
	if !strings.Contains(out.String(), "kept up for inspection") {
		t.Errorf("the rig does not say it was kept:\n%s", out)
	}
	ctx := context.Background()
	left, _ := reap.Leftovers(ctx, cli, reap.OwnedBy(cmd.Process.Pid))
	if len(left.Containers) < 5 {
		t.Fatalf("kept rig has %s, want the replicas, Postgres and Toxiproxy still there", left)
	}
	if err := Sweep(ctx, testlog.Writer(t)); err != nil {
		t.Fatal(err)
	}
	if left, _ = reap.Leftovers(ctx, cli, reap.OwnedBy(cmd.Process.Pid)); !left.Empty() {
		t.Errorf("the next sweep did not reap the kept rig: %s", left)
	}
}
