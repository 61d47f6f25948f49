// Command testservice is the cluster rig's own test service: a worker that
// completes the jobs of a Postgres table exactly once (a job's quantity is
// added to a total and the job marked done in one transaction), with an
// HTTP health endpoint. The rig's tests run it as replicas.
//
//	testservice -dsn-file PATH -name replica-1 -health 127.0.0.1:8080
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

func main() {
	fs := flag.NewFlagSet("testservice", flag.ExitOnError)
	dsnFile := fs.String("dsn-file", "", "file holding the DSN")
	name := fs.String("name", "worker", "recorded on every job this worker completes")
	health := fs.String("health", "", "host:port of the health endpoint (GET /healthz)")
	poll := fs.Duration("poll", 20*time.Millisecond, "idle wait between claims")
	fs.Parse(os.Args[1:])
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *dsnFile, *name, *health, *poll); err != nil && ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "testservice %s: %v\n", *name, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, dsnFile, name, health string, poll time.Duration) error {
	b, err := os.ReadFile(dsnFile)
	if err != nil {
		return err
	}
	db, err := pgxpool.New(ctx, strings.TrimSpace(string(b)))
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.Ping(ctx); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	ln, err := net.Listen("tcp", health)
	if err != nil {
		return fmt.Errorf("health endpoint: %w", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pctx, cancel := context.WithTimeout(r.Context(), time.Second)
		defer cancel()
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
		} else if err := db.Ping(pctx); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		} else {
			fmt.Fprintln(w, "ok")
		}
	})}
	go srv.Serve(ln)
	defer srv.Close()
	fmt.Fprintf(os.Stderr, "testservice %s: started, health on %s\n", name, ln.Addr())
	done := 0
	for ctx.Err() == nil {
		n, err := claim(ctx, db, name)
		done += n
		if err != nil && ctx.Err() == nil {
			fmt.Fprintf(os.Stderr, "testservice %s: %v (backing off)\n", name, err)
		}
		if n == 0 {
			time.Sleep(poll)
		}
	}
	fmt.Fprintf(os.Stderr, "testservice %s: stopped after %d jobs\n", name, done)
	return nil
}

// claim completes up to five pending jobs in one transaction.
func claim(ctx context.Context, db *pgxpool.Pool, name string) (int, error) {
	n := 0
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT id, qty FROM jobs WHERE done_at IS NULL ORDER BY id LIMIT 5 FOR UPDATE SKIP LOCKED`)
		if err != nil {
			return err
		}
		var ids []string
		sum := 0
		for rows.Next() {
			var id string
			var qty int
			if err := rows.Scan(&id, &qty); err != nil {
				return err
			}
			ids, sum = append(ids, id), sum+qty
		}
		if err := rows.Err(); err != nil || len(ids) == 0 {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE total SET qty = qty + $1`, sum); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE jobs SET done_by = $1, done_at = clock_timestamp() WHERE id = ANY($2)`, name, ids); err != nil {
			return err
		}
		n = len(ids)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}
