package ledger

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"
)

// EnvDSN is read by the command when -dsn is not given.
const EnvDSN = "LEDGER_DSN"

const usage = `usage: ledger <command> [flags]

commands:
  migrate   create the tables and open the accounts
  produce   enqueue generated transfers, retrying each until it is acknowledged
  work      run consumers that apply the queue exactly once
  status    print pending rows, applied transfers and the sum of balances
  web       serve the web front: balances, recent transfers, a transfer form, /readyz

Every command takes -dsn (default $LEDGER_DSN). Run "ledger <command> -h" for its flags.
`

// Main runs the ledger command with args (without the program name) and returns its exit
// code: 0 done, 1 failed, 2 usage. It lives in the library rather than in cmd/ledger so that
// tests can run the very same code as a separate process (re-executing the test binary)
// without a build step.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, args := args[0], args[1:]
	fs := flag.NewFlagSet("ledger "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dsn := fs.String("dsn", os.Getenv(EnvDSN), "Postgres DSN of the ledger database")
	var run func(context.Context) error
	switch cmd {
	case "migrate":
		accounts := fs.Int("accounts", 8, "accounts to open (acct-00 onwards)")
		balance := fs.Int64("balance", 1000, "opening balance of each account")
		run = func(ctx context.Context) error { return migrate(ctx, *dsn, *accounts, *balance) }
	case "produce":
		count := fs.Int("count", 100, "transfers to enqueue")
		accounts := fs.Int("accounts", 8, "accounts to move money between")
		maxAmount := fs.Int64("max-amount", 50, "largest amount of an ordinary transfer")
		balance := fs.Int64("balance", 1000, "opening balance the accounts were migrated with: one transfer in ten drains its source as that balance predicts (0: none)")
		seed := fs.Uint64("seed", 1, "seed of the generated transfers")
		prefix := fs.String("prefix", "t", "transfer id prefix")
		run = func(ctx context.Context) error {
			mix := Mix{Accounts: AccountNames(*accounts), MaxAmount: *maxAmount, Opening: *balance}
			return produce(ctx, *dsn, mix.Generate(*seed, *count, *prefix), stdout)
		}
	case "work":
		w := &Worker{Name: "worker"}
		fs.StringVar(&w.Name, "name", hostPID(), "name recorded on acknowledged rows")
		fs.IntVar(&w.Consumers, "consumers", 4, "consumers claiming batches at once")
		fs.IntVar(&w.BatchSize, "batch", 10, "rows claimed per batch")
		fs.BoolVar(&w.ExitWhenEmpty, "exit-when-empty", false, "exit 0 once no row is pending")
		fs.DurationVar(&w.Poll, "poll", 50*time.Millisecond, "idle wait between claims")
		health := fs.String("health", "", "host:port to answer GET "+HealthPath+" on: 200 while the database answers (default: no endpoint)")
		run = func(ctx context.Context) error { return work(ctx, *dsn, *health, w, stderr) }
	case "status":
		run = func(ctx context.Context) error { return status(ctx, *dsn, stdout) }
	case "web":
		listen := fs.String("listen", "127.0.0.1:8080", "host:port to serve on (port 0: any free port; the address is printed)")
		timeout := fs.Duration("timeout", time.Second, "bound on every backend call one request makes")
		poolSize := fs.Int("pool", 4, "most connections to the database")
		run = func(ctx context.Context) error {
			return serveWeb(ctx, *dsn, *listen, *timeout, *poolSize, stdout, stderr)
		}
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "ledger: unknown command %q\n%s", cmd, usage)
		return 2
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "ledger %s: unexpected arguments %q\n", cmd, fs.Args())
		return 2
	}
	if *dsn == "" {
		fmt.Fprintf(stderr, "ledger %s: no database: pass -dsn or set %s\n", cmd, EnvDSN)
		return 2
	}
	if err := run(ctx); err != nil {
		fmt.Fprintf(stderr, "ledger %s: %v\n", cmd, err)
		return 1
	}
	return 0
}

func migrate(ctx context.Context, dsn string, accounts int, balance int64) error {
	pool, err := Connect(ctx, dsn, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := Migrate(ctx, pool); err != nil {
		return err
	}
	open := map[string]int64{}
	for _, a := range AccountNames(accounts) {
		open[a] = balance
	}
	return OpenAccounts(ctx, pool, open)
}

// produce enqueues every transfer until it is acknowledged. A failed or unknown enqueue is
// simply repeated with the same transfer id: the consumers' idempotency absorbs the
// duplicates an unknown outcome may have left.
func produce(ctx context.Context, dsn string, transfers []Transfer, stdout io.Writer) error {
	pool, err := Connect(ctx, dsn, 4)
	if err != nil {
		return err
	}
	defer pool.Close()
	q := NewQueue(pool)
	retries := 0
	for i, t := range transfers {
		for backoff := 20 * time.Millisecond; ; backoff = min(backoff*2, time.Second) {
			actx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := q.Enqueue(actx, t)
			cancel()
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return fmt.Errorf("enqueue transfer %s (%d of %d acknowledged): %w", t.ID, i, len(transfers), ctx.Err())
			}
			retries++
			if !sleep(ctx, backoff) {
				return ctx.Err()
			}
		}
	}
	fmt.Fprintf(stdout, "enqueued %d transfers (%d retries)\n", len(transfers), retries)
	return nil
}

func work(ctx context.Context, dsn, health string, w *Worker, stderr io.Writer) error {
	pool, err := Connect(ctx, dsn, int32(w.Consumers)+1)
	if err != nil {
		return err
	}
	defer pool.Close()
	if health != "" {
		stop, err := serveHealth(health, pool)
		if err != nil {
			return err
		}
		defer stop()
	}
	w.Pool = pool
	// The consumers call these hooks concurrently.
	var errs, applied atomic.Int64
	w.OnError = func(err error) {
		if errs.Add(1) <= 20 {
			fmt.Fprintf(stderr, "ledger work: %v (backing off)\n", err)
		}
	}
	w.OnBatch = func(b Batch) { applied.Add(int64(len(b.Rows))) }
	// One line when it starts and one when it stops, whatever happens between: an operator
	// (or a rig collecting container logs) sees every worker that ran.
	fmt.Fprintf(stderr, "ledger work: %s started: %d consumers, batch %d, exit when empty: %v\n", w.Name, max(w.Consumers, 1), w.BatchSize, w.ExitWhenEmpty)
	err = w.Run(ctx)
	fmt.Fprintf(stderr, "ledger work: %s stopped after %d rows acknowledged, %d errors\n", w.Name, applied.Load(), errs.Load())
	return err
}

func status(ctx context.Context, dsn string, stdout io.Writer) error {
	pool, err := Connect(ctx, dsn, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	pending, err := NewQueue(pool).Pending(ctx)
	if err != nil {
		return err
	}
	total, err := NewStore(pool).Total(ctx)
	if err != nil {
		return err
	}
	var decided int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM applied_transfers`).Scan(&decided); err != nil {
		return fmt.Errorf("count applied transfers: %w", err)
	}
	fmt.Fprintf(stdout, "pending %d\ndecided %d\ntotal %d\n", pending, decided, total)
	return nil
}

func hostPID() string {
	h, _ := os.Hostname()
	return fmt.Sprintf("%s-%d", h, os.Getpid())
}
