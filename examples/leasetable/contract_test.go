package leasetable_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/contested"
	"github.com/contested/contested/contested/history"
	"github.com/contested/contested/examples/ledger/oracle"
	"github.com/contested/contested/internal/faultlayer/lease"
)

// ports are the lease table's rows in the leg's own database: not the layer's real proxy
// ports (nothing listens on them), so the contract never disturbs the layer it runs on.
var ports = []int{41001, 41002, 41003, 41004, 41005, 41006}

// TestLeaseContract contests faultlayer.lease: the port-lease table never hands a port to two
// holders, every acquire of a port returns a higher epoch, and a stale or foreign epoch is
// refused, while the connection to the table is reset under its clients (reset) and while a
// holder process is killed and a restarted generation reclaims its lease (crash-and-resume).
func TestLeaseContract(t *testing.T) {
	level, err := contested.Level()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		run  func(t *testing.T, level int)
	}{
		{"reset", leaseReset},
		{"crash-and-resume", leaseCrash},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, level) })
	}
}

// leaseReset runs four clients through a proxy that the leg's schedule resets; each client
// acquires, renews and releases, then repeats the release and the renew with the spent epoch.
func leaseReset(t *testing.T, level int) {
	ctx := context.Background()
	leg := contested.Start(t, "faultlayer.lease", contested.Reset, contested.Span(200))
	migrate(t, leg.DirectDSN())
	cfg := leg.PoolConfig()
	cfg.MaxConns = 6
	cfg.ConnConfig.ConnectTimeout = 2 * time.Second
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	table := lease.New(pool, ports, nil)
	rec := history.NewRecorder(time.Time{})
	var epoch string
	leg.OnArm(func(context.Context, contested.Window) { epoch = rec.BeginFault("reset") })
	leg.OnHeal(func(context.Context, contested.Window) {
		if err := rec.EndFault(epoch); err != nil {
			t.Error(err)
		}
	})

	// Each client operation is a step of the leg's schedule, which resets the connections
	// (upstream, downstream, or both at level 2) on the steps it names; the first window
	// comes well after every client has its connection.
	runCtx, stop := context.WithCancel(ctx)
	clients := make([]*client, 4)
	var wg sync.WaitGroup
	for i := range clients {
		clients[i] = &client{table: table, rec: rec, proc: fmt.Sprintf("c%d", i), observe: leg.Observe, leg: leg}
		wg.Add(1)
		go func() { defer wg.Done(); clients[i].run(runCtx) }()
	}
	select {
	case <-leg.Done():
	case <-time.After(3 * time.Minute):
		t.Errorf("the schedule %s was not done after 3 minutes", leg.Schedule())
	}
	stop()
	wg.Wait()
	pool.Close()
	for _, c := range clients {
		if err := errors.Join(c.errs...); err != nil {
			t.Errorf("the history is invalid (a recorder bug, not a verdict): %v", err)
		}
	}
	quiesce(t, leg.DirectDSN())
	judge(t, leg.DirectDSN(), rec, settleLostAcquires, leg)
}

// quiesce waits until no other backend of the database at dsn is running a statement or
// holding a transaction open: from then on no statement a client sent can still commit, so
// the table's state is final.
func quiesce(t *testing.T, dsn string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for {
		var busy int
		err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND pid <> pg_backend_pid() AND state IS DISTINCT FROM 'idle'`).Scan(&busy)
		if err == nil && busy == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the database never quiesced: %d busy backends (%v)", busy, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// settleLostAcquires derives the history the linearizability oracle checks in the reset leg.
// An acquire whose answer was lost either took a port or did nothing. If it took one, nobody
// can have given it back: its holder name is used by no other op (the client never learned
// the lease), releases are fenced by that name, and nothing reclaims a live owner's unexpired
// lease. So at quiescence its holder still holds a row if and only if it took effect; one
// whose holder holds nothing is recorded as a definite no-op. That settles most of the
// ambiguity a reset leaves, which otherwise multiplies porcupine's search, without touching
// the recorded history. It leaves the history unchanged when any op could have freed such a
// lease (a reclaim, or the holder name reused).
func settleLostAcquires(ops []history.Op, rows []row) []history.Op {
	held := map[string]bool{}
	for _, r := range rows {
		if r.holder != "" {
			held[r.holder] = true
		}
	}
	uses := map[string]int{}
	for _, op := range ops {
		if op.Type == history.TypeReclaim {
			return ops
		}
		var ref history.LeaseRef
		if json.Unmarshal(op.Input, &ref) == nil && ref.Holder != "" {
			uses[ref.Holder]++
		}
	}
	out := make([]history.Op, len(ops))
	for i, op := range ops {
		out[i] = op
		var ref history.LeaseRef
		if op.Type != history.TypeAcquire || !op.Ambiguous() || json.Unmarshal(op.Input, &ref) != nil || uses[ref.Holder] != 1 || held[ref.Holder] {
			continue
		}
		out[i].Timeout, out[i].Output = false, nil
		if out[i].Complete == nil {
			out[i].Complete = history.At(op.Invoke)
		}
		out[i].Error = "did not take effect: its holder holds no row at quiescence, and nothing could have freed one (was: " + op.Error + ")"
	}
	return out
}

// migrate creates the lease table with the contract's ports in the database at dsn.
func migrate(t *testing.T, dsn string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := lease.Migrate(ctx, conn, ports); err != nil {
		t.Fatal(err)
	}
}

// judge holds the history against the Lease model (after derive, when set, turns the
// recorded history into the one to check) and checks the table's final state against the
// recorded history; every verdict goes to the legs' records and a failed one fails the test.
func judge(t *testing.T, dsn string, rec *history.Recorder, derive func([]history.Op, []row) []history.Op, legs ...*contested.Leg) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ops := rec.Ops()
	if len(ops) != rec.Issued() {
		t.Errorf("the history holds %d ops, the workload issued %d", len(ops), rec.Issued())
	}
	rows, err := tableRows(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	checked := ops
	if derive != nil {
		checked = derive(ops, rows)
	}
	for _, v := range []oracle.Verdict{
		oracle.CheckLinearizable(ctx, history.NewLease(ports...), checked, rec.Faults(), t.Name(), time.Minute),
		checkFinalState(ops, rows),
	} {
		err := v.Err()
		for _, l := range legs {
			l.Oracle(v.Oracle, v.Produced, v.Checked, err)
		}
		if v.Held() {
			t.Log(v.String())
		} else {
			t.Error(v.String())
		}
	}
}

// row is one fault_port_leases row at quiescence.
type row struct {
	port   int
	holder string // "" when free
	epoch  int64
}

func tableRows(ctx context.Context, dsn string) ([]row, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("read the lease table: %w", err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT port, coalesce(holder, ''), epoch FROM `+lease.TableName+` WHERE port = ANY($1) ORDER BY port`, ports)
	if err != nil {
		return nil, fmt.Errorf("read the lease table: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		err := r.Scan(&x.port, &x.holder, &x.epoch)
		return x, err
	})
	if err != nil {
		return nil, fmt.Errorf("read the lease table: %w", err)
	}
	return out, nil
}

// FinalState is the name of the lease table's at-rest oracle.
const FinalState = "lease-final-state"

// checkFinalState holds the table at rest against the history: every held row is a lease a
// recorded acquire handed out (or an acquire whose answer was lost may have), none was
// answered released or reclaimed and is still held, and no port's epoch is behind the
// highest one handed out, or ahead of it without an acquire whose answer was lost.
func checkFinalState(ops []history.Op, rows []row) oracle.Verdict {
	v := oracle.Verdict{Oracle: FinalState, Produced: len(ports)}
	type key struct {
		port  int
		epoch int64
	}
	acquiredBy := map[key]string{}
	maxEpoch := map[int]int64{}
	lostAcquire := map[string]bool{} // holders whose acquire answer was lost
	freed := map[key]string{}        // lease → the op that freed it
	for _, op := range ops {
		var ref history.LeaseRef
		_ = json.Unmarshal(op.Input, &ref)
		switch {
		case op.Type == history.TypeAcquire && op.Ambiguous():
			lostAcquire[ref.Holder] = true
		case op.Type == history.TypeAcquire && !op.Failed():
			var a history.Acquired
			if json.Unmarshal(op.Output, &a) == nil && a.Port > 0 {
				acquiredBy[key{a.Port, a.Epoch}] = ref.Holder
				maxEpoch[a.Port] = max(maxEpoch[a.Port], a.Epoch)
			}
		case (op.Type == history.TypeRelease || op.Type == history.TypeReclaim) && strings.Trim(string(op.Output), `"`) == history.OutcomeOK:
			freed[key{ref.Port, ref.Epoch}] = fmt.Sprintf("op %d (%s by %s)", op.ID, op.Type, op.Process)
		}
	}
	var leaked int
	for _, r := range rows {
		v.Checked++
		k := key{r.port, r.epoch}
		if r.epoch < maxEpoch[r.port] {
			v.Violations = append(v.Violations, fmt.Sprintf("port %d rests at epoch %d, below epoch %d that an acquire returned", r.port, r.epoch, maxEpoch[r.port]))
		}
		if r.epoch > maxEpoch[r.port] && len(lostAcquire) == 0 {
			v.Violations = append(v.Violations, fmt.Sprintf("port %d rests at epoch %d, above every epoch an acquire returned (%d), and no acquire's answer was lost", r.port, r.epoch, maxEpoch[r.port]))
		}
		if r.holder == "" {
			continue
		}
		switch by, ok := acquiredBy[k]; {
		case ok && by == r.holder && freed[k] != "":
			v.Violations = append(v.Violations, fmt.Sprintf("port %d is still held by %s under epoch %d, although %s answered ok", r.port, r.holder, r.epoch, freed[k]))
		case ok && by == r.holder:
			leaked++ // its release never got an answer
		case lostAcquire[r.holder]:
			leaked++ // an acquire whose answer was lost took it
		default:
			v.Violations = append(v.Violations, fmt.Sprintf("port %d is held by %s under epoch %d, which no recorded acquire handed out", r.port, r.holder, r.epoch))
		}
	}
	if len(rows) != len(ports) {
		v.Violations = append(v.Violations, fmt.Sprintf("the table holds %d of the %d ports", len(rows), len(ports)))
	}
	v.Evidence = fmt.Sprintf("%d rows against %d ops; %d leases left held by answers that were lost", len(rows), len(ops), leaked)
	return v
}
