package stock

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/cluster"
	"github.com/contested/contested/cluster/clustertest"
)

// stockService is the stock service's configuration of the cluster rig:
// cmd/stockd as the replicas, deliveries through the inbox as the
// workload, every acknowledged delivery applied exactly once as the oracle.
type stockService struct{}

func (stockService) Spec() cluster.Spec {
	return cluster.Spec{
		Name: "stock", Package: "./cmd/stockd", Surface: "adopter.cluster",
		Args: func(r cluster.Replica) []string {
			return []string{"-dsn-file", r.DSNFile, "-name", r.Name, "-health", r.Health}
		},
	}
}

func (stockService) Setup(ctx context.Context, db *pgxpool.Pool) (cluster.Workload, cluster.Oracle, error) {
	if err := MigrateInbox(ctx, db); err != nil {
		return nil, nil, err
	}
	w := &deliveries{db: db, acked: map[string]bool{}}
	return w, w, nil
}

// deliveries enqueues one widget per operation.
type deliveries struct {
	db    *pgxpool.Pool
	leg   string
	mu    sync.Mutex
	acked map[string]bool
}

func (w *deliveries) Plan(leg string, seq, n int) { w.leg = leg }

func (w *deliveries) Op(ctx context.Context, i int) error {
	id := fmt.Sprintf("%s-%04d", w.leg, i)
	if err := Enqueue(ctx, w.db, Delivery{ID: id, Item: "widget", Qty: 1}); err != nil {
		return err
	}
	w.mu.Lock()
	w.acked[id] = true
	w.mu.Unlock()
	return nil
}

func (w *deliveries) Done(ctx context.Context, leg string) (int, error) {
	var n int
	err := w.db.QueryRow(ctx, `SELECT count(*) FROM inbox WHERE id LIKE $1 AND done_at IS NOT NULL`, leg+"-%").Scan(&n)
	return n, err
}

func (w *deliveries) DoneBy(ctx context.Context, replica string, from, to time.Time) (int, error) {
	var until *time.Time
	if !to.IsZero() {
		until = &to
	}
	var n int
	err := w.db.QueryRow(ctx, `SELECT count(*) FROM inbox WHERE done_by = $1 AND done_at > $2 AND ($3::timestamptz IS NULL OR done_at <= $3)`,
		replica, from, until).Scan(&n)
	return n, err
}

func (w *deliveries) Pending(ctx context.Context) (int, error) {
	var n int
	err := w.db.QueryRow(ctx, `SELECT count(*) FROM inbox WHERE done_at IS NULL`).Scan(&n)
	return n, err
}

// Judge: every acknowledged delivery was applied (no-lost-ack), and the
// stock equals the number of distinct deliveries (exactly-once).
func (w *deliveries) Judge(ctx context.Context) ([]cluster.OracleResult, error) {
	var done, applied int
	if err := w.db.QueryRow(ctx, `SELECT count(*) FROM inbox WHERE done_at IS NOT NULL`).Scan(&done); err != nil {
		return nil, err
	}
	w.mu.Lock()
	ids := make([]string, 0, len(w.acked))
	for id := range w.acked {
		ids = append(ids, id)
	}
	w.mu.Unlock()
	if err := w.db.QueryRow(ctx, `SELECT count(*) FROM applied WHERE delivery_id = ANY($1)`, ids).Scan(&applied); err != nil {
		return nil, err
	}
	q, err := Quantity(ctx, w.db, "widget")
	if err != nil {
		return nil, err
	}
	return []cluster.OracleResult{
		{Name: "no-lost-ack", Held: applied == len(ids), Detail: fmt.Sprintf("no-lost-ack: %d of %d acknowledged deliveries applied", applied, len(ids))},
		{Name: "exactly-once", Held: q == done, Detail: fmt.Sprintf("exactly-once: stock %d after %d distinct deliveries", q, done)},
	}, nil
}

// TestStockCluster runs the stock service in the cluster rig. It is the
// registry's [cluster] test, which `go tool mage cluster-tests` runs; the
// rig takes a minute, so the battery leaves it to the target.
func TestStockCluster(t *testing.T) {
	if !cluster.UnderTarget() {
		t.Skip("the stock service's cluster rig runs under go tool mage cluster-tests")
	}
	clustertest.Run(t, stockService{})
}
