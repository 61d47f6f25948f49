package cluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// jobsService is the rig's own test service (internal/testservice): each
// replica completes jobs from a table exactly once, adding each job's
// quantity to a total in the same transaction.
type jobsService struct {
	// healthPath overrides the spec's, for the tests of the health wait.
	healthPath string
}

func (s jobsService) Spec() Spec {
	return Spec{
		Name: "jobs", Package: "./cluster/internal/testservice", Surface: "jobs.cluster",
		Args: func(r Replica) []string {
			return []string{"-dsn-file", r.DSNFile, "-name", r.Name, "-health", r.Health}
		},
		HealthPath: s.healthPath,
	}
}

func (jobsService) Setup(ctx context.Context, db *pgxpool.Pool) (Workload, Oracle, error) {
	_, err := db.Exec(ctx, `
		CREATE TABLE jobs (id text PRIMARY KEY, qty integer NOT NULL, done_by text, done_at timestamptz);
		CREATE TABLE total (qty bigint NOT NULL);
		INSERT INTO total VALUES (0)`)
	if err != nil {
		return nil, nil, err
	}
	w := &jobsWorkload{db: db, acked: map[string]int{}}
	return w, w, nil
}

// jobsWorkload enqueues jobs and judges the table at quiescence.
type jobsWorkload struct {
	db    *pgxpool.Pool
	leg   string
	mu    sync.Mutex
	acked map[string]int // job id → quantity, for every acknowledged enqueue
}

func (w *jobsWorkload) Plan(leg string, seq, n int) { w.leg = leg }

func (w *jobsWorkload) Op(ctx context.Context, i int) error {
	id, qty := fmt.Sprintf("%s-%04d", w.leg, i), 1+i%5
	if _, err := w.db.Exec(ctx, `INSERT INTO jobs (id, qty) VALUES ($1, $2) ON CONFLICT DO NOTHING`, id, qty); err != nil {
		return err
	}
	w.mu.Lock()
	w.acked[id] = qty
	w.mu.Unlock()
	return nil
}

func (w *jobsWorkload) Done(ctx context.Context, leg string) (int, error) {
	var n int
	err := w.db.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE id LIKE $1 AND done_at IS NOT NULL`, leg+"-%").Scan(&n)
	return n, err
}

func (w *jobsWorkload) DoneBy(ctx context.Context, replica string, from, to time.Time) (int, error) {
	var until *time.Time
	if !to.IsZero() {
		until = &to
	}
	var n int
	err := w.db.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE done_by = $1 AND done_at > $2 AND ($3::timestamptz IS NULL OR done_at <= $3)`,
		replica, from, until).Scan(&n)
	return n, err
}

func (w *jobsWorkload) Pending(ctx context.Context) (int, error) {
	var n int
	err := w.db.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE done_at IS NULL`).Scan(&n)
	return n, err
}

// Judge: every acknowledged job is done (no-lost-ack), and the total is
// the sum of the done jobs' quantities (exactly-once).
func (w *jobsWorkload) Judge(ctx context.Context) ([]OracleResult, error) {
	done := map[string]int{}
	rows, err := w.db.Query(ctx, `SELECT id, qty FROM jobs WHERE done_at IS NOT NULL`)
	if err != nil {
		return nil, err
	}
	sum := 0
	for rows.Next() {
		var id string
		var qty int
		if err := rows.Scan(&id, &qty); err != nil {
			return nil, err
		}
		done[id], sum = qty, sum+qty
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var total int
	if err := w.db.QueryRow(ctx, `SELECT qty FROM total`).Scan(&total); err != nil {
		return nil, err
	}
	w.mu.Lock()
	lost := 0
	for id := range w.acked {
		if _, ok := done[id]; !ok {
			lost++
		}
	}
	acked := len(w.acked)
	w.mu.Unlock()
	return []OracleResult{
		{Name: "no-lost-ack", Held: lost == 0, Detail: fmt.Sprintf("no-lost-ack: %d of %d acknowledged jobs not done", lost, acked)},
		{Name: "exactly-once", Held: total == sum, Detail: fmt.Sprintf("exactly-once: total %d, done jobs' quantities %d", total, sum)},
	}, nil
}
