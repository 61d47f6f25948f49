package ledger

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Worker drains the queue with several consumers at once.
type Worker struct {
	// Pool is where the queue and the accounts live.
	Pool *pgxpool.Pool
	// Name is recorded on every row a consumer of this worker acknowledges ("name/<n>").
	Name string
	// Consumers is how many consumers claim batches concurrently (default 1).
	Consumers int
	// BatchSize is how many rows a consumer claims at once (default 10).
	BatchSize int
	// ExitWhenEmpty makes Run return nil once no row is pending; otherwise it polls until its
	// context ends.
	ExitWhenEmpty bool
	// Poll is how long an idle consumer waits before looking again (default 50ms).
	Poll time.Duration
	// OnError, when set, hears every error a consumer recovered from (it backs off and
	// claims again): the hook a test observes faults through.
	OnError func(error)
	// OnBatch, when set, hears every batch a consumer committed.
	OnBatch func(Batch)
}

// Batch is one committed batch: the rows a consumer claimed, applied and acknowledged in one
// transaction.
type Batch struct {
	Consumer string
	Rows     []Row
}

// Row is one acknowledged queue row and what applying it did.
type Row struct {
	Seq      int64
	Transfer Transfer
	Outcome  Outcome
}

// Run starts the consumers and waits for them. It returns nil when ExitWhenEmpty is set and
// the queue is drained, ctx's error when ctx ends first.
func (w *Worker) Run(ctx context.Context) error {
	n := max(w.Consumers, 1)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = w.consume(ctx, fmt.Sprintf("%s/%d", w.Name, i))
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// consume is one consumer's loop: claim, apply and acknowledge a batch; back off on errors;
// stop when the queue is drained (ExitWhenEmpty) or ctx ends.
func (w *Worker) consume(ctx context.Context, name string) error {
	poll := w.Poll
	if poll <= 0 {
		poll = 50 * time.Millisecond
	}
	backoff := 10 * time.Millisecond
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		b, err := w.batch(ctx, name)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if w.OnError != nil {
				w.OnError(err)
			}
			if !sleep(ctx, backoff) {
				return ctx.Err()
			}
			backoff = min(backoff*2, 500*time.Millisecond)
			continue
		}
		backoff = 10 * time.Millisecond
		if len(b.Rows) > 0 {
			if w.OnBatch != nil {
				w.OnBatch(b)
			}
			continue
		}
		// Nothing claimable: either drained, or every pending row is locked by another
		// consumer whose batch may still roll back. Only a queue with nothing pending is done.
		if w.ExitWhenEmpty {
			pending, err := NewQueue(w.Pool).Pending(ctx)
			if err == nil && pending == 0 {
				return nil
			}
			if err != nil && w.OnError != nil && ctx.Err() == nil {
				w.OnError(err)
			}
		}
		if !sleep(ctx, poll) {
			return ctx.Err()
		}
	}
}

const claimSQL = `SELECT seq, transfer_id, from_account, to_account, amount FROM transfer_queue
	WHERE acked_at IS NULL ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED`

// ackSQL acknowledges rows with their outcomes, the consumer's name and the batch: the id of
// the transaction that applied them, so that an auditor can tell which rows one batch
// decided (and check it decided them in enqueue order).
const ackSQL = `UPDATE transfer_queue q SET acked_at = clock_timestamp(), outcome = a.outcome, worker = $3::text,
		batch = pg_current_xact_id()::text::bigint
	FROM unnest($1::bigint[], $2::text[]) AS a(seq, outcome) WHERE q.seq = a.seq`

// batch claims, applies and acknowledges one batch in one transaction.
func (w *Worker) batch(ctx context.Context, name string) (Batch, error) {
	size := w.BatchSize
	if size <= 0 {
		size = 10
	}
	b := Batch{Consumer: name}
	tx, err := w.Pool.Begin(ctx)
	if err != nil {
		return b, fmt.Errorf("begin batch: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))

	rows, err := tx.Query(ctx, claimSQL, size)
	if err != nil {
		return b, fmt.Errorf("claim batch: %w", err)
	}
	var r Row
	_, err = pgx.ForEachRow(rows, []any{&r.Seq, &r.Transfer.ID, &r.Transfer.From, &r.Transfer.To, &r.Transfer.Amount}, func() error {
		b.Rows = append(b.Rows, r)
		return nil
	})
	if err != nil {
		return Batch{Consumer: name}, fmt.Errorf("claim batch: %w", err)
	}
	if len(b.Rows) == 0 {
		return b, nil
	}
	if ackBeforeApply {
		// Planted defect: the rows are acknowledged and committed before they are applied.
		if err := ack(ctx, tx, b.Rows, name, "claimed"); err != nil {
			return Batch{Consumer: name}, err
		}
		if err := tx.Commit(ctx); err != nil {
			return Batch{Consumer: name}, fmt.Errorf("commit batch: %w", err)
		}
		if tx, err = w.Pool.Begin(ctx); err != nil {
			return Batch{Consumer: name}, fmt.Errorf("begin batch: %w", err)
		}
		defer tx.Rollback(context.WithoutCancel(ctx))
	}

	// Lock every account the batch touches, in id order, before applying anything: the
	// transaction holds them until commit, and taking them in one sorted step keeps two
	// batches from deadlocking on each other's accounts.
	accounts := map[string]bool{}
	for _, r := range b.Rows {
		accounts[r.Transfer.From], accounts[r.Transfer.To] = true, true
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM accounts WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE`,
		slices.Sorted(maps.Keys(accounts))); err != nil {
		return Batch{Consumer: name}, fmt.Errorf("lock accounts: %w", err)
	}
	for i := range b.Rows {
		o, err := apply(ctx, tx, b.Rows[i].Transfer)
		if err != nil {
			return Batch{Consumer: name}, err
		}
		b.Rows[i].Outcome = o
	}
	if err := ack(ctx, tx, b.Rows, name, ""); err != nil {
		return Batch{Consumer: name}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return Batch{Consumer: name}, fmt.Errorf("commit batch: %w", err)
	}
	return b, nil
}

// ack marks rows acknowledged with their outcomes (or with outcome, when it is set).
func ack(ctx context.Context, tx pgx.Tx, rows []Row, worker string, outcome string) error {
	seqs := make([]int64, len(rows))
	outcomes := make([]string, len(rows))
	for i, r := range rows {
		seqs[i], outcomes[i] = r.Seq, string(r.Outcome)
		if outcome != "" {
			outcomes[i] = outcome
		}
	}
	if _, err := tx.Exec(ctx, ackSQL, seqs, outcomes, worker); err != nil {
		return fmt.Errorf("acknowledge batch: %w", err)
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
