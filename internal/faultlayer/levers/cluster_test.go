package levers

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/internal/reexec"
)

// replicaMain is one replica of the test cluster: it acknowledges an item
// of work every 10ms into the acks table, through its own proxy, and
// reconnects whenever its connection fails. It never exits on its own.
func replicaMain() int {
	dsn, name := os.Getenv("REPLICA_DSN"), os.Getenv("REPLICA_NAME")
	ctx := context.Background()
	var conn *pgx.Conn
	for {
		if conn == nil {
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			conn, _ = pgx.Connect(cctx, dsn)
			cancel()
		}
		if conn != nil {
			qctx, cancel := context.WithTimeout(ctx, time.Second)
			_, err := conn.Exec(qctx, `INSERT INTO acks (replica, at) VALUES ($1, clock_timestamp())`, name)
			cancel()
			if err != nil {
				conn.Close(ctx)
				conn = nil
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// testCluster is a real cluster for the cluster levers: replicas are
// processes, each reaching a victim database through a Toxiproxy proxy of
// its own, and Acked reads what they acknowledged from the database.
type testCluster struct {
	names   []string
	links   []string
	workers []*Worker
	db      *pgxpool.Pool
	fx      *fixture
}

var _ Cluster = (*testCluster)(nil)

func newTestCluster(t *testing.T, n int) *testCluster {
	t.Helper()
	ctx := context.Background()
	c := &testCluster{fx: newFixture(t, false)}
	c.db = c.fx.pool(t)
	mustExec(t, ctx, c.db, `CREATE TABLE acks (replica text NOT NULL, at timestamptz NOT NULL)`)
	for i := range n {
		p, dial := proxyTo(t, c.fx.layer, c.fx.layer.PostgresUpstream)
		name, dsn := fmt.Sprintf("replica-%d", i+1), c.fx.victim.DSN(dial)
		w := NewWorker(t, func() *exec.Cmd {
			return reexec.Command(t, "replica", "REPLICA_DSN="+dsn, "REPLICA_NAME="+name)
		})
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
		c.names, c.links, c.workers = append(c.names, name), append(c.links, p.Name), append(c.workers, w)
	}
	for i := range n {
		c.waitAcking(t, i, time.Now().Add(-time.Second))
	}
	return c
}

func (c *testCluster) Names() []string                                 { return c.names }
func (c *testCluster) Kill(ctx context.Context, i int) (string, error) { return c.workers[i].Kill(ctx) }
func (c *testCluster) Start(ctx context.Context, i int) error          { return c.workers[i].Start(ctx) }
func (c *testCluster) Link(i int) string                               { return c.links[i] }

func (c *testCluster) Acked(ctx context.Context, i int, from, to time.Time) int {
	q, args := `SELECT count(*) FROM acks WHERE replica = $1 AND at > $2`, []any{c.names[i], from}
	if !to.IsZero() {
		q, args = q+` AND at <= $3`, append(args, to)
	}
	var n int
	if err := c.db.QueryRow(ctx, q, args...).Scan(&n); err != nil {
		return -1
	}
	return n
}

// waitAcking waits until replica i acknowledged something after since.
func (c *testCluster) waitAcking(t *testing.T, i int, since time.Time) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if c.Acked(context.Background(), i, since, time.Time{}) > 0 {
			return
		}
	}
	t.Fatalf("%s acknowledged nothing after %s", c.names[i], since.Format(time.RFC3339Nano))
}

// judge heals f, waits for every replica to work again, and returns the
// victim side's account and the lever's verdict on both sides' proof.
func judge(t *testing.T, l Lever, c *testCluster, f Fault) (victim string, fired error) {
	t.Helper()
	ctx := context.Background()
	healed := time.Now()
	if err := f.Heal(ctx); err != nil {
		t.Fatalf("heal %s: %v", l.Name(), err)
	}
	for i := range c.names {
		c.waitAcking(t, i, healed)
	}
	in, injector := f.Injector()
	landed, victim := f.(Judged).Victim(ctx)
	t.Logf("injector: %s\nvictim: %s", injector, victim)
	p := Proof{Injected: in}
	if landed {
		p.Victim = 1
	}
	return victim, l.Fired(p)
}
