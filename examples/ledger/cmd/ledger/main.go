// Command ledger runs the reference ledger service's parts as separate processes: migrate,
// produce, work and status (see package ledger).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/contested/contested/examples/ledger"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := ledger.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
