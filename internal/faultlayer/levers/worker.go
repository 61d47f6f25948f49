package levers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"sync"
	"syscall"
	"time"
)

// Worker is a process crash-and-resume kills and restarts: the Process of
// a leg. It builds a fresh command for each start, since an exec.Cmd runs
// once, and sends the process's output to a log (a test's, line by line,
// each line under the worker's own file and line when it printed one).
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

// outputter is a Logger that also has a writer without source locations
// of its own (testing.TB's Output): the worker's lines go there, so that
// the location they show is the worker's, never this file's.
type outputter interface {
	Output() io.Writer
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
	var lw *logWriter
	if cmd.Stdout == nil && w.log != nil {
		lw = &logWriter{log: w.log, prefix: fmt.Sprintf("worker#%d: ", w.runs+1)}
		cmd.Stdout = lw
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
		if lw != nil {
			lw.flush()
		}
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

// Terminate asks the running generation to stop (SIGTERM) and waits for
// it to exit, up to grace; then it kills it. It returns the generation's
// exit error (nil for exit status 0): a worker that stops cleanly on
// SIGTERM exits 0.
func (w *Worker) Terminate(ctx context.Context, grace time.Duration) error {
	w.mu.Lock()
	cmd, done := w.cmd, w.done
	w.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return errors.New("no worker was started")
	}
	select {
	case <-done:
		return w.exitErr()
	default:
	}
	cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
		return w.exitErr()
	case <-t.C:
	case <-ctx.Done():
	}
	cmd.Process.Kill()
	<-done
	return fmt.Errorf("the worker did not stop within %v of SIGTERM, and was killed", grace)
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

// logWriter sends a process's output to a log, line by line. A line that
// starts with a Go source location ("jobs.go:45: ", what the log package
// prints with Lshortfile, after its date and time when it prints them)
// keeps that location first, as a test's own log line shows its own; a
// line without one shows none, never this file's.
type logWriter struct {
	log    Logger
	prefix string
	mu     sync.Mutex
	part   []byte // an unfinished last line
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.part = append(w.part, p...)
	for {
		i := indexNewline(w.part)
		if i < 0 {
			break
		}
		w.line(string(w.part[:i]))
		w.part = w.part[i+1:]
	}
	if len(w.part) > maxLine {
		w.line(string(w.part))
		w.part = nil
	}
	return len(p), nil
}

// flush logs an unfinished last line: the process ended without its
// newline.
func (w *logWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.part) > 0 {
		w.line(string(w.part))
		w.part = nil
	}
}

// maxLine bounds a line the writer waits for the end of.
const maxLine = 64 << 10

func indexNewline(b []byte) int {
	for i, c := range b {
		if c == '\n' {
			return i
		}
	}
	return -1
}

// sourceAt is a line's leading Go source location, after the log
// package's date and time when it printed them.
var sourceAt = regexp.MustCompile(`^(?:\d{4}/\d{2}/\d{2} )?(?:\d{2}:\d{2}:\d{2}(?:\.\d+)? )?([\w.\-/]+\.go:\d+): ?(.*)$`)

func (w *logWriter) line(s string) {
	o, ok := w.log.(outputter)
	if !ok {
		w.log.Log(w.prefix + s)
		return
	}
	if m := sourceAt.FindStringSubmatch(s); m != nil {
		fmt.Fprintf(o.Output(), "%s: %s%s\n", m[1], w.prefix, m[2])
		return
	}
	fmt.Fprintf(o.Output(), "%s%s\n", w.prefix, s)
}
