package ledger

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"
)

// HealthPath is where `ledger work -health ADDR` answers.
const HealthPath = "/healthz"

// pinger is what the health endpoint asks: the worker's pool.
type pinger interface {
	Ping(ctx context.Context) error
}

// serveHealth listens on addr and answers GET HealthPath with 200 while db
// answers a ping within a second, 503 with the reason otherwise: a worker
// is healthy when it can reach its database. It returns once listening;
// stop closes the listener.
func serveHealth(addr string, db pinger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("health endpoint: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+HealthPath, func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), time.Second)
		defer cancel()
		if err := db.Ping(ctx); err != nil {
			http.Error(w, "database unreachable: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	return func() { srv.Close() }, nil
}
