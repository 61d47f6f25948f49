// Command stockd runs the stock service: it drains the inbox, applying
// each delivery at most once, and answers GET /healthz with 200 while its
// database answers.
//
//	stockd -dsn-file PATH -name replica-1 -health 127.0.0.1:8080
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

	"github.com/jackc/pgx/v5/pgxpool"

	stock "example.com/adopter"
)

func main() {
	dsnFile := flag.String("dsn-file", "", "file holding the database's DSN (mode 0600)")
	name := flag.String("name", "stockd", "recorded on every delivery this worker applies")
	health := flag.String("health", "127.0.0.1:8080", "host:port of the health endpoint")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *dsnFile, *name, *health); err != nil {
		fmt.Fprintf(os.Stderr, "stockd %s: %v\n", *name, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, dsnFile, name, health string) error {
	dsn, err := os.ReadFile(dsnFile)
	if err != nil {
		return err
	}
	db, err := pgxpool.New(ctx, strings.TrimSpace(string(dsn)))
	if err != nil {
		return err
	}
	defer db.Close()
	ln, err := net.Listen("tcp", health)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pctx, cancel := context.WithTimeout(r.Context(), time.Second)
		defer cancel()
		if err := db.Ping(pctx); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})}
	go srv.Serve(ln)
	defer srv.Close()
	fmt.Fprintf(os.Stderr, "stockd %s: started, health on %s\n", name, ln.Addr())
	applied := 0
	for ctx.Err() == nil {
		n, err := stock.Drain(ctx, db, name, 5)
		applied += n
		if err != nil && ctx.Err() == nil {
			fmt.Fprintf(os.Stderr, "stockd %s: %v (backing off)\n", name, err)
		}
		if n == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	fmt.Fprintf(os.Stderr, "stockd %s: stopped after %d deliveries\n", name, applied)
	return nil
}
