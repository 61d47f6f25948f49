package verdict

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contested/contested/e2e/internal/e2etest"
)

// threeLegs is a contract of the adopter with three legs (burst, reset,
// disconnect) on a store of its own. Its planted defect (build tag
// three_defect) applies a redelivered message again: the burst leg (which
// redelivers) and the reset leg (whose producer redelivers every message
// once) violate exactly-once; the disconnect leg, which delivers each
// message once, passes.
var threeLegs = map[string]string{
	"three/three.go": `// Package three applies deliveries at most once.
package three

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

var redo bool // the planted defect's (defect.go)

// Migrate creates the tables.
func Migrate(ctx context.Context, db *pgxpool.Pool) error {
	_, err := db.Exec(ctx, "CREATE TABLE IF NOT EXISTS total (n integer NOT NULL); CREATE TABLE IF NOT EXISTS seen (id text PRIMARY KEY); INSERT INTO total SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM total)")
	return err
}

// Apply counts delivery id once.
func Apply(ctx context.Context, db *pgxpool.Pool, id string) error {
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "INSERT INTO seen VALUES ($1) ON CONFLICT DO NOTHING", id)
		if err != nil {
			return fmt.Errorf("record %s: %w", id, err)
		}
		if tag.RowsAffected() == 0 && !redo {
			return nil
		}
		_, err = tx.Exec(ctx, "UPDATE total SET n = n + 1")
		return err
	})
}

// Total is how many distinct deliveries were counted.
func Total(ctx context.Context, db *pgxpool.Pool) (int, error) {
	var n int
	err := db.QueryRow(ctx, "SELECT n FROM total").Scan(&n)
	return n, err
}
`,
	"three/defect.go": "//go:build three_defect\n\npackage three\n\nfunc init() { redo = true }\n",
	"three/three_test.go": `package three

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/contested"
)

func TestMain(m *testing.M) { contested.Main(m) }

func pool(t *testing.T, dsn string) *pgxpool.Pool {
	t.Helper()
	db, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if err := Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	return db
}

func oracle(t *testing.T, leg *contested.Leg, want int) {
	t.Helper()
	got, err := Total(context.Background(), pool(t, leg.DirectDSN()))
	if err == nil && got != want {
		err = fmt.Errorf("exactly-once violated: %d counted after %d distinct deliveries", got, want)
	}
	leg.Oracle("exactly-once", want, want, err)
	if err != nil {
		t.Error(err)
	}
}

func done(leg *contested.Leg) bool {
	select {
	case <-leg.Done():
		return true
	default:
		return false
	}
}

// steps delivers through leg's faults until its schedule is done, each
// message redelivered times more, and returns how many distinct ones.
func steps(t *testing.T, leg *contested.Leg, redeliver int) int {
	ctx := context.Background()
	db := leg.Pool(ctx)
	pool(t, leg.DirectDSN())
	var failed []string
	n := 0
	for ; !done(leg); n++ {
		leg.Step(ctx)
		id := fmt.Sprintf("d%d", n)
		for range 1 + redeliver {
			qctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			err := Apply(qctx, db, id)
			cancel()
			if err != nil {
				if !leg.Observe(err) && contested.Classify(err) == "" {
					t.Fatalf("delivery %d: %v", n, err)
				}
				failed = append(failed, id)
			}
		}
	}
	for _, id := range failed {
		if err := Apply(ctx, db, id); err != nil {
			t.Fatalf("redelivery %s: %v", id, err)
		}
	}
	return n
}

func TestThreeContract(t *testing.T) {
	t.Run("burst", func(t *testing.T) {
		ctx := context.Background()
		leg := contested.Start(t, "adopter.three", contested.Burst)
		db := pool(t, leg.DirectDSN())
		distinct := 0
		for w := range leg.Schedule().Windows {
			for _, d := range leg.Deliveries(ctx, 20, contested.BurstPlan{}) {
				if err := Apply(ctx, db, fmt.Sprintf("w%d-%d", w, d.Index)); err != nil {
					t.Fatal(err)
				}
				leg.Consumed(d)
			}
			distinct += 20
		}
		oracle(t, leg, distinct)
	})
	t.Run("reset", func(t *testing.T) {
		leg := contested.Start(t, "adopter.three", contested.Reset, contested.Span(40))
		oracle(t, leg, steps(t, leg, 1))
	})
	t.Run("disconnect", func(t *testing.T) {
		leg := contested.Start(t, "adopter.three", contested.Disconnect, contested.Span(40))
		oracle(t, leg, steps(t, leg, 0))
	})
}
`,
}

const threeSurface = `
[[surface]]
id = "adopter.three"
class = "store"
owner = "three-team"
behavior = "a delivery is counted exactly once"
oracle = "exactly-once"
legs = ["burst", "reset", "disconnect"]
tests = ["TestThreeContract"]
package = "./three"
`

// BenchmarkTheFirstREDOfThreeLegs times, in one run beside two busy loops,
// the adopter with a three-leg contract: its warm full GREEN, then its
// full RED with a planted defect that makes two of the legs violate their
// oracle. It reports the RED's time against the GREEN's (the target is at
// most 3x) and how long after the battery the first RED came (at most
// 5 s). Each side runs once untimed first, so both are warm.
func BenchmarkTheFirstREDOfThreeLegs(b *testing.B) {
	timeFirstRED(b, threeLegs, threeSurface, "three_defect", "TestThreeContract/", "component (three-team)", 2)
}

// timeFirstRED times the adopter with files and surface added: its warm full
// GREEN, then its full RED built with tag, in which want legs of the
// contract (named with prefix) fail, each owned by owner. It runs beside
// two busy loops, each side once untimed first so that both are warm.
func timeFirstRED(b *testing.B, files map[string]string, surface, tag, prefix, owner string, want int) {
	edits := map[string]string{}
	for k, v := range files {
		edits[k] = v
	}
	registry := readFile(b, filepath.Join(e2etest.RepoRoot(b), "testdata", "adopter", "contested-surfaces.toml"))
	edits["contested-surfaces.toml"] = registry + surface
	dir := e2etest.Adopter(b, edits)
	e2etest.Targets(b)
	stop := busyLoops(b, 2)
	defer stop()
	green := func() time.Duration {
		start := time.Now()
		out, code := e2etest.GoToolMage(b, dir, []string{"CI="}, "validate", "-full")
		if code != 0 {
			b.Fatalf("GREEN: exit %d:\n%s", code, out)
		}
		return time.Since(start)
	}
	var v firstRED
	red := func() time.Duration {
		start := time.Now()
		out, code := e2etest.GoToolMage(b, dir, []string{"CI=", "GOFLAGS=-tags=" + tag}, "validate", "-full")
		took := time.Since(start)
		e2etest.ReadJSON(b, filepath.Join(dir, "test-results", "validate.json"), &v)
		failing := 0
		for _, f := range v.BatteryFailures {
			if strings.HasPrefix(f.Test, prefix) {
				failing++
				if !strings.HasPrefix(f.Owner, owner) {
					b.Errorf("%s owned by %q, want %s", f.Test, f.Owner, owner)
				}
			}
		}
		if code != 1 || failing != want {
			b.Fatalf("RED: exit %d, %d legs failing; want 1 and %d:\n%s", code, failing, want, out)
		}
		return took
	}
	green()
	red()
	var g, r, first time.Duration
	b.ResetTimer()
	for range b.N {
		g += green()
		r += red()
		first += v.FirstVerdictAfter
	}
	b.ReportMetric(g.Seconds()/float64(b.N), "s/green")
	b.ReportMetric(r.Seconds()/float64(b.N), "s/red")
	b.ReportMetric(r.Seconds()/g.Seconds(), "red/green")
	b.ReportMetric(first.Seconds()/float64(b.N), "s/first-verdict")
}

func readFile(tb testing.TB, p string) string {
	tb.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// crashLeg is a contract of the adopter that puts a job runner of its own
// under crash-and-resume (contested's worker API). Its planted defect
// (build tag jobs_defect) claims a job in one transaction and marks it
// done in another, so a kill between the two loses the job.
var crashLeg = map[string]string{
	"jobs/jobs.go": `// Package jobs runs jobs from a table, each once.
package jobs

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

var twoSteps bool // the planted defect's (defect.go)

// RunOne runs the next job; false when none is left.
func RunOne(ctx context.Context, db *pgxpool.Pool) (bool, error) {
	if twoSteps {
		var id int
		err := db.QueryRow(ctx, "UPDATE jobs SET claimed = true WHERE id = (SELECT id FROM jobs WHERE NOT claimed ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id").Scan(&id)
		if err != nil {
			return false, nil
		}
		time.Sleep(5 * time.Millisecond) // the job's work, between its two transactions
		_, err = db.Exec(ctx, "UPDATE jobs SET done_at = now(), runs = runs + 1 WHERE id = $1", id)
		return err == nil, err
	}
	time.Sleep(5 * time.Millisecond) // the job's work, inside its transaction's time
	tag, err := db.Exec(ctx, "UPDATE jobs SET claimed = true, done_at = now(), runs = runs + 1 WHERE id = (SELECT id FROM jobs WHERE done_at IS NULL ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)")
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() > 0, nil
}
`,
	"jobs/defect.go": "//go:build jobs_defect\n\npackage jobs\n\nfunc init() { twoSteps = true }\n",
	"jobs/jobs_test.go": `package jobs

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/contested"
)

func TestMain(m *testing.M) {
	contested.Main(m, contested.Role("jobs", func(ctx context.Context, _ []string) error {
		db, err := pgxpool.New(ctx, os.Getenv("JOBS_DSN"))
		if err != nil {
			return err
		}
		defer db.Close()
		for {
			ran, err := RunOne(ctx, db)
			if err != nil {
				return err
			}
			if !ran {
				return nil
			}
			contested.Progressed(1)
		}
	}))
}

func TestJobsContract(t *testing.T) {
	t.Run("crash-and-resume", func(t *testing.T) {
		ctx := t.Context()
		const jobs = 200
		leg := contested.Start(t, "adopter.jobs", contested.CrashAndResume, contested.Span(jobs))
		db, err := pgxpool.New(ctx, leg.DirectDSN())
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec(ctx, "CREATE TABLE jobs (id int PRIMARY KEY, claimed bool NOT NULL DEFAULT false, done_at timestamptz, runs int NOT NULL DEFAULT 0); INSERT INTO jobs (id) SELECT generate_series(1, 200)"); err != nil {
			t.Fatal(err)
		}
		w := leg.StartWorker(contested.TestBinary("jobs"), contested.WorkerEnv("JOBS_DSN="+leg.DSN()))
		if err := w.Run(ctx); err != nil {
			t.Fatal(err)
		}
		var lost, twice int
		err = db.QueryRow(context.Background(), "SELECT count(*) FILTER (WHERE done_at IS NULL), count(*) FILTER (WHERE runs > 1) FROM jobs").Scan(&lost, &twice)
		if err == nil && (lost > 0 || twice > 0) {
			err = fmt.Errorf("exactly-once violated: of %d jobs, %d never done and %d done twice", jobs, lost, twice)
		}
		leg.Oracle("exactly-once", jobs, jobs, err)
		if err != nil {
			t.Error(err)
		}
	})
}
`,
}

const jobsSurface = `
[[surface]]
id = "adopter.jobs"
class = "mq-consumer"
owner = "jobs-team"
behavior = "an enqueued job is done exactly once, even when its worker is killed"
oracle = "exactly-once"
legs = ["crash-and-resume"]
tests = ["TestJobsContract"]
package = "./jobs"
`

// BenchmarkTheFirstREDOfACrashAndResumeLeg is BenchmarkTheFirstREDOfThreeLegs
// for a job runner whose planted defect loses a job when its worker is
// killed between claiming and finishing it.
func BenchmarkTheFirstREDOfACrashAndResumeLeg(b *testing.B) {
	timeFirstRED(b, crashLeg, jobsSurface, "jobs_defect", "TestJobsContract/", "component (jobs-team)", 1)
}
