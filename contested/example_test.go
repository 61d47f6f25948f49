package contested_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
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
// tests share a helper changes only the helper (testDB below). Compiled,
// not run: Database needs a test.
func ExampleDatabase() {
	var t *testing.T // the one go test hands the test
	pool := testDB(t)
	if _, err := pool.Exec(context.Background(), `CREATE TABLE stock (sku text PRIMARY KEY, n int NOT NULL)`); err != nil {
		t.Fatal(err)
	}
}

// testDB is the one helper a suite's database tests share, moved onto
// Database.
func testDB(t *testing.T) *pgxpool.Pool {
	// was: pgxpool.New(ctx, "postgres://postgres:postgres@localhost:5432/stock_test")
	pool, err := pgxpool.New(context.Background(), contested.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close) // runs before the database is dropped
	return pool
}

// A leg of a contract: Start names the surface and the lever, the workload
// runs through the leg's proxy and marks each operation with Step until the
// schedule is Done, Observe counts the victim's side of the proof, and the
// oracle reads the truth bypassing the proxy. Compiled, not run: a leg
// needs a test and a registry that lists the surface.
func ExampleStart() {
	var t *testing.T // the one go test hands to the contract test
	ctx := t.Context()
	leg := contested.Start(t, "shop.orders", contested.Reset, contested.Span(80))
	direct, err := pgxpool.New(ctx, leg.DirectDSN()) // bypassing the proxy: the truth
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	if _, err := direct.Exec(ctx, `CREATE TABLE orders (id text PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	pool := leg.Pool(ctx) // through the leg's proxy: where the faults land
	var answered []string
work:
	for n := 0; ; n++ {
		select {
		case <-leg.Done(): // every fault of the schedule was armed and healed
			break work
		default:
		}
		leg.Step(ctx) // the leg arms and heals its faults on the steps its schedule names
		id := fmt.Sprintf("o%d", n)
		_, err := pool.Exec(ctx, `INSERT INTO orders (id) VALUES ($1) ON CONFLICT DO NOTHING`, id)
		switch {
		case err == nil:
			answered = append(answered, id)
		case !leg.Observe(err) && contested.Classify(err) == "":
			t.Fatalf("order %s: %v", id, err) // no fault's error: the component's own
		}
	}
	var recorded int
	err = direct.QueryRow(ctx, `SELECT count(*) FROM orders WHERE id = ANY($1)`, answered).Scan(&recorded)
	if err == nil && recorded != len(answered) {
		err = fmt.Errorf("no-lost-ack violated: %d of %d answered orders recorded", recorded, len(answered))
	}
	leg.Oracle("no-lost-ack", len(answered), len(answered), err)
	if err != nil {
		t.Error(err)
	}
}

// Under confirm-timeout the leg drops the answers of writes that reached
// the server. Committed proves, on the victim database bypassing the
// proxy, that a write whose answer never came was committed all the same:
// the injector side's half of the proof, without which the fault did not
// fire. Call it once per window after the window was held, here as each
// window heals (OnHeal may run on another goroutine than the workload's,
// hence the mutex). Compiled, not run: a leg needs a test.
func ExampleLeg_Committed() {
	var t *testing.T // the one go test hands to the contract test
	leg := contested.Start(t, "shop.orders", contested.ConfirmTimeout)
	var mu sync.Mutex
	var unanswered []string // the workload appends each order whose answer did not come
	leg.OnHeal(func(ctx context.Context, _ contested.Window) {
		mu.Lock()
		ids := unanswered
		unanswered = nil
		mu.Unlock()
		if !leg.Committed(ctx, `SELECT EXISTS (SELECT 1 FROM orders WHERE id = ANY($1))`, ids) {
			t.Logf("none of the %d unanswered orders was committed: this window did not fire", len(ids))
		}
	})
}

// Rand is a *math/rand/v2.Rand seeded from the leg's seed (so IntN, not
// math/rand's Intn): every random choice the test draws from it, in a
// fixed order, is drawn again by the replay command. Compiled, not run: a
// leg needs a test.
func ExampleLeg_Rand() {
	var t *testing.T // the one go test hands to the contract test
	leg := contested.Start(t, "shop.orders", contested.Reset)
	// The test's own random choices come from the leg's seed: the replay makes the same ones.
	rng := leg.Rand()
	item := fmt.Sprintf("sku-%d", rng.IntN(10)) // one of ten items, so that some repeat
	qty := 1 + rng.IntN(5)
	t.Logf("order %d of %s", qty, item)
}

// A job runner's worker under crash-and-resume: the test binary plays the
// worker (the role "jobs", which Main serves: see Role), the leg starts it
// with the jobs' DSN in its environment, kills it with SIGKILL at the
// points of progress its schedule draws and restarts it, and Run drives
// that schedule with the worker's own progress until the last generation
// drained the queue. The oracle, the test's, checks what survived the
// kills. Compiled, not run: a leg needs a test.
func ExampleLeg_StartWorker() {
	var t *testing.T // the one go test hands to the contract test
	ctx := t.Context()
	const jobs = 300
	leg := contested.Start(t, "jobs.runner", contested.CrashAndResume, contested.Span(jobs))
	db, err := pgxpool.New(ctx, leg.DirectDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(ctx, `CREATE TABLE jobs (id int PRIMARY KEY, done_at timestamptz, runs int NOT NULL DEFAULT 0);
		INSERT INTO jobs (id) SELECT generate_series(1, 300)`); err != nil {
		t.Fatal(err)
	}
	w := leg.StartWorker(contested.TestBinary("jobs"), contested.WorkerEnv("JOBS_DSN="+leg.DSN()))
	if err := w.Run(ctx); err != nil {
		t.Fatal(err)
	}
	var lost, twice int
	err = db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE done_at IS NULL), count(*) FILTER (WHERE runs > 1) FROM jobs`).Scan(&lost, &twice)
	if err == nil && (lost > 0 || twice > 0) {
		err = fmt.Errorf("exactly-once violated: after %d worker generations, %d jobs never done and %d done twice", w.Generation(), lost, twice)
	}
	leg.Oracle("exactly-once", jobs, jobs, err)
	if err != nil {
		t.Error(err)
	}
}

// The worker's side: TestMain hands Main the role, and a process that
// TestBinary("jobs") started runs it instead of the tests. It reports
// each job with Progressed once the job's transaction committed, never
// before: a kill between the two must find the job still pending. Its log
// lines (the log package's) show in the test's log with their own file
// and line. Compiled, not run.
func ExampleRole() {
	var m *testing.M // the one go test hands to TestMain
	contested.Main(m, contested.Role("jobs", func(ctx context.Context, _ []string) error {
		db, err := pgxpool.New(ctx, os.Getenv("JOBS_DSN"))
		if err != nil {
			return err
		}
		defer db.Close()
		for {
			tag, err := db.Exec(ctx, `UPDATE jobs SET done_at = now(), runs = runs + 1 WHERE id = (
				SELECT id FROM jobs WHERE done_at IS NULL ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)`)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				log.Printf("no job left")
				return nil // the queue is drained: exit 0
			}
			contested.Progressed(1)
		}
	}))
}

// A library that reports its failures with an error type of its own hides
// whether the operation took effect, so the error's chain cannot tell:
// the client says what it knows. Ambiguous: it may have taken effect
// (Record records an unknown outcome). NoEffect: it certainly did not (a
// definite failure). The chain stays for the observer.
func ExampleAmbiguous() {
	lost := fmt.Errorf("workflow step 3: %w", syscall.ECONNRESET) // the library gave up mid-commit
	refused := &pgconn.PgError{Code: "40001", Message: "could not serialize access"}
	fmt.Println(contested.Definite(lost), contested.Definite(refused))
	fmt.Println(contested.Definite(contested.Ambiguous(refused)), contested.Definite(contested.NoEffect(lost)))
	fmt.Println(contested.Classify(contested.NoEffect(lost)))
	// Output:
	// false true
	// false true
	// ECONNRESET
}
