package contested

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/contested/contested/internal/envvar"
)

// runJobs is a job runner's worker process (the role "jobs"): it claims
// the oldest pending job of the jobs table, does it (two milliseconds'
// work), marks it done and commits, one job per transaction, reports each job done once committed, and exits
// when none is pending. With "-lose" it claims a job in a transaction of
// its own before doing it in a second one, and claims only jobs nobody
// claimed: a job claimed by a generation that was killed before its
// second commit is never done (the planted defect).
func runJobs(ctx context.Context, args []string) error {
	lose := len(args) > 0 && args[0] == "-lose"
	conn, err := pgx.Connect(ctx, os.Getenv("JOBS_DSN"))
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	log.Printf("worker started (lose claimed jobs: %v)", lose)
	done := 0
	for {
		id, ok, err := claimJob(ctx, conn, lose)
		if err != nil {
			return err
		}
		if !ok {
			log.Printf("no job pending after %d done", done)
			return nil
		}
		done++
		Progressed(1)
		_ = id
	}
}

func claimJob(ctx context.Context, conn *pgx.Conn, lose bool) (int, bool, error) {
	pending := "done_at IS NULL"
	if lose {
		pending = "claimed_at IS NULL"
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return 0, false, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	var id int
	err = tx.QueryRow(ctx, `SELECT id FROM jobs WHERE `+pending+` ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED`).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, tx.Commit(ctx)
	}
	if err != nil {
		return 0, false, err
	}
	if lose {
		if _, err := tx.Exec(ctx, `UPDATE jobs SET claimed_at = now() WHERE id = $1`, id); err != nil {
			return 0, false, err
		}
		if err := tx.Commit(ctx); err != nil {
			return 0, false, err
		}
		if tx, err = conn.Begin(ctx); err != nil {
			return 0, false, err
		}
		defer tx.Rollback(context.WithoutCancel(ctx))
	}
	time.Sleep(2 * time.Millisecond) // the job's own work
	if _, err := tx.Exec(ctx, `UPDATE jobs SET done_at = now(), runs = runs + 1 WHERE id = $1`, id); err != nil {
		return 0, false, err
	}
	return id, true, tx.Commit(ctx)
}

// jobsLeg is the documented pattern: a crash-and-resume leg whose worker
// is the test binary playing "jobs" over a table of n jobs, driven by Run;
// then the oracle: every job done, exactly once.
func jobsLeg(tb testing.TB, n int, args ...string) {
	ctx := context.Background()
	leg := Start(tb, "test.consumer", CrashAndResume, Span(n))
	conn, err := pgx.Connect(ctx, leg.DirectDSN())
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx)
	mustExec(tb, ctx, conn, `CREATE TABLE jobs (id int PRIMARY KEY, claimed_at timestamptz, done_at timestamptz, runs int NOT NULL DEFAULT 0)`)
	mustExec(tb, ctx, conn, fmt.Sprintf(`INSERT INTO jobs (id) SELECT generate_series(1, %d)`, n))
	w := leg.StartWorker(TestBinary("jobs", args...), WorkerEnv("JOBS_DSN="+leg.DirectDSN()))
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := w.Run(rctx); err != nil {
		tb.Errorf("run the worker: %v", err)
	}
	var notDone, twice int
	if err := conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE done_at IS NULL), count(*) FILTER (WHERE runs > 1) FROM jobs`).Scan(&notDone, &twice); err != nil {
		tb.Fatal(err)
	}
	if notDone > 0 || twice > 0 {
		tb.Errorf("after %d generations: %d of %d jobs never done, %d done twice", w.Generation(), notDone, n, twice)
	}
}

// TestTheDocumentedWorkerPatternPassesAtEveryLevel: a worker process of
// the test binary, killed on the leg's schedule and restarted, its
// progress its own reports: at level 1 (2 kills), 2 (4) and 3 (8, four of
// them while the worker recovers from the kill before) every kill fires,
// each proven by a restarted generation's work, and the jobs are all done
// exactly once. At level 3 a kill that lands before a restarted worker
// reported any work leaves the kill before it proven by the generation
// that finally resumes, never "armed but did not fire".
func TestTheDocumentedWorkerPatternPassesAtEveryLevel(t *testing.T) {
	for level, kills := range map[int]int{1: 2, 2: 4, 3: 8} {
		t.Run(fmt.Sprintf("level %d", level), func(t *testing.T) {
			t.Setenv(envvar.Level, strconv.Itoa(level))
			p := runProbe(t, func(tb *probe) { jobsLeg(tb, 300) })
			if errs := p.errors(); errs != "" {
				t.Fatalf("the leg reported:\n%s", errs)
			}
			// The worker's log lines carry its own file and line.
			if out := p.output(); !strings.Contains(out, "worker_test.go:") || !strings.Contains(out, ": worker#1: worker started") || strings.Contains(out, "worker.go:") {
				t.Errorf("the worker's output does not carry its own file and line:\n%s", out)
			}
			recs := records(t, p.name)
			if len(recs) != kills {
				t.Fatalf("%d records, want %d kills at level %d", len(recs), kills, level)
			}
			for i, r := range recs {
				if !r.Fired || !strings.Contains(r.Evidence.Victim, "resumed") || !strings.Contains(r.Evidence.Injector, "signal: killed") {
					t.Errorf("kill %d: fired %v, injector %q, victim %q", i+1, r.Fired, r.Evidence.Injector, r.Evidence.Victim)
				}
			}
		})
	}
}

// TestAJobLostAfterAKillFailsTheOracle: the planted defect (a job claimed
// in one transaction and done in another) loses the job a kill lands
// between the two; the same pattern catches it. Its eight kills at level
// 3 land wherever the worker is in its work (the schedule moves on a
// clock of its own, not on the worker's reports, which follow a commit):
// each lands in a job's work more often than not.
func TestAJobLostAfterAKillFailsTheOracle(t *testing.T) {
	t.Setenv(envvar.Level, "3")
	p := runProbe(t, func(tb *probe) { jobsLeg(tb, 300, "-lose") })
	if errs := p.errors(); !strings.Contains(errs, "jobs never done") {
		t.Fatalf("a worker that loses claimed jobs passed; the leg reported:\n%s", errs)
	}
}
