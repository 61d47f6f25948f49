package supervise

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contested/contested/internal/interrupt"
	"github.com/contested/contested/internal/reexec"
	"github.com/contested/contested/internal/workflowtest"
)

// envRole names the worker role the supervisor role starts.
const envRole = "SUPERVISE_TEST_WORKER"

// envMarker names the file a worker writes when its teardown is done.
const envMarker = "SUPERVISE_TEST_MARKER"

func TestMain(m *testing.M) {
	reexec.Main(reexec.Roles{
		"supervisor": func() int {
			return Run(context.Background(), Options{Target: "test", Argv: []string{os.Args[0], "-test.run=^$"},
				Env: []string{reexec.Env + "=" + os.Getenv(envRole)}})
		},
		// supervisor-ended also prints what Ended was told.
		"supervisor-ended": func() int {
			return Run(context.Background(), Options{Target: "test", Argv: []string{os.Args[0], "-test.run=^$"},
				Env: []string{reexec.Env + "=" + os.Getenv(envRole)},
				Ended: func(code int, why string, summarized bool) {
					fmt.Printf("ended %d summarized=%v: %s\n", code, summarized, why)
				}})
		},
		// w-killed-in-block is killed inside a stop-commands block.
		"w-killed-in-block": worker(func() int {
			fmt.Println("::stop-commands::0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f")
			BlockOpened("0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f")
			fmt.Print("::error::from a test, and no newline")
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}),
		"w-summarized": worker(func() int { Summarized(); return 1 }),
		"w-ok":         worker(func() int { return 0 }),
		"w-usage":      worker(func() int { fmt.Fprintln(os.Stderr, "Error: usage: no such surface"); return 2 }),
		"w-panic": worker(func() int {
			go func() { panic("boom in a goroutine") }()
			select {}
		}),
		"w-oom": worker(func() int {
			// Cap the address space a little above what is mapped now, then
			// keep allocating: the runtime dies with "out of memory".
			var lim syscall.Rlimit
			syscall.Getrlimit(syscall.RLIMIT_AS, &lim)
			lim.Cur = vmSize() + 256<<20
			if err := syscall.Setrlimit(syscall.RLIMIT_AS, &lim); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 3
			}
			var keep [][]byte
			for {
				keep = append(keep, make([]byte, 64<<20))
				keep[len(keep)-1][0] = 1
			}
		}),
		"w-sigkill": worker(func() int { syscall.Kill(os.Getpid(), syscall.SIGKILL); select {} }),
		// w-foreign is an executable that is not a contested worker: it
		// ignores the marker and exits 0 without reporting.
		"w-foreign": func() int { return 0 },
		"w-env":     worker(func() int { fmt.Printf("ready %q\n", os.Getenv(EnvWorker)); return 0 }),
		"w-stop": worker(func() int {
			ctx, stop := interrupt.Context(context.Background())
			defer stop()
			fmt.Printf("ready %d\n", os.Getpid())
			<-ctx.Done()
			time.Sleep(300 * time.Millisecond)
			fmt.Println("torn down")
			return 1
		}),
		// w-broken-stdout, once stopped, writes to stdout and stderr
		// (their reader is gone) and then its evidence file, envMarker.
		"w-broken-stdout": worker(func() int {
			ctx, stop := interrupt.Context(context.Background())
			defer stop()
			fmt.Printf("ready %d\n", os.Getpid())
			<-ctx.Done()
			for range 3 {
				fmt.Println("tearing down the layer")
				fmt.Fprintln(os.Stderr, "tearing down the layer")
			}
			if err := os.WriteFile(os.Getenv(envMarker), []byte("torn down\n"), 0o644); err != nil {
				return 5
			}
			return 1
		}),
		"w-hang": worker(func() int {
			_, stop := interrupt.Context(context.Background())
			defer stop()
			fmt.Printf("ready %d\n", os.Getpid())
			select {}
		}),
	})
	os.Exit(m.Run())
}

func worker(f func() int) func() int {
	return func() int {
		if target, ok := Worker(); !ok || target != "test" {
			fmt.Fprintf(os.Stderr, "not a worker of target test (%q, %v)\n", target, ok)
			return 4
		}
		code := f()
		Report(code)
		return code
	}
}

// vmSize is this process's mapped address space, from /proc.
func vmSize() uint64 {
	b, _ := os.ReadFile("/proc/self/statm")
	var pages uint64
	fmt.Sscan(string(b), &pages)
	return pages * uint64(os.Getpagesize())
}

// supervisor starts the supervisor role over a worker role; with nohup,
// as nohup would (SIGHUP ignored, which the worker inherits).
func supervisor(t *testing.T, role string, nohup ...bool) (*exec.Cmd, *bufio.Reader, *strings.Builder) {
	t.Helper()
	cmd := reexec.Command(t, "supervisor", envRole+"="+role)
	if len(nohup) > 0 && nohup[0] {
		cmd.Args = append([]string{"sh", "-c", `trap "" HUP; exec "$0" "$@"`}, cmd.Args...)
		cmd.Path = "/bin/sh"
	}
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
	return cmd, bufio.NewReader(out), &stderr
}

// readAllWithin reads r to its end, failing the test if that takes longer
// than d: a worker nobody stopped holds its stdout open forever.
func readAllWithin(t *testing.T, r io.Reader, d time.Duration) string {
	t.Helper()
	done := make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(r); done <- b }()
	select {
	case b := <-done:
		return string(b)
	case <-time.After(d):
		t.Fatalf("the worker still held its output open %s after the signal: it was not stopped", d)
		return ""
	}
}

func exitCode(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode()
	case <-time.After(60 * time.Second):
		t.Fatal("the supervisor did not exit within 60s")
		return 0
	}
}

// TestExitCodesStayHonest: a worker's own exit code passes through (2
// stays usage), while a crash (a panic in any goroutine, the runtime out
// of memory) or a kill it did not ask for is exit 1 with "internal error",
// never Go's 2.
func TestExitCodesStayHonest(t *testing.T) {
	tests := []struct {
		role     string
		want     int
		internal bool
		detail   string
	}{
		{"w-ok", 0, false, ""},
		{"w-usage", 2, false, ""},
		{"w-panic", 1, true, "panic: boom in a goroutine"},
		{"w-oom", 1, true, "fatal runtime error"},
		{"w-sigkill", 1, true, "killed by SIGKILL"},
		{"w-foreign", 1, true, "without reporting"},
	}
	for _, tt := range tests {
		t.Run(tt.role, func(t *testing.T) {
			cmd, out, stderr := supervisor(t, tt.role)
			go io.Copy(io.Discard, out)
			code := exitCode(t, cmd)
			msg := stderr.String()
			if code != tt.want {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tt.want, tail(msg))
			}
			if strings.Contains(msg, "internal error") != tt.internal || !strings.Contains(msg, tt.detail) {
				t.Errorf("stderr must say internal error: %v, holding %q; got:\n%s", tt.internal, tt.detail, tail(msg))
			}
		})
	}
}

// TestTheWorkerDoesNotPassTheMarkerOn: a worker's children are not
// workers (a nested go tool mage supervises again).
func TestTheWorkerDoesNotPassTheMarkerOn(t *testing.T) {
	cmd, out, stderr := supervisor(t, "w-env")
	line, _ := out.ReadString('\n')
	if code := exitCode(t, cmd); code != 0 || line != "ready \"\"\n" {
		t.Errorf("exit %d, worker saw %s=%s; want 0 and empty: %s", code, EnvWorker, line, stderr.String())
	}
}

// TestSignalsReachTheWorkerOnce: whatever way the request comes (SIGTERM,
// Ctrl-C's SIGINT, SIGTERM twice in a row as GNU timeout sends it, the
// supervisor killed outright), the worker is stopped once and finishes its
// teardown; a second signal later forces it.
func TestSignalsReachTheWorkerOnce(t *testing.T) {
	tests := []struct {
		name     string
		role     string
		send     func(p *os.Process)
		tornDown bool
		stderr   string
		nohup    bool // started as nohup starts it: SIGHUP ignored
	}{
		{"SIGTERM", "w-stop", func(p *os.Process) { p.Signal(syscall.SIGTERM) }, true, "SIGTERM: stopping", false},
		{"SIGINT", "w-stop", func(p *os.Process) { p.Signal(syscall.SIGINT) }, true, "SIGINT: stopping", false},
		{"SIGTERM twice within 50ms", "w-stop", func(p *os.Process) {
			p.Signal(syscall.SIGTERM)
			time.Sleep(50 * time.Millisecond)
			p.Signal(syscall.SIGTERM)
		}, true, "SIGTERM: stopping", false},
		{"supervisor killed", "w-stop", func(p *os.Process) { p.Kill() }, true, "SIGHUP: stopping", false},
		{"supervisor killed under nohup", "w-stop", func(p *os.Process) { p.Kill() }, true, "SIGHUP: stopping", true},
		{"SIGTERM under nohup", "w-stop", func(p *os.Process) { p.Signal(syscall.SIGTERM) }, true, "SIGTERM: stopping", true},
		{"second SIGTERM forces a hung worker", "w-hang", func(p *os.Process) {
			p.Signal(syscall.SIGTERM)
			time.Sleep(2 * Repeat)
			p.Signal(syscall.SIGTERM)
		}, false, "a second signal (SIGTERM)", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd, out, stderr := supervisor(t, tt.role, tt.nohup)
			line, err := out.ReadString('\n')
			var pid int
			if _, perr := fmt.Sscanf(line, "ready %d\n", &pid); perr != nil {
				t.Fatalf("worker: %q, %v: %s", line, err, stderr.String())
			}
			t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL) })
			tt.send(cmd.Process)
			rest := readAllWithin(t, out, time.Minute) // until the worker, which holds stdout too, is gone
			exitCode(t, cmd)
			if strings.Contains(string(rest), "torn down") != tt.tornDown {
				t.Errorf("worker output after the signal: %q; want teardown finished: %v", rest, tt.tornDown)
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr does not hold %q:\n%s", tt.stderr, stderr.String())
			}
		})
	}
}

func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 6 {
		lines = append(lines[:3], lines[len(lines)-3:]...)
	}
	return strings.Join(lines, "\n")
}

// TestAKilledWorkersEndIsToldAndItsBlockEnded: a worker killed inside a
// stop-commands block has it ended by the supervisor, so that the
// runner reads the supervisor's own commands again; Ended hears why it
// ended and that it wrote no summary; a worker that did write one says so.
func TestAKilledWorkersEndIsToldAndItsBlockEnded(t *testing.T) {
	tests := []struct {
		role, want string
	}{
		{"w-killed-in-block", "ended 1 summarized=false: internal error: the test target was killed by SIGKILL"},
		{"w-summarized", "ended 1 summarized=true: \n"},
		{"w-ok", "ended 0 summarized=false: \n"},
	}
	for _, tt := range tests {
		t.Run(tt.role, func(t *testing.T) {
			cmd := reexec.Command(t, "supervisor-ended", envRole+"="+tt.role)
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			_ = cmd.Run()
			out := stdout.String()
			if !strings.Contains(out, tt.want) {
				t.Errorf("stdout lacks %q:\n%s\nstderr:\n%s", tt.want, out, stderr.String())
			}
			if workflowtest.Stopped(out) {
				t.Errorf("the worker's stop-commands block is still open:\n%q", out)
			}
			if c := workflowtest.Commands(out); len(c) > 0 {
				t.Errorf("the runner acts on %+v", c)
			}
		})
	}
}

// TestABrokenStdoutKillsNeitherTheSupervisorNorItsWorker: `go tool mage
// validate | tee log`, then Ctrl-C: the same SIGINT kills tee, and every
// later write to stdout or stderr meets a pipe nobody reads. The worker
// still tears down and writes its evidence, and the supervisor still
// exits with the worker's code instead of dying of SIGPIPE.
func TestABrokenStdoutKillsNeitherTheSupervisorNorItsWorker(t *testing.T) {
	marker := t.TempDir() + "/torn-down"
	cmd := reexec.Command(t, "supervisor", envRole+"=w-broken-stdout", envMarker+"="+marker)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	w.Close()
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ready") {
		t.Fatalf("worker: %q, %v", line, err)
	}
	r.Close() // tee is gone
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the supervisor did not exit within 30s of SIGINT")
	}
	if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); ws.Signaled() || ws.ExitStatus() != 1 {
		t.Errorf("the supervisor ended with %v, want exit 1 (the worker's own code)", cmd.ProcessState)
	}
	if b, err := os.ReadFile(marker); err != nil || string(b) != "torn down\n" {
		t.Errorf("the worker's evidence file: %q, %v; want it written after the writes to the broken pipe", b, err)
	}
}
