package cluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/cluster"
	"github.com/contested/contested/cluster/clustertest"
)

// counterService is a service as the rig runs it: its command, built from
// ./cmd/counterd, reads its DSN from the file the rig hands it, counts the
// work it does under its replica's name and answers GET /healthz.
type counterService struct{}

func (counterService) Spec() cluster.Spec {
	return cluster.Spec{
		Name: "counter", Package: "./cmd/counterd", Surface: "shop.cluster",
		Args: func(r cluster.Replica) []string {
			return []string{"-dsn-file", r.DSNFile, "-name", r.Name, "-health", r.Health}
		},
	}
}

func (counterService) Setup(ctx context.Context, db *pgxpool.Pool) (cluster.Workload, cluster.Oracle, error) {
	if _, err := db.Exec(ctx, `CREATE TABLE jobs (id text PRIMARY KEY, done_by text, done_at timestamptz)`); err != nil {
		return nil, nil, err
	}
	w := &jobs{db: db}
	return w, w, nil
}

// jobs is the workload the legs stream through the replicas (one job per
// operation, which a replica takes and marks done) and the oracle that
// judges it at quiescence.
type jobs struct {
	db  *pgxpool.Pool
	leg string
}

func (w *jobs) Plan(leg string, seq, n int) { w.leg = leg }

func (w *jobs) Op(ctx context.Context, i int) error {
	_, err := w.db.Exec(ctx, `INSERT INTO jobs (id) VALUES ($1) ON CONFLICT DO NOTHING`, fmt.Sprintf("%s-%d", w.leg, i))
	return err
}

func (w *jobs) Done(ctx context.Context, leg string) (n int, err error) {
	err = w.db.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE id LIKE $1 AND done_at IS NOT NULL`, leg+"-%").Scan(&n)
	return n, err
}

func (w *jobs) DoneBy(ctx context.Context, replica string, from, to time.Time) (n int, err error) {
	if to.IsZero() {
		to = time.Now()
	}
	err = w.db.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE done_by = $1 AND done_at > $2 AND done_at <= $3`, replica, from, to).Scan(&n)
	return n, err
}

func (w *jobs) Pending(ctx context.Context) (n int, err error) {
	err = w.db.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE done_at IS NULL`).Scan(&n)
	return n, err
}

func (w *jobs) Judge(ctx context.Context) ([]cluster.OracleResult, error) {
	var lost int
	if err := w.db.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE done_at IS NULL`).Scan(&lost); err != nil {
		return nil, err
	}
	return []cluster.OracleResult{{Name: "no-lost-ack", Held: lost == 0, Detail: fmt.Sprintf("%d acknowledged jobs never done", lost)}}, nil
}

// A service joins the rig by implementing Service next to it (a test file
// is enough) and running it from a test the registry's [cluster] table
// names (package = ".", test = "TestCounterCluster"); go tool mage
// cluster-tests runs that test. Compiled, not run: the rig needs a test.
func ExampleService() {
	var t *testing.T // the one go test hands to TestCounterCluster
	if !cluster.UnderTarget() {
		t.Skip("the counter's cluster rig runs under go tool mage cluster-tests")
	}
	rep := clustertest.Run(t, counterService{})
	fmt.Println(rep.Green)
}
