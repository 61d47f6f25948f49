package faultlayer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go/wait"
)

// logStreamer is the part of the Docker API readiness needs: a container's
// log stream, followed as it is written.
type logStreamer interface {
	ContainerLogs(ctx context.Context, container string, options client.ContainerLogsOptions) (client.ContainerLogsResult, error)
}

var _ logStreamer = (*client.Client)(nil)

// errExited reports a container whose log stream ended before it said it
// was ready: its process exited.
var errExited = errors.New("container exited before it was ready")

// followLog reads a container's log (stdout and stderr, from its start) as
// it is written and calls seen on each line until seen says done or fails.
// It is a notification, not a probe: nothing sleeps between attempts, the
// engine pushes each line as the process writes it. A stream that ends
// first means the process exited: errExited, with the last lines.
func followLog(ctx context.Context, d logStreamer, id string, seen func(line string) (bool, error)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rc, err := d.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Follow: true})
	if err != nil {
		return fmt.Errorf("follow the log of %s: %w", shortID(id), err)
	}
	defer rc.Close()
	pr, pw := io.Pipe()
	go func() { _, err := stdcopy.StdCopy(pw, pw, rc); pw.CloseWithError(err) }()
	defer pr.Close()
	var tail []string
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if tail = append(tail, line); len(tail) > 5 {
			tail = tail[1:]
		}
		done, err := seen(line)
		if err != nil {
			return err
		}
		if done {
			return nil
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return fmt.Errorf("%w; its last lines:\n%s", errExited, strings.Join(tail, "\n"))
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// containerID is what readiness needs of a testcontainers target.
type containerID interface{ GetContainerID() string }

// pgLogReady waits until Postgres accepts an authenticated connection on
// its published port, driven by its log. An image that announces its
// readiness (readyLine, from the image's images.ReadyLineLabel: the locally
// built one says so once the password and database it was given are set)
// is connected to once, when it says so. Any other (the upstream image, which restarts once after
// initialising) is tried on each of the server's own "ready to accept
// connections" lines, the last of which is the real one.
type pgLogReady struct {
	docker             logStreamer
	user, password, db string
	readyLine          string
	timeout            time.Duration
}

var _ wait.Strategy = pgLogReady{}

// serverReadyLine is Postgres' own log line for accepting connections.
const serverReadyLine = "database system is ready to accept connections"

func (w pgLogReady) WaitUntilReady(ctx context.Context, target wait.StrategyTarget) error {
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	c, ok := target.(containerID)
	if !ok {
		return fmt.Errorf("postgres readiness: %T names no container", target)
	}
	var last error
	err := followLog(ctx, w.docker, c.GetContainerID(), func(line string) (bool, error) {
		want := w.readyLine
		if want == "" {
			want = serverReadyLine
		}
		if !strings.Contains(line, want) {
			return false, nil
		}
		port, err := target.MappedPort(ctx, "5432/tcp")
		if err != nil {
			return false, err
		}
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		defer ccancel()
		conn, err := pgx.Connect(cctx, dsn(w.user, w.password, "127.0.0.1", int(port.Num()), w.db))
		if err == nil {
			err = conn.Ping(cctx)
			conn.Close(cctx)
		}
		if err == nil {
			return true, nil
		}
		last = err
		if w.readyLine != "" {
			// It said it was ready with our password: a failure now is real.
			return false, fmt.Errorf("postgres announced readiness and refused the connection: %w", err)
		}
		return false, nil
	})
	if err != nil && last != nil && w.readyLine == "" {
		return fmt.Errorf("postgres not ready: %w (last connection attempt: %v)", err, last)
	}
	if err != nil {
		return fmt.Errorf("postgres not ready: %w", err)
	}
	return nil
}

// toxiproxyLogReady waits until Toxiproxy's control API answers, driven by
// its log: the API server logs that it starts just before it listens, so
// the one GET that follows the line is retried only across that gap.
type toxiproxyLogReady struct {
	docker  logStreamer
	url     string // the control API, as the host reaches it
	timeout time.Duration
}

var _ wait.Strategy = toxiproxyLogReady{}

// toxiproxyAPILine is what Toxiproxy logs as its control API starts.
const toxiproxyAPILine = "Starting Toxiproxy HTTP server"

func (w toxiproxyLogReady) WaitUntilReady(ctx context.Context, target wait.StrategyTarget) error {
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	c, ok := target.(containerID)
	if !ok {
		return fmt.Errorf("toxiproxy readiness: %T names no container", target)
	}
	if err := followLog(ctx, w.docker, c.GetContainerID(), func(line string) (bool, error) {
		return strings.Contains(line, toxiproxyAPILine), nil
	}); err != nil {
		return fmt.Errorf("toxiproxy not ready: %w", err)
	}
	url := w.url + "/version"
	// The listen follows the log line by microseconds; the engine's port
	// proxy accepts before the server does, so a GET in that gap fails fast.
	gap := time.NewTimer(5 * time.Second)
	defer gap.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		req.Header.Set("User-Agent", "contested")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("GET /version: %s", resp.Status)
		}
		select {
		case <-gap.C:
			return fmt.Errorf("toxiproxy logged that its API starts and it does not answer: %w", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}
