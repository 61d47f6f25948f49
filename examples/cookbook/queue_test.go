package cookbook_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/contested/contested/contested"
	"github.com/contested/contested/contested/history"
)

// visibility is how long a claimed job stays the worker's before another may claim it.
const visibility = time.Second

// TestQueueContract contests a job table: a producer enqueues, two workers claim the oldest
// job with SKIP LOCKED and finish it, while the connections are reset. Every acknowledged job
// is delivered, in order, and none runs twice at once.
func TestQueueContract(t *testing.T) {
	ctx := context.Background()
	leg := contested.Start(t, "cookbook.queue", contested.Reset, contested.Clients(3))
	if _, err := leg.Client(0).Pool(ctx).Exec(ctx, `CREATE TABLE jobs (seq bigserial, id text PRIMARY KEY,
		claimed_by text, claimed_at timestamptz, done bool NOT NULL DEFAULT false)`); err != nil {
		t.Fatal(err)
	}
	producer := leg.Client(0)
	pool := producer.Pool(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for n := 0; ; n++ {
			select {
			case <-leg.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
			leg.Step(ctx)
			job := fmt.Sprintf("job-%d", n)
			id := producer.Invoke(history.TypeEnqueue, job, nil)
			_, err := pool.Exec(ctx, `INSERT INTO jobs (id) VALUES ($1)`, job)
			producer.Record(id, history.OutcomeOK, err)
		}
	})
	for i := 1; i <= 2; i++ {
		wg.Go(func() { work(ctx, leg, leg.Client(i), true) })
	}
	wg.Wait()
	work(ctx, leg, leg.Client(1), false) // drain: until the queue answers empty for good
	leg.Check(ctx, history.NewQueue(history.QueueSpec{Delivery: history.AtLeastOnce, FIFO: true, Visibility: visibility}))
}

// work claims and finishes jobs as client c: until the schedule is done, or, draining, until
// the queue has answered empty for longer than a claim lasts.
func work(ctx context.Context, leg *contested.Leg, c *contested.Client, steps bool) {
	pool, empty := c.Pool(ctx), time.Time{}
	for {
		if steps {
			select {
			case <-leg.Done():
				return
			default:
			}
			leg.Step(ctx)
		} else if !empty.IsZero() && time.Since(empty) > 2*visibility {
			return
		}
		id := c.Invoke(history.TypeDequeue, "", nil)
		var job string
		err := pool.QueryRow(ctx, `UPDATE jobs SET claimed_by = $1, claimed_at = now() WHERE id = (
			SELECT id FROM jobs WHERE NOT done AND (claimed_at IS NULL OR claimed_at < now() - $2::interval)
			ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id`, c.Name(), visibility.String()).Scan(&job)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			c.Record(id, history.OutcomeEmpty, nil)
			if empty.IsZero() {
				empty = time.Now()
			}
			time.Sleep(20 * time.Millisecond)
			continue
		case err != nil:
			c.Record(id, nil, err)
			continue
		}
		c.Record(id, history.Delivered{Job: job}, nil)
		empty = time.Time{}
		time.Sleep(10 * time.Millisecond) // the job's run
		id = c.Invoke(history.TypeAck, job, nil)
		tag, err := pool.Exec(ctx, `UPDATE jobs SET done = true WHERE id = $1 AND claimed_by = $2`, job, c.Name())
		c.Record(id, map[bool]string{true: history.OutcomeOK, false: history.OutcomeFenced}[tag.RowsAffected() == 1], err)
	}
}
