package levers

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Worker is a process crash-and-resume kills and restarts: the Process of
// a leg. It builds a fresh command for each start, since an exec.Cmd runs
// once, and sends the process's output to a log (a test's, line by line).
type Worker struct {
	log   Logger
	make  func() *exec.Cmd
	mu    sync.Mutex
	cmd   *exec.Cmd
	done  chan struct{}
	err   error
	kills []string // exit statuses of killed generations: the injector-side proof
	runs  int
}

var _ Process = (*Worker)(nil)

// Logger takes a worker's output, one line per call: a testing.TB.
type Logger interface {
	Log(args ...any)
}

// NewWorker returns a worker that runs make's command, not started yet;
// a command without Stdout and Stderr of its own logs its output to log.
func NewWorker(log Logger, make func() *exec.Cmd) *Worker {
	return &Worker{log: log, make: make}
}

// Start starts a new generation of the worker.
func (w *Worker) Start(context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	cmd := w.make()
	if cmd.Stdout == nil && w.log != nil {
		cmd.Stdout = logWriter{w.log, fmt.Sprintf("worker#%d: ", w.runs+1)}
	}
	if cmd.Stderr == nil {
		cmd.Stderr = cmd.Stdout
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	w.runs++
	w.cmd, w.done, w.err = cmd, make(chan struct{}), nil
	go func(cmd *exec.Cmd, done chan struct{}) {
		err := cmd.Wait()
		w.mu.Lock()
		w.err = err
		w.mu.Unlock()
		close(done)
	}(cmd, w.done)
	return nil
}

// Kill sends SIGKILL to the running generation, waits for it and returns
// its exit status. A worker that had already exited is not killed: the
// crash did not happen mid-work, and the error says so.
func (w *Worker) Kill(ctx context.Context) (string, error) {
	w.mu.Lock()
	cmd, done := w.cmd, w.done
	w.mu.Unlock()
	if cmd == nil {
		return "", errors.New("no worker is running")
	}
	select {
	case <-done:
		return "", fmt.Errorf("worker exited (%v) before it could be killed mid-work", w.exitErr())
	default:
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return "", fmt.Errorf("kill worker: %w", err)
	}
	select {
	case <-done:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		return "", fmt.Errorf("worker exited with %v, not by SIGKILL", cmd.ProcessState)
	}
	status := fmt.Sprintf("pid %d %s", cmd.Process.Pid, cmd.ProcessState)
	w.mu.Lock()
	w.kills = append(w.kills, status)
	w.mu.Unlock()
	return status, nil
}

func (w *Worker) exitErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Wait waits for the running generation to exit on its own and returns its
// error (nil for exit status 0).
func (w *Worker) Wait(ctx context.Context) error {
	w.mu.Lock()
	done := w.done
	w.mu.Unlock()
	if done == nil {
		return errors.New("no worker was started")
	}
	select {
	case <-done:
		return w.exitErr()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Running reports whether the current generation is still running.
func (w *Worker) Running() bool {
	w.mu.Lock()
	done := w.done
	w.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// Stop kills whatever generation is still running: at the end of a test.
func (w *Worker) Stop() {
	w.mu.Lock()
	cmd, done := w.cmd, w.done
	w.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	select {
	case <-done:
	default:
		cmd.Process.Kill()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
		}
	}
}

// logWriter sends a process's output to a log, line by line.
type logWriter struct {
	log    Logger
	prefix string
}

func (w logWriter) Write(p []byte) (int, error) {
	for _, line := range splitLines(string(p)) {
		w.log.Log(w.prefix + line)
	}
	return len(p), nil
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}
