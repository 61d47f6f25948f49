package contested_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/contested"
	"github.com/contested/contested/contested/history"
)

// A burst's delivery order is a pure function of the seed: the same seed
// replays the same duplicates and reorderings.
func ExamplePlan() {
	a := contested.Plan(42, 20, contested.BurstPlan{})
	b := contested.Plan(42, 20, contested.BurstPlan{})
	fmt.Println(len(a) >= 20, fmt.Sprint(a) == fmt.Sprint(b))
	// Output: true true
}

// The replay command reruns exactly one test, anchored at every level,
// with the seed the failing run used.
func ExampleReplayCommand() {
	fmt.Println(contested.ReplayCommand(7, "./examples/ledger", "TestConsumerContract/burst"))
	// Output: CONTESTED_SEED=7 go test ./examples/ledger -run '^TestConsumerContract$/^burst$' -count=1
}

// A package whose tests start legs and need no set-up of their own: Main
// is its whole TestMain, func TestMain(m *testing.M) { contested.Main(m) }.
func ExampleMain() {
	var m *testing.M // the one go test hands to TestMain
	contested.Main(m)
}

// A package that already has a TestMain (here it starts a queue its tests
// use) calls Run where it called m.Run: the legs' fault layer is torn down
// when Run returns, then the package's own tear-down runs, then TestMain
// exits with the tests' code.
func ExampleRun() {
	var m *testing.M // the one go test hands to TestMain
	stop, err := startQueue()
	if err != nil {
		fmt.Fprintln(os.Stderr, "set-up:", err)
		os.Exit(1)
	}
	code := contested.Run(m)
	stop()
	os.Exit(code)
}

// startQueue stands for a package's own set-up.
func startQueue() (stop func(), err error) { return func() {}, nil }

// Two clients of a leg each reach Postgres through a path of their own
// under isolate (through the leg's one path under the other levers), record
// their ops in the leg's history, and the leg judges the history against the
// model of what the component promises. Compiled, not run: a leg needs a
// test.
func ExampleLeg_Check() {
	var t *testing.T // the one go test hands to the contract test
	ctx := t.Context()
	leg := contested.Start(t, "locks.lease", contested.Isolate, contested.Clients(2))
	var wg sync.WaitGroup
	for i := range 2 {
		c := leg.Client(i)
		pool := c.Pool(ctx)
		wg.Go(func() {
			for {
				select {
				case <-leg.Done():
					return
				default:
				}
				leg.Step(ctx)
				id := c.Invoke(history.TypeAcquire, "L", history.LockRef{Holder: c.Name()})
				var token int64
				err := pool.QueryRow(ctx, "SELECT acquire($1)", c.Name()).Scan(&token)
				c.Record(id, history.Granted{Token: token}, err)
			}
		})
	}
	wg.Wait()
	leg.Check(ctx, history.NewLock(history.LockSpec{TTL: time.Second, Fencing: true}))
}

// An ordinary database test, one that expected a Postgres on
// localhost:5432, reads its DSN from Database instead: a fresh database of
// its own on the fault layer's Postgres, dropped when the test ends, so
// that validate runs it in the battery beside the legs. A suite whose
// tests share a helper changes only the helper:
//
//	func testDB(t *testing.T) *pgxpool.Pool {
//		// was: pgxpool.New(ctx, "postgres://postgres:postgres@localhost:5432/stock_test")
//		pool, err := pgxpool.New(context.Background(), contested.Database(t))
//		...
//	}
func ExampleDatabase() {
	var t *testing.T // the one go test hands the test
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, contested.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `CREATE TABLE stock (sku text PRIMARY KEY, n int NOT NULL)`); err != nil {
		t.Fatal(err)
	}
}
