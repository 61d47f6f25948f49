package ledger

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// webListenLine is the one line `ledger web` prints on stdout once it accepts connections, so
// that a caller that asked for port 0 learns the address.
const webListenLine = "ledger web: listening on http://%s\n"

// serveWeb runs `ledger web`: the front over a lazily connected pool of at most poolSize
// connections to dsn, on listen, until ctx ends. Then it stops taking requests, lets the
// in-flight ones answer and the pending submissions settle for up to timeout + 1s, and
// returns nil.
// ConfigureWebPool sets what the web front expects of its pool: ConfigurePool, and no
// liveness ping before an idle connection is used. The request itself is the probe, and its
// failure is classified as any other (refused when it certainly did not apply, pending
// otherwise). pgxpool's default pings a connection idle for more than a second; under a slow
// backend that ping spends the request's whole timeout and refuses a transfer that a faster
// machine, reaching the statement within the second, would have sent: what the user sees
// would depend on how fast the machine is, not on what the backend did.
func ConfigureWebPool(cfg *pgxpool.Config) {
	ConfigurePool(cfg)
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
}

func serveWeb(ctx context.Context, dsn, listen string, timeout time.Duration, poolSize int, stdout, stderr io.Writer) error {
	if timeout <= 0 {
		return fmt.Errorf("-timeout %s: must be positive", timeout)
	}
	if poolSize <= 0 {
		return fmt.Errorf("-pool %d: must be positive", poolSize)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return fmt.Errorf("parse DSN: %w", err)
	}
	ConfigureWebPool(cfg)
	cfg.MaxConns = int32(poolSize)
	cfg.MinConns = 0 // lazy: the front starts, and serves its degraded page, with the backend down
	pool, err := pgxpool.NewWithConfig(context.WithoutCancel(ctx), cfg)
	if err != nil {
		return fmt.Errorf("open pool: %w", err)
	}
	defer pool.Close()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", listen, err)
	}
	web := NewWeb(pool, WebTimeout(timeout))
	srv := &http.Server{Handler: web, ReadHeaderTimeout: 5 * time.Second, WriteTimeout: timeout + 5*time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, webListenLine, ln.Addr())
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), timeout+time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		fmt.Fprintf(stderr, "ledger web: shut down: %v\n", err)
	}
	if err := web.Close(sctx); err != nil {
		fmt.Fprintf(stderr, "ledger web: %v\n", err)
	}
	return nil
}
