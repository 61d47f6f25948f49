package ledger_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/contested/contested/contested"
	"github.com/contested/contested/examples/ledger"
)

func TestTransferOutcomes(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, contested.Database(t), 2, 0)
	pool := r.directPool(2)
	if err := ledger.OpenAccounts(ctx, pool, map[string]int64{"rich": 100, "poor": 5}); err != nil {
		t.Fatal(err)
	}
	store := ledger.NewStore(pool)
	tests := []struct {
		name string
		t    ledger.Transfer
		want ledger.Outcome
		err  string
	}{
		{"funds suffice", ledger.Transfer{ID: "a", From: "rich", To: "poor", Amount: 30}, ledger.Applied, ""},
		{"the same id again moves nothing", ledger.Transfer{ID: "a", From: "rich", To: "poor", Amount: 30}, ledger.Duplicate, ""},
		{"funds lacking", ledger.Transfer{ID: "b", From: "poor", To: "rich", Amount: 500}, ledger.Rejected, ""},
		{"a rejected id is spent", ledger.Transfer{ID: "b", From: "poor", To: "rich", Amount: 1}, ledger.Duplicate, ""},
		{"an unknown account", ledger.Transfer{ID: "c", From: "rich", To: "nobody", Amount: 1}, ledger.Rejected, ""},
		{"exactly the balance", ledger.Transfer{ID: "d", From: "poor", To: "rich", Amount: 35}, ledger.Applied, ""},
		{"no id", ledger.Transfer{From: "rich", To: "poor", Amount: 1}, "", "no id"},
		{"to itself", ledger.Transfer{ID: "e", From: "rich", To: "rich", Amount: 1}, "", "the same account"},
		{"not positive", ledger.Transfer{ID: "f", From: "rich", To: "poor", Amount: 0}, "", "not positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := store.Transfer(ctx, tt.t)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Transfer(%+v) = %s, %v; want %s", tt.t, got, err, tt.want)
			}
		})
	}
	balances, err := store.Balances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if balances["rich"] != 105 || balances["poor"] != 0 {
		t.Errorf("balances %v, want rich 105 poor 0", balances)
	}
}

func TestWorkerAppliesDuplicatedDeliveriesOnce(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, contested.Database(t), 4, 1000)
	pool := r.directPool(6)
	q := ledger.NewQueue(pool)
	transfers := ledger.Generate(9, 50, r.accounts, 100, "w")
	for round := range 3 { // every transfer delivered three times
		for _, tr := range transfers {
			if _, err := r.rec.Enqueue("producer", tr, func() (int64, error) { return q.Enqueue(ctx, tr) }); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
	outcomes := map[ledger.Outcome]int{}
	w := &ledger.Worker{Pool: pool, Name: "unit", Consumers: 3, BatchSize: 7, ExitWhenEmpty: true, Poll: 5 * time.Millisecond,
		OnBatch: func(b ledger.Batch) {
			for _, row := range b.Rows {
				outcomes[row.Outcome]++
			}
		}}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := w.Run(wctx); err != nil {
		t.Fatal(err)
	}
	if outcomes[ledger.Duplicate] != 100 || outcomes[ledger.Applied]+outcomes[ledger.Rejected] != 50 {
		t.Errorf("outcomes %v, want 50 decided and 100 duplicates", outcomes)
	}
	r.judge(checks{})
}

func TestCommandRunsTheServiceAsProcesses(t *testing.T) {
	dsn := contested.Database(t)
	run := func(args ...string) (string, int) {
		var out, errb bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		code := ledger.Main(ctx, args, &out, &errb)
		return out.String() + errb.String(), code
	}
	tests := []struct {
		name string
		args []string
		code int
		says string
	}{
		{"no command", nil, 2, "usage: ledger"},
		{"unknown command", []string{"fly"}, 2, `unknown command "fly"`},
		{"no database", []string{"status", "-dsn", ""}, 2, "no database"},
		{"stray argument", []string{"status", "-dsn", dsn, "extra"}, 2, "unexpected arguments"},
		{"migrate", []string{"migrate", "-dsn", dsn, "-accounts", "5", "-balance", "200"}, 0, ""},
		{"migrate again changes nothing", []string{"migrate", "-dsn", dsn, "-accounts", "5", "-balance", "999"}, 0, ""},
		{"produce", []string{"produce", "-dsn", dsn, "-count", "80", "-accounts", "5", "-balance", "200", "-seed", "3"}, 0, "enqueued 80 transfers"},
		{"work until empty", []string{"work", "-dsn", dsn, "-consumers", "3", "-exit-when-empty"}, 0, "80 rows acknowledged"},
		{"status", []string{"status", "-dsn", dsn}, 0, "pending 0\ndecided 80\ntotal 1000\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, code := run(tt.args...)
			if code != tt.code || !strings.Contains(out, tt.says) {
				t.Fatalf("ledger %v: exit %d, output:\n%s\nwant exit %d and %q", tt.args, code, out, tt.code, tt.says)
			}
		})
	}
}

// TestWorkServesItsHealthEndpoint: `ledger work -health ADDR` answers 200
// on /healthz while its database answers, and 503 saying why when it does
// not; an address it cannot listen on fails the command.
func TestWorkServesItsHealthEndpoint(t *testing.T) {
	dsn := contested.Database(t)
	tests := []struct {
		name string
		dsn  string
		code int
		says string
	}{
		{"the database answers", dsn, http.StatusOK, "ok"},
		{"the database is gone", "postgres://nobody:none@127.0.0.1:1/ledger?connect_timeout=1", http.StatusServiceUnavailable, "database unreachable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := freeAddr(t)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan int, 1)
			var errb syncBuffer
			go func() { done <- ledger.Main(ctx, []string{"work", "-dsn", tt.dsn, "-health", addr}, io.Discard, &errb) }()
			defer func() { cancel(); <-done }()
			code, body := 0, ""
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && code != tt.code; time.Sleep(50 * time.Millisecond) {
				resp, err := http.Get("http://" + addr + ledger.HealthPath)
				if err != nil {
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				code, body = resp.StatusCode, string(b)
			}
			if code != tt.code || !strings.Contains(body, tt.says) {
				t.Fatalf("GET %s: %d %q, want %d saying %q; the worker said:\n%s", ledger.HealthPath, code, body, tt.code, tt.says, errb.String())
			}
		})
	}
	t.Run("an address it cannot listen on", func(t *testing.T) {
		var errb bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if code := ledger.Main(ctx, []string{"work", "-dsn", dsn, "-health", "256.0.0.1:80"}, io.Discard, &errb); code != 1 || !strings.Contains(errb.String(), "health endpoint") {
			t.Fatalf("exit %d, said %q; want 1 and the health endpoint's error", code, errb.String())
		}
	})
}

// freeAddr is 127.0.0.1 with a port free right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// syncBuffer is a bytes.Buffer a worker writes while a test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestDefinite(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil is not a failure", nil, false},
		{"the server refused the statement", fmt.Errorf("apply: %w", &pgconn.PgError{Code: "40001"}), true},
		{"no connection", &pgconn.ConnectError{Config: &pgconn.Config{}}, true},
		{"a reset while the answer was due", fmt.Errorf("apply: %w", &net.OpError{Op: "read", Err: syscall.ECONNRESET}), false},
		{"a deadline", context.DeadlineExceeded, false},
		{"anything else", errors.New("unexpected EOF"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ledger.Definite(tt.err); got != tt.want {
				t.Errorf("Definite(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestGenerateIsAPureFunctionOfTheSeed(t *testing.T) {
	a := ledger.Generate(5, 20, ledger.AccountNames(3), 10, "g")
	b := ledger.Generate(5, 20, ledger.AccountNames(3), 10, "g")
	c := ledger.Generate(6, 20, ledger.AccountNames(3), 10, "g")
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Error("the same seed gave different transfers")
	}
	if fmt.Sprint(a) == fmt.Sprint(c) {
		t.Error("another seed gave the same transfers")
	}
	for _, tr := range a {
		if err := tr.Validate(); err != nil {
			t.Error(err)
		}
	}
}

// TestMixReachesTheEdges holds the generated workload to what the contracts need of it:
// a few hot accounts take part in most transfers, a good share of transfers is refused for
// insufficient funds, and many ask for exactly what their source holds. It applies the
// transfers in order, as one consumer would.
func TestMixReachesTheEdges(t *testing.T) {
	accounts := ledger.AccountNames(6)
	tests := []struct {
		name string
		mix  ledger.Mix
		n    int
	}{
		{"a burst", ledger.Mix{Accounts: accounts, MaxAmount: 50, Opening: 100}, 90},
		{"a long queue", ledger.Mix{Accounts: ledger.AccountNames(8), MaxAmount: 50, Opening: 200}, 1200},
		{"no drains", ledger.Mix{Accounts: accounts, MaxAmount: 40, Opening: 0}, 300},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for seed := uint64(1); seed <= 5; seed++ {
				opening := tt.mix.Opening
				if opening == 0 {
					opening = 100
				}
				balance := map[string]int64{}
				for _, a := range tt.mix.Accounts {
					balance[a] = opening
				}
				var hot, rejected, exact int
				for _, tr := range tt.mix.Generate(seed, tt.n, "m") {
					if err := tr.Validate(); err != nil {
						t.Fatal(err)
					}
					if tr.From == tt.mix.Accounts[0] || tr.From == tt.mix.Accounts[1] || tr.To == tt.mix.Accounts[0] || tr.To == tt.mix.Accounts[1] {
						hot++
					}
					switch b := balance[tr.From]; {
					case b < tr.Amount:
						rejected++
						continue
					case b == tr.Amount:
						exact++
					}
					balance[tr.From] -= tr.Amount
					balance[tr.To] += tr.Amount
				}
				if hot*10 < tt.n*7 {
					t.Errorf("seed %d: the two hot accounts take part in %d of %d transfers, want at least 70%%", seed, hot, tt.n)
				}
				if rejected*20 < tt.n || rejected*10 > tt.n*6 {
					t.Errorf("seed %d: %d of %d transfers lack the funds, want 5%% to 60%%", seed, rejected, tt.n)
				}
				if exact == 0 {
					t.Errorf("seed %d: no transfer asks for exactly its source's balance", seed)
				}
				t.Logf("seed %d: %d transfers, %d touch a hot account, %d rejected, %d for the exact balance", seed, tt.n, hot, rejected, exact)
			}
		})
	}
}
