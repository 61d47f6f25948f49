package interrupt

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contested/contested/internal/reexec"
)

func TestMain(m *testing.M) {
	reexec.Main(reexec.Roles{
		// stop-cleanly tears down in 600ms once stopped and exits 7.
		"stop-cleanly": func() int {
			ctx, stop := Context(context.Background())
			defer stop()
			fmt.Println("ready")
			<-ctx.Done()
			time.Sleep(600 * time.Millisecond)
			return 7
		},
		// hang starts a tracked child group and never looks at its
		// context, like a read blocked on a FIFO.
		"hang": func() int {
			grace = 2 * time.Second
			_, stop := Context(context.Background())
			defer stop()
			cmd := Command(context.Background(), time.Minute, "sleep", "60")
			untrack, err := Start(cmd)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 3
			}
			defer untrack()
			fmt.Printf("ready %d\n", cmd.Process.Pid)
			select {}
		},
		// force-hooks registers two OnForce hooks that say what they
		// were told, and never stops; envGrace sets its grace period.
		"force-hooks": func() int {
			if g, err := time.ParseDuration(os.Getenv(envGrace)); err == nil {
				grace = g
			}
			for _, n := range []int{1, 2} {
				OnForce(func(why string) { fmt.Fprintf(os.Stderr, "hook %d: %s\n", n, why) })
			}
			_, stop := Context(context.Background())
			defer stop()
			fmt.Println("ready")
			select {}
		},
	})
	os.Exit(m.Run())
}

// helper starts a role and waits for its "ready" line; it returns the
// command, the rest of that line, and the role's stderr so far.
func helper(t *testing.T, role string, env ...string) (*exec.Cmd, string, *strings.Builder) {
	t.Helper()
	cmd := reexec.Command(t, role, env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ready") {
		t.Fatalf("helper %s: %q, %v: %s", role, line, err, stderr.String())
	}
	go io.Copy(io.Discard, out)
	return cmd, strings.TrimSpace(strings.TrimPrefix(line, "ready")), &stderr
}

// wait waits for the helper and returns its exit code and how long it took.
func wait(t *testing.T, cmd *exec.Cmd, since time.Time) (int, time.Duration) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), time.Since(since)
	case <-time.After(30 * time.Second):
		t.Fatal("the helper did not exit within 30s of the signal")
		return 0, 0
	}
}

// TestFirstSignalStopsAndTheCommandTearsDown: SIGTERM or SIGINT cancels
// the context and the command finishes its teardown and exits its own way;
// the same signal repeated at once (GNU timeout signals its child and then
// its group) and a SIGHUP (the supervisor's death) do not cut it short.
func TestFirstSignalStopsAndTheCommandTearsDown(t *testing.T) {
	tests := []struct {
		name string
		sigs []syscall.Signal
	}{
		{"SIGTERM", []syscall.Signal{syscall.SIGTERM}},
		{"SIGINT", []syscall.Signal{syscall.SIGINT}},
		{"SIGTERM delivered twice at once", []syscall.Signal{syscall.SIGTERM, syscall.SIGTERM}},
		{"SIGTERM then the supervisor's SIGHUP", []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd, _, stderr := helper(t, "stop-cleanly")
			start := time.Now()
			for _, s := range tt.sigs {
				cmd.Process.Signal(s)
			}
			code, took := wait(t, cmd, start)
			if code != 7 {
				t.Errorf("exit %d after %s, want 7 (the command's own, after its 600ms teardown): %s", code, took, stderr.String())
			}
			if !strings.Contains(stderr.String(), "stopping; tearing down") {
				t.Errorf("no word of the stop on stderr: %q", stderr.String())
			}
		})
	}
}

// TestAHungCommandEndsAfterTheGraceOrASecondSignal: a command that never
// looks at its context still ends, with exit 1, after the grace period
// (2s here) or on a second signal, saying which, and the process groups it
// tracked are killed with it. (The bounds only keep a broken build from
// hanging the test; the messages tell the two endings apart.)
func TestAHungCommandEndsAfterTheGraceOrASecondSignal(t *testing.T) {
	tests := []struct {
		name    string
		second  syscall.Signal // 0: none
		within  time.Duration
		message string
	}{
		{"grace", 0, 10 * time.Second, "did not finish within 2s"},
		{"second SIGINT", syscall.SIGINT, 10 * time.Second, "a second signal (SIGINT)"},
		{"second SIGTERM", syscall.SIGTERM, 10 * time.Second, "a second signal (SIGTERM)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd, pgid, stderr := helper(t, "hang")
			child, _ := strconv.Atoi(pgid)
			cmd.Process.Signal(syscall.SIGINT)
			start := time.Now()
			if tt.second != 0 {
				time.Sleep(2 * Repeat)
				start = time.Now()
				cmd.Process.Signal(tt.second)
			}
			code, took := wait(t, cmd, start)
			if code != ExitForced || took > tt.within {
				t.Errorf("exit %d after %s, want %d within %s: %s", code, took, ExitForced, tt.within, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.message) || !strings.Contains(stderr.String(), "sweep") {
				t.Errorf("stderr does not say why it ended and what happens to the leftovers: %q", stderr.String())
			}
			if err := gone(-child); err != nil {
				syscall.Kill(-child, syscall.SIGKILL)
				t.Errorf("the tracked child group %d outlived the forced exit: %v", child, err)
			}
		})
	}
}

// TestCommandStopsItsWholeGroup: a child that ignores SIGINT and has a
// child of its own is stopped with all of its group once ctx ends:
// SIGINT, then SIGKILL after stopAfter.
func TestCommandStopsItsWholeGroup(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := Command(ctx, 300*time.Millisecond, "sh", "-c", "trap '' INT; sleep 60 & wait")
	untrack, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	cancel()
	cmd.Wait()
	took := time.Since(start)
	err = gone(-pgid)
	untrack()
	if err != nil {
		syscall.Kill(-pgid, syscall.SIGKILL)
		t.Fatalf("the group outlived its cancellation: %v", err)
	}
	if took > 10*time.Second {
		t.Errorf("Wait took %s after the cancellation; the group's SIGKILL comes 300ms after its SIGINT", took)
	}
}

// gone waits up to two seconds for a process or group (negative) to
// disappear: a killed process stays a zombie until its new parent reaps it.
func gone(pid int) error {
	deadline := time.Now().Add(2 * time.Second)
	for {
		err := syscall.Kill(pid, 0)
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("still there (kill -0: %v)", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestASignalIgnoredAtStartStaysIgnored: under nohup, SIGHUP does not stop
// the command (handling it would undo nohup); SIGTERM still does.
func TestASignalIgnoredAtStartStaysIgnored(t *testing.T) {
	nohup, err := exec.LookPath("nohup")
	if err != nil {
		t.Skip("no nohup here")
	}
	cmd := exec.Command(nohup, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), reexec.Env+"=stop-cleanly")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	r := bufio.NewReader(out)
	if line, err := r.ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("helper: %q, %v: %s", line, err, stderr.String())
	}
	go io.Copy(io.Discard, r)
	cmd.Process.Signal(syscall.SIGHUP)
	time.Sleep(300 * time.Millisecond)
	if strings.Contains(stderr.String(), "stopping") {
		t.Fatalf("a SIGHUP that nohup ignores stopped the command: %s", stderr.String())
	}
	start := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	if code, _ := wait(t, cmd, start); code != 7 || !strings.Contains(stderr.String(), "SIGTERM: stopping") {
		t.Errorf("exit %d, want 7 after a SIGTERM teardown: %s", code, stderr.String())
	}
}

// envGrace is the force-hooks role's grace period.
const envGrace = "INTERRUPT_TEST_GRACE"

// TestAForcedExitCallsItsHooksFirst: a forced exit, by a second signal or
// by a teardown past the grace period, calls every OnForce hook, in the
// order registered and with why, after killing what it tracks and before
// it exits 1; this is how a worker still reports its exit code and a CI
// summary still says the run was stopped.
func TestAForcedExitCallsItsHooksFirst(t *testing.T) {
	tests := []struct {
		name, grace, why string
		second           bool
	}{
		{"a second SIGINT", "1m", "a second signal (SIGINT)", true},
		{"a teardown past the grace", "1s", "the teardown did not finish within 1s", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd, _, stderr := helper(t, "force-hooks", envGrace+"="+tt.grace)
			start := time.Now()
			cmd.Process.Signal(syscall.SIGINT)
			if tt.second {
				time.Sleep(2 * Repeat)
				cmd.Process.Signal(syscall.SIGINT)
			}
			code, _ := wait(t, cmd, start)
			got := stderr.String()
			want := fmt.Sprintf("exiting now (exit %d); what is left is reaped by the next run's sweep (go tool mage sweep)\nhook 1: %s\nhook 2: %s\n", ExitForced, tt.why, tt.why)
			if code != ExitForced || !strings.Contains(got, want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d and stderr ending %q", code, got, ExitForced, want)
			}
		})
	}
}
