package contested

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/legstart"
	"github.com/contested/contested/internal/runenv"
)

func TestMain(m *testing.M) {
	Serve(Role("worker", worker), Role("jobs", runJobs))
	// The package's own legs run under a registry of test surfaces and
	// write records to a private directory: they are the harness testing
	// itself, not a battery the gate certifies.
	abs, _ := filepath.Abs("testdata/surfaces.toml")
	os.Setenv("CONTESTED_SURFACES", abs)
	dir, err := os.MkdirTemp("", "contested-records-")
	if err != nil {
		panic(err)
	}
	os.Setenv(envvar.ResultsDir, dir)
	// Run, not Main: the directory goes once the tests and their layer are
	// done (TestRunLetsTestMainTearDownAndExitWithTheCode).
	code := Run(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// worker is the crash-and-resume victim: it works until told to stop, or
// until it is killed on its first generation so the leg can kill it
// mid-work.
func worker(ctx context.Context, _ []string) error {
	fmt.Println("working")
	if os.Getenv("WORKER_FINISH") != "" {
		time.Sleep(100 * time.Millisecond)
		fmt.Println("finished the remainder")
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

// probe is a testing.TB that keeps the errors a leg reports instead of
// failing the real test, so tests can assert that a leg fails loudly.
type probe struct {
	*testing.T
	name     string
	mu       sync.Mutex
	errs     []string
	cleanups []func()
	failed   bool
	out      lockedBuffer // what was written to Output
}

// lockedBuffer is a buffer safe for concurrent writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type probeFatal struct{}

func (p *probe) Name() string { return p.name }
func (p *probe) Errorf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.errs = append(p.errs, fmt.Sprintf(format, args...))
	p.failed = true
}
func (p *probe) Error(args ...any) { p.Errorf("%s", fmt.Sprint(args...)) }
func (p *probe) Fatalf(format string, args ...any) {
	p.Errorf(format, args...)
	panic(probeFatal{})
}
func (p *probe) Fatal(args ...any)  { p.Fatalf("%s", fmt.Sprint(args...)) }
func (p *probe) Failed() bool       { p.mu.Lock(); defer p.mu.Unlock(); return p.failed }
func (p *probe) Skipped() bool      { return false }
func (p *probe) Cleanup(f func())   { p.cleanups = append(p.cleanups, f) }
func (p *probe) errors() string     { p.mu.Lock(); defer p.mu.Unlock(); return strings.Join(p.errs, "\n") }
func (p *probe) Helper()            {}
func (p *probe) Output() io.Writer  { return &p.out }
func (p *probe) output() string     { return p.out.String() }
func (p *probe) Setenv(k, v string) { p.T.Setenv(k, v) }

// runProbe runs body against a probe named after t, then the probe's
// cleanups, and returns the probe.
func runProbe(t *testing.T, body func(tb *probe)) *probe {
	p := &probe{T: t, name: t.Name() + "/probe"}
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(probeFatal); !ok {
					panic(r)
				}
			}
		}()
		body(p)
	}()
	for i := len(p.cleanups) - 1; i >= 0; i-- {
		p.cleanups[i]()
	}
	return p
}

// records reads the records a test (by name prefix) wrote.
func records(t *testing.T, test string) []faultrecord.Record {
	t.Helper()
	env, err := runenv.Process()
	if err != nil {
		t.Fatal(err)
	}
	root := env.ResultsDir
	files, _ := filepath.Glob(filepath.Join(root.Fault(), "*.json"))
	var out []faultrecord.Record
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var r faultrecord.Record
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if r.Test == test {
			out = append(out, r)
		}
	}
	return out
}

// queryThrough warms a pool, arms, expects a query to fail through the
// armed proxy, heals, and expects the pool to work again.
func queryThrough(what string) func(tb testing.TB, ctx context.Context, leg *Leg) {
	return func(tb testing.TB, ctx context.Context, leg *Leg) {
		pool := leg.Pool(ctx)
		mustExec(tb, ctx, pool, "SELECT 1")
		leg.Arm(ctx)
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := pool.Exec(qctx, "SELECT 1")
		cancel()
		if err == nil {
			tb.Fatalf("a query through %s succeeded", what)
		}
		leg.Observe(err)
		leg.Heal(ctx)
		mustExec(tb, ctx, pool, "SELECT 1") // recovered
	}
}

// scenarios drive one lever: fire drives traffic while armed so the fault
// reaches the victim; idle arms and heals with nothing for it to hit.
var scenarios = []struct {
	lever   Lever
	surface string
	fire    func(tb testing.TB, ctx context.Context, leg *Leg)
	idle    func(tb testing.TB, ctx context.Context, leg *Leg)
}{
	{
		lever: Disconnect, surface: "test.store",
		fire: queryThrough("a disabled proxy"),
		idle: func(tb testing.TB, ctx context.Context, leg *Leg) {
			leg.Arm(ctx)
			leg.Heal(ctx)
		},
	},
	{
		lever: Reset, surface: "test.store",
		fire: queryThrough("a reset proxy"),
		idle: func(tb testing.TB, ctx context.Context, leg *Leg) {
			pool := leg.Pool(ctx)
			mustExec(tb, ctx, pool, "SELECT 1")
			leg.Arm(ctx) // reset_peer waits for traffic that never comes
			time.Sleep(200 * time.Millisecond)
			leg.Heal(ctx)
		},
	},
	{
		lever: ConfirmTimeout, surface: "test.store",
		fire: func(tb testing.TB, ctx context.Context, leg *Leg) {
			direct := leg.DirectDSN()
			mustExecDSN(tb, ctx, direct, "CREATE TABLE t (id int PRIMARY KEY)")
			pool := leg.Pool(ctx)
			mustExec(tb, ctx, pool, "SELECT 1")
			leg.Arm(ctx)
			qctx, cancel := context.WithTimeout(ctx, time.Second)
			_, err := pool.Exec(qctx, "INSERT INTO t VALUES (1)")
			cancel()
			if err == nil {
				tb.Fatalf("the insert's confirmation arrived through a confirm-timeout proxy")
			}
			leg.Observe(err)
			leg.Heal(ctx)
			if !leg.Committed(ctx, "SELECT EXISTS (SELECT 1 FROM t WHERE id = 1)") {
				tb.Errorf("the timed-out insert is not in the table: the write did not reach the server")
			}
		},
		idle: func(tb testing.TB, ctx context.Context, leg *Leg) {
			mustExecDSN(tb, ctx, leg.DirectDSN(), "CREATE TABLE t (id int PRIMARY KEY)")
			leg.Arm(ctx)
			leg.Heal(ctx)
			leg.Committed(ctx, "SELECT EXISTS (SELECT 1 FROM t WHERE id = 1)")
		},
	},
	{
		lever: Latency, surface: "test.store",
		fire: func(tb testing.TB, ctx context.Context, leg *Leg) {
			pool := leg.Pool(ctx)
			mustExec(tb, ctx, pool, "SELECT 1")
			leg.Arm(ctx)
			mustExec(tb, ctx, pool, "SELECT 1") // slowed, not failed
			leg.Heal(ctx)
		},
		idle: func(tb testing.TB, ctx context.Context, leg *Leg) {
			leg.Arm(ctx) // nothing goes through the proxy
			leg.Heal(ctx)
		},
	},
	{
		lever: PoolExhaustion, surface: "test.store",
		fire: func(tb testing.TB, ctx context.Context, leg *Leg) {
			leg.Arm(ctx)
			pool := leg.Pool(ctx)
			qctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			_, err := pool.Exec(qctx, "SELECT 1")
			cancel()
			if err == nil {
				tb.Fatalf("a new connection succeeded with the database at its limit")
			}
			leg.Observe(err)
			leg.Heal(ctx)
			mustExec(tb, ctx, pool, "SELECT 1")
		},
		idle: func(tb testing.TB, ctx context.Context, leg *Leg) {
			leg.Arm(ctx) // nobody tries to connect
			leg.Heal(ctx)
		},
	},
	{
		lever: Burst, surface: "test.consumer",
		fire: func(tb testing.TB, ctx context.Context, leg *Leg) {
			for _, d := range leg.Deliveries(ctx, 40, BurstPlan{}) {
				leg.Consumed(d)
			}
		},
		idle: func(tb testing.TB, ctx context.Context, leg *Leg) {
			for _, d := range leg.Deliveries(ctx, 40, BurstPlan{}) {
				if d.Kind == Original { // a consumer that drops what is perturbed
					leg.Consumed(d)
				}
			}
		},
	},
	{
		lever: CrashAndResume, surface: "test.consumer",
		fire: func(tb testing.TB, ctx context.Context, leg *Leg) {
			gen := 0
			w := leg.StartWorker(func() *exec.Cmd {
				gen++
				cmd := TestBinary("worker")()
				if gen > 1 {
					cmd.Env = append(cmd.Env, "WORKER_FINISH=1")
				}
				return cmd
			})
			time.Sleep(200 * time.Millisecond)
			leg.Arm(ctx)
			leg.Heal(ctx)
			if err := w.Wait(ctx); err != nil {
				tb.Fatalf("the resumed worker: %v", err)
			}
			leg.Note("resumed worker finished the remainder")
		},
		idle: func(tb testing.TB, ctx context.Context, leg *Leg) {
			leg.StartWorker(TestBinary("worker"))
			time.Sleep(200 * time.Millisecond)
			leg.Arm(ctx)
			leg.Heal(ctx) // restarted, but nobody checks it resumed
		},
	},
}

type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func mustExec(tb testing.TB, ctx context.Context, db execer, sql string) {
	tb.Helper()
	if _, err := db.Exec(ctx, sql); err != nil {
		tb.Fatalf("%s: %v", sql, err)
	}
}

func mustExecDSN(tb testing.TB, ctx context.Context, dsn, sql string) {
	tb.Helper()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		tb.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	mustExec(tb, ctx, conn, sql)
}

func TestEveryLeverFires(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(string(sc.lever), func(t *testing.T) {
			ctx := context.Background()
			p := runProbe(t, func(tb *probe) {
				leg := Start(tb, sc.surface, sc.lever)
				sc.fire(tb, ctx, leg)
			})
			if errs := p.errors(); errs != "" {
				t.Fatalf("the leg reported:\n%s", errs)
			}
			recs := records(t, p.name)
			if len(recs) != 1 {
				t.Fatalf("%d records for %s, want 1", len(recs), p.name)
			}
			r := recs[0]
			if !r.Armed || !r.Fired || r.FiredAt.IsZero() || r.Leg != string(sc.lever) || r.Surface != sc.surface {
				t.Errorf("record = %+v, want armed and fired %s on %s", r, sc.lever, sc.surface)
			}
			if r.Evidence.Injector == "" || strings.HasPrefix(r.Evidence.Victim, "nothing") {
				t.Errorf("record lacks evidence: injector %q, victim %q", r.Evidence.Injector, r.Evidence.Victim)
			}
			if !strings.Contains(r.Replay, fmt.Sprintf("CONTESTED_SEED=%d ", r.Seed)) {
				t.Errorf("replay %q does not carry the seed %d", r.Replay, r.Seed)
			}
			t.Logf("injector: %s\nvictim: %s", r.Evidence.Injector, r.Evidence.Victim)
		})
	}
}

func TestArmedButNotFiredIsDetected(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(string(sc.lever), func(t *testing.T) {
			ctx := context.Background()
			p := runProbe(t, func(tb *probe) {
				leg := Start(tb, sc.surface, sc.lever)
				sc.idle(tb, ctx, leg)
			})
			errs := p.errors()
			if !strings.Contains(errs, "ARMED BUT DID NOT FIRE") || !strings.Contains(errs, string(sc.lever)) {
				t.Fatalf("a %s leg that did not fire was not reported loudly; the leg said:\n%s", sc.lever, errs)
			}
			recs := records(t, p.name)
			if len(recs) != 1 || recs[0].Fired || !recs[0].Armed {
				t.Fatalf("records = %+v, want one armed, unfired", recs)
			}
		})
	}
}

func TestAStartedLegThatNeverArmsFails(t *testing.T) {
	p := runProbe(t, func(tb *probe) { Start(tb, "test.consumer", Burst) })
	if !strings.Contains(p.errors(), "never armed") {
		t.Fatalf("errors = %q, want a complaint that the leg never armed", p.errors())
	}
}

func TestStartRefusesWhatTheRegistryDoesNotAllow(t *testing.T) {
	tests := []struct {
		name, surface string
		lever         Lever
		says          string
	}{
		{"unknown surface", "no.such", Reset, `surface "no.such" is not in`},
		{"lever not listed", "test.consumer", Reset, `does not list lever "reset"`},
		{"unknown lever", "test.store", Lever("shake"), `unknown lever "shake"`},
		{"a cluster lever", "test.store", Lever("mass-restart"), `lever "mass-restart" needs the cluster rig`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := runProbe(t, func(tb *probe) { Start(tb, tt.surface, tt.lever) })
			if !strings.Contains(p.errors(), tt.says) {
				t.Errorf("errors = %q, want %q", p.errors(), tt.says)
			}
		})
	}
}

// TestBadSeedIsRefused: a CONTESTED_SEED that is no seed, 0 among them
// (the value of "no seed" everywhere), stops the leg saying so.
func TestBadSeedIsRefused(t *testing.T) {
	for _, v := range []string{"forty-two", "0"} {
		t.Run(v, func(t *testing.T) {
			t.Setenv(envvar.Seed, v)
			p := runProbe(t, func(tb *probe) { Start(tb, "test.consumer", Burst) })
			if !strings.Contains(p.errors(), `CONTESTED_SEED="`+v+`" is not a seed`) {
				t.Errorf("errors = %q", p.errors())
			}
		})
	}
}

func TestSeedFromTheEnvironmentIsUsed(t *testing.T) {
	t.Setenv(envvar.Seed, "42")
	p := runProbe(t, func(tb *probe) {
		leg := Start(tb, "test.consumer", Burst)
		if leg.Seed() != 42 {
			tb.Errorf("seed %d, want 42", leg.Seed())
		}
		for _, d := range leg.Deliveries(context.Background(), 10, BurstPlan{}) {
			leg.Consumed(d)
		}
	})
	if p.errors() != "" {
		t.Fatal(p.errors())
	}
}

// TestObserveCountsOnlyTheLeversSignals: an error counts as victim-side
// evidence only when it carries one of the lever's signals and a fault is
// armed; a reset is no evidence of pool exhaustion.
func TestObserveCountsOnlyTheLeversSignals(t *testing.T) {
	ctx := context.Background()
	p := runProbe(t, func(tb *probe) {
		leg := Start(tb, "test.store", PoolExhaustion)
		tooMany := &pgconn.PgError{Code: "53300", Message: "too many connections for database"}
		if leg.Observe(tooMany) {
			tb.Errorf("observed %v with no fault armed", tooMany)
		}
		leg.Arm(ctx)
		if reset := fmt.Errorf("read: %w", syscall.ECONNRESET); leg.Observe(reset) {
			tb.Errorf("a reset counted as evidence of pool exhaustion")
		}
		if !leg.Observe(tooMany) {
			tb.Errorf("53300 did not count as evidence of pool exhaustion")
		}
		leg.Heal(ctx)
	})
	if errs := p.errors(); errs != "" {
		t.Fatal(errs)
	}
}

// TestAnUnconfirmedAmbiguousWriteDidNotFire: a confirm-timeout leg whose
// client timed out but whose write was never confirmed committed
// server-side (no Committed) is armed but not fired, and says what is
// missing.
func TestAnUnconfirmedAmbiguousWriteDidNotFire(t *testing.T) {
	ctx := context.Background()
	p := runProbe(t, func(tb *probe) {
		leg := Start(tb, "test.store", ConfirmTimeout)
		mustExecDSN(tb, ctx, leg.DirectDSN(), "CREATE TABLE t (id int PRIMARY KEY)")
		pool := leg.Pool(ctx)
		mustExec(tb, ctx, pool, "SELECT 1")
		leg.Arm(ctx)
		qctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := pool.Exec(qctx, "INSERT INTO t VALUES (1)")
		cancel()
		if !leg.Observe(err) {
			tb.Fatalf("the client's timeout was not observed: %v", err)
		}
		leg.Heal(ctx)
	})
	if errs := p.errors(); !strings.Contains(errs, "ARMED BUT DID NOT FIRE: the write was not confirmed committed server-side (call Committed)") {
		t.Fatalf("the leg said:\n%s", errs)
	}
	if recs := records(t, p.name); len(recs) != 1 || recs[0].Fired {
		t.Fatalf("records = %+v, want one armed, unfired", recs)
	}
}

// TestCommittedWaitsForALateCommitButNotForever: a write the server
// commits after the heal (here a second late, as a busy server may) is
// confirmed, because Committed asks again; a write that never commits is
// not, however long Committed waits, and the leg is armed but not fired.
func TestCommittedWaitsForALateCommitButNotForever(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		late  bool // the write commits a second after the heal
		fired bool
	}{
		{"a late commit is confirmed", true, true},
		{"a commit that never comes is not", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var took time.Duration
			p := runProbe(t, func(tb *probe) {
				leg := Start(tb, "test.store", ConfirmTimeout)
				direct := leg.DirectDSN()
				mustExecDSN(tb, ctx, direct, "CREATE TABLE t (id int PRIMARY KEY)")
				pool := leg.Pool(ctx)
				mustExec(tb, ctx, pool, "SELECT 1")
				leg.Arm(ctx)
				qctx, cancel := context.WithTimeout(ctx, time.Second)
				// The proxied write is a no-op: what commits is the late one, or none.
				_, err := pool.Exec(qctx, "SELECT 1")
				cancel()
				if !leg.Observe(err) {
					tb.Fatalf("the client's timeout was not observed: %v", err)
				}
				leg.Heal(ctx)
				if tc.late {
					go func() {
						time.Sleep(time.Second)
						if conn, err := pgx.Connect(ctx, direct); err == nil {
							_, _ = conn.Exec(ctx, "INSERT INTO t VALUES (1)") // a failure shows as a leg not fired
							conn.Close(ctx)
						}
					}()
				}
				start := time.Now()
				leg.Committed(ctx, "SELECT EXISTS (SELECT 1 FROM t WHERE id = 1)")
				took = time.Since(start)
			})
			recs := records(t, p.name)
			if len(recs) != 1 || recs[0].Fired != tc.fired {
				t.Fatalf("records = %+v, want one, fired %v (the leg said: %s)", recs, tc.fired, p.errors())
			}
			if !tc.fired && took < commitWait {
				t.Errorf("Committed gave up after %s, before its %s", took, commitWait)
			}
		})
	}
}

// TestALegRecordsItsSeedWhenItStarts: the seed is recorded the moment a
// leg starts, so a leg that fails before its first fault arms (and so
// writes no fault record) still leaves the seed it ran with.
func TestALegRecordsItsSeedWhenItStarts(t *testing.T) {
	t.Setenv(envvar.Seed, "4719852482575851")
	p := runProbe(t, func(tb *probe) {
		Start(tb, "test.store", Reset)
		tb.Fatalf("could not acquire the lock within 4s")
	})
	if !strings.Contains(p.errors(), "could not acquire") {
		t.Fatalf("errors = %q", p.errors())
	}
	if recs := records(t, p.name); len(recs) != 0 {
		t.Fatalf("a leg that never armed wrote fault records: %+v", recs)
	}
	env, err := runenv.Process()
	if err != nil {
		t.Fatal(err)
	}
	starts, skipped, err := legstart.Read(env.ResultsDir.String())
	if err != nil || skipped != 0 {
		t.Fatalf("ReadStarts: %v (%d skipped)", err, skipped)
	}
	s, ok := legstart.Of(starts, "", p.name)
	if !ok {
		t.Fatalf("no start record for %s among %+v", p.name, starts)
	}
	if s.Seed != 4719852482575851 || s.Leg != "reset" || s.Surface != "test.store" || s.Level != 1 ||
		!strings.Contains(s.Replay, "CONTESTED_SEED=4719852482575851") || s.StartedAt.IsZero() || s.Package == "" {
		t.Errorf("start record %+v", s)
	}
}
