package degraded

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/contested/contested/internal/registry"
	"github.com/contested/contested/internal/secret"
)

// Bounds of the front's lifecycle steps.
const (
	buildTimeout = 5 * time.Minute
	setupTimeout = time.Minute
	startTimeout = 30 * time.Second
	stopGrace    = 5 * time.Second
)

// listening is the line the front prints once it serves.
var listening = regexp.MustCompile(`listening on (http://[^\s]+)`)

// buildFront builds the front's command into dir and returns the binary.
func buildFront(ctx context.Context, moduleRoot, dir string, cfg registry.Degraded, tags string, log io.Writer) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, buildTimeout)
	defer cancel()
	bin := filepath.Join(dir, "front")
	args := []string{"build", "-o", bin}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	args = append(args, cfg.Build)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = moduleRoot
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build the web front (go %s): %v\n%s", strings.Join(args, " "), err, secret.ScrubString(string(out)))
	}
	fmt.Fprintf(log, "degraded: built the web front: go %s\n", strings.Join(args, " "))
	return bin, nil
}

// setupFront runs the front's setup command against the direct DSN.
func setupFront(ctx context.Context, bin string, cfg registry.Degraded, directDSN string) error {
	if len(cfg.Setup) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, cfg.Expand(cfg.Setup, directDSN)...)
	cmd.Env = frontEnv(cfg, directDSN)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("set the front's database up (%s %s): %v\n%s", filepath.Base(bin), cfg.Setup[0], err, secret.ScrubString(string(out)))
	}
	return nil
}

// frontEnv is the front's environment: this process's without the
// fault layer's coordinates (the front reaches Postgres through the DSN it
// is given, and nothing else), with the DSN in cfg.DSNEnv when it names one.
func frontEnv(cfg registry.Degraded, dsn string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "CONTESTED_") || (cfg.DSNEnv != "" && name == cfg.DSNEnv) {
			continue
		}
		env = append(env, kv)
	}
	if cfg.DSNEnv != "" {
		env = append(env, cfg.DSNEnv+"="+dsn)
	}
	return env
}

// front is the running web front.
type front struct {
	cmd  *exec.Cmd
	url  string
	done chan struct{}
	err  error // the process's exit, once done is closed
}

// startFront starts the front with its proxied DSN and waits for the line
// that gives its address. Its stderr goes to logPath. The kernel kills it
// when this process dies (Pdeathsig), so a killed stage leaves no front.
func startFront(ctx context.Context, bin string, cfg registry.Degraded, dsn, logPath string) (*front, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the front's log: %w", err)
	}
	cmd := exec.Command(bin, cfg.Expand(cfg.Run, dsn)...)
	cmd.Env = frontEnv(cfg, dsn)
	cmd.Stderr = &scrubbed{w: logf}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start the web front: %w", err)
	}
	f := &front{cmd: cmd, done: make(chan struct{})}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(cmd.Stderr, line)
			if m := listening.FindStringSubmatch(line); m != nil && !sent {
				found <- m[1]
				sent = true
			}
		}
		f.err = cmd.Wait()
		logf.Close()
		close(f.done)
	}()
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case f.url = <-found:
		return f, nil
	case <-f.done:
		return nil, fmt.Errorf("the web front exited before it served (%v); its log: %s", f.err, logPath)
	case <-timer.C:
		f.stop()
		return nil, fmt.Errorf("the web front printed no \"listening on http://...\" line within %s; its log: %s", startTimeout, logPath)
	case <-ctx.Done():
		f.stop()
		return nil, ctx.Err()
	}
}

// alive reports whether the front still runs.
func (f *front) alive() bool {
	select {
	case <-f.done:
		return false
	default:
		return true
	}
}

// stop asks the front to end (SIGTERM), then kills it after stopGrace.
func (f *front) stop() {
	if f == nil || !f.alive() {
		return
	}
	_ = f.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-f.done:
	case <-time.After(stopGrace):
		_ = f.cmd.Process.Kill()
		<-f.done
	}
}

// scrubbed writes through secret.ScrubString, so no password the front
// prints reaches its log.
type scrubbed struct{ w io.Writer }

func (s *scrubbed) Write(p []byte) (int, error) {
	if _, err := io.WriteString(s.w, secret.ScrubString(string(p))); err != nil && !errors.Is(err, os.ErrClosed) {
		return 0, err
	}
	return len(p), nil
}

// healthyFactor is how much slower than the slowest healthy page the
// front's timeout must be for a healthy backend never to read as slow.
const healthyFactor = 10

// calibrationTimeout is the front's timeout while its healthy pages are
// timed: one no healthy page reaches.
const calibrationTimeout = time.Minute

// measureFront times five healthy pages of a front started with a timeout
// no healthy page reaches, and returns the slowest: what this machine,
// busy or not, takes to answer a page when nothing is wrong.
func measureFront(ctx context.Context, bin string, cfg registry.Degraded, dsn, logPath string) (time.Duration, error) {
	cfg.Timeout = calibrationTimeout
	f, err := startFront(ctx, bin, cfg, dsn, logPath)
	if err != nil {
		return 0, err
	}
	defer f.stop()
	client := &http.Client{Timeout: calibrationTimeout + time.Second}
	var slowest time.Duration
	for range 5 {
		start := time.Now()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.url+"/", nil)
		if err != nil {
			return 0, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, fmt.Errorf("time a healthy page of the front: %w", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		slowest = max(slowest, time.Since(start))
	}
	return slowest, nil
}

// frontTimeout is the timeout the front runs the stage with: the
// registry's, unless this machine answers a healthy page so slowly that
// a healthy backend would read as slow under it (slower than a tenth of
// it): then healthyFactor times the slowest healthy page, so that the
// conditions, not the machine, are what the cells meet.
func frontTimeout(configured, slowest time.Duration) time.Duration {
	return max(configured, healthyFactor*slowest)
}
