package ledger_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/cluster"
	"github.com/contested/contested/cluster/clustertest"
	"github.com/contested/contested/examples/ledger"
	"github.com/contested/contested/examples/ledger/oracle"
	"github.com/contested/contested/internal/dockerenv"
	"github.com/contested/contested/internal/faultlayer"
	"github.com/contested/contested/internal/reap"
)

// ledgerService is the ledger's configuration of the cluster rig: cmd/ledger
// work as the replicas, transfers through the queue as the workload, and
// no-lost-ack, exactly-once and conservation as the oracles.
type ledgerService struct{}

func (ledgerService) Spec() cluster.Spec {
	return cluster.Spec{
		Name: "ledger", Package: "./examples/ledger/cmd/ledger", Surface: "ledger.cluster",
		Args: func(r cluster.Replica) []string {
			return []string{"work", "-dsn-file", r.DSNFile, "-name", r.Name, "-health", r.Health,
				"-consumers", "2", "-batch", "5", "-poll", "20ms"}
		},
		HealthPath: ledger.HealthPath,
		SecretEnv:  []string{ledger.EnvDSN},
	}
}

// Setup creates the ledger's tables and opens eight accounts of 1000.
func (ledgerService) Setup(ctx context.Context, db *pgxpool.Pool) (cluster.Workload, cluster.Oracle, error) {
	if err := ledger.Migrate(ctx, db); err != nil {
		return nil, nil, err
	}
	w := &ledgerWorkload{db: db, accounts: ledger.AccountNames(8), hist: oracle.NewRecorder()}
	open := map[string]int64{}
	for _, a := range w.accounts {
		open[a] = 1000
		w.opening += 1000
	}
	if err := ledger.OpenAccounts(ctx, db, open); err != nil {
		return nil, nil, err
	}
	return w, w, nil
}

// ledgerWorkload enqueues generated transfers, recording each enqueue in
// one history for the whole rig: the final state holds every leg's
// transfers, so each leg's oracles judge all of them.
type ledgerWorkload struct {
	db        *pgxpool.Pool
	accounts  []string
	opening   int64
	hist      *oracle.Recorder
	transfers []ledger.Transfer
}

func (w *ledgerWorkload) Plan(leg string, seq, n int) {
	w.transfers = ledger.Generate(uint64(seq), n, w.accounts, 50, leg+"-")
}

// Op enqueues one transfer; a retry enqueues the same id again, which the
// consumers' idempotency absorbs.
func (w *ledgerWorkload) Op(ctx context.Context, i int) error {
	t := w.transfers[i]
	_, err := w.hist.Enqueue("producer", t, func() (int64, error) { return ledger.NewQueue(w.db).Enqueue(ctx, t) })
	return err
}

func (w *ledgerWorkload) Done(ctx context.Context, leg string) (int, error) {
	var n int
	err := w.db.QueryRow(ctx, `SELECT count(*) FROM transfer_queue WHERE transfer_id LIKE $1 AND acked_at IS NOT NULL`, leg+"-%").Scan(&n)
	return n, err
}

// DoneBy counts the rows the replica's consumers ("replica-1/0", …)
// acknowledged in the window.
func (w *ledgerWorkload) DoneBy(ctx context.Context, replica string, from, to time.Time) (int, error) {
	var until *time.Time
	if !to.IsZero() {
		until = &to
	}
	var n int
	err := w.db.QueryRow(ctx, `SELECT count(*) FROM transfer_queue WHERE worker LIKE $1 AND acked_at > $2 AND ($3::timestamptz IS NULL OR acked_at <= $3)`,
		replica+"/%", from, until).Scan(&n)
	return n, err
}

func (w *ledgerWorkload) Pending(ctx context.Context) (int, error) {
	return ledger.NewQueue(w.db).Pending(ctx)
}

// Judge runs no-lost-ack, exactly-once and conservation over the history
// and the tables.
func (w *ledgerWorkload) Judge(ctx context.Context) ([]cluster.OracleResult, error) {
	if err := w.hist.Err(); err != nil {
		return nil, fmt.Errorf("the history is too weak to judge: %w", err)
	}
	conn, err := w.db.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	state, err := oracle.Load(ctx, conn.Conn())
	if err != nil {
		return nil, fmt.Errorf("load the final state: %w", err)
	}
	ops := w.hist.Ops()
	var out []cluster.OracleResult
	for _, v := range []oracle.Verdict{
		oracle.CheckNoLostAck(ops, state),
		oracle.CheckExactlyOnce(ops, state),
		oracle.CheckConservation(w.opening, nil, state),
	} {
		out = append(out, cluster.OracleResult{Name: v.Oracle, Held: v.Held(), Detail: v.String()})
	}
	return out, nil
}

// TestClusterRig runs the ledger's rig: in the battery, a green run whose
// legs' records count class cluster for the gate; under `go tool mage
// cluster-tests` (the registry's [cluster] test), the target's run. It
// follows the fault layer: containers when they can come up here, local
// processes otherwise (the same legs, the same records), and says which.
func TestClusterRig(t *testing.T) {
	opts, err := clustertest.Options(t)
	if err != nil {
		t.Fatal(err)
	}
	want := "containers"
	if opts.Local {
		want = "local processes"
	} else if err := faultlayer.ContainersCanRun(context.Background(), faultlayer.ConfigFor(faultlayer.Containers)); err != nil {
		want = "local processes"
		t.Logf("the rig runs on local processes: %v", err)
	}
	rep, err := cluster.Run(context.Background(), ledgerService{}, opts)
	if err != nil {
		t.Fatalf("a healthy rig is not green: %v", err)
	}
	if rep.Mode != want || rep.Reason == "" || len(rep.Legs) != 3 {
		t.Fatalf("mode %s (reason %q), %d legs; want %s, a reason, and the three kill legs", rep.Mode, rep.Reason, len(rep.Legs), want)
	}
	for _, l := range rep.Legs {
		if !l.Fired || l.Record == "" || len(l.Oracles) != 3 {
			t.Errorf("leg %s: fired %v, record %q, %d oracles", l.Name, l.Fired, l.Record, len(l.Oracles))
		}
	}
	dir := filepath.Join(opts.ResultsRoot, "cluster")
	for _, f := range []string{"ps.txt", "logs.txt", "legs.json"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || len(b) == 0 {
			t.Errorf("artifact %s missing or empty: %v", f, err)
		}
	}
	logs, _ := os.ReadFile(filepath.Join(dir, "logs.txt"))
	for i := 1; i <= rep.Replicas; i++ {
		if !strings.Contains(string(logs), fmt.Sprintf("[replica-%d]", i)) {
			t.Errorf("logs.txt has no line of replica-%d", i)
		}
	}
	if rep.Mode == "containers" && !rep.Kept {
		left, err := reap.Leftovers(context.Background(), dockerenv.Require(t), reap.Run(rep.Run))
		if err != nil {
			t.Fatal(err)
		}
		if !left.Empty() {
			t.Errorf("the rig left %s after a normal run: %+v", left, left)
		}
	}
}
