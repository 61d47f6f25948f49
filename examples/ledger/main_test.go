package ledger_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/contested/contested/contested"
	"github.com/contested/contested/examples/ledger"
	"github.com/contested/contested/internal/faultlayer/faulttest"
	"github.com/contested/contested/internal/reexec"
)

func TestMain(m *testing.M) {
	reexec.Main(reexec.Roles{"ledger": ledgerCommand})
	contested.Main(m)
}

// envArgs carries the command line of a re-executed ledger process, as a JSON array.
const envArgs = "LEDGER_TEST_ARGS"

// ledgerCommand is the re-executed test binary playing cmd/ledger: the same ledger.Main, in
// a process of its own that a crash-and-resume leg can kill.
func ledgerCommand() int {
	var args []string
	if err := json.Unmarshal([]byte(os.Getenv(envArgs)), &args); err != nil {
		fmt.Fprintf(os.Stderr, "ledger process: %s: %v\n", envArgs, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return ledger.Main(ctx, args, os.Stdout, os.Stderr)
}

// ledgerCmd returns a command that runs "ledger args..." as a separate process: the test
// binary re-executed as cmd/ledger (same code, same build tags).
func ledgerCmd(tb testing.TB, args ...string) *exec.Cmd {
	b, err := json.Marshal(args)
	if err != nil {
		tb.Fatal(err)
	}
	return reexec.Command(tb, "ledger", envArgs+"="+string(b))
}

// victimDB gives a test without a leg (the service's own unit tests) a database of its own on
// the fault layer's Postgres: created through PgFaultArmer, so it is a harness database, and
// dropped when the test ends. It returns the direct DSN. A leg brings its own (DirectDSN).
func victimDB(tb testing.TB) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	layer := faulttest.Layer(tb)
	armer, err := contested.NewPgFaultArmer(ctx, layer.DB(), nil)
	if err != nil {
		tb.Fatalf("victim database: %v", err)
	}
	v, err := armer.CreateVictim(ctx, tb.Name())
	if err != nil {
		tb.Fatalf("victim database: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := armer.DropVictim(ctx, v); err != nil {
			tb.Errorf("drop victim database: %v", err)
		}
	})
	cfg, err := pgx.ParseConfig(layer.PostgresDSN)
	if err != nil {
		tb.Fatal(err)
	}
	return v.DSN(net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port)))
}
