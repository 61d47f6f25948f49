package levers

import (
	"context"
	"fmt"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2/client"
)

// NamePartition is Partition's name.
const NamePartition = "partition"

// Partition cuts replica Target.Replica of Target.Cluster off from the
// database by disabling its proxy (Cluster.Link), read back through
// Target.Toxiproxy; Heal enables it again. The victim side (Judged) is
// that, while cut off, the replica acknowledged nothing and the others
// did.
var Partition Lever = partition{spec{
	name:    NamePartition,
	meaning: "replicas are cut off from each other or from the database, then healed",
	cluster: true,
	needs:   NeedCluster,
	doc: Doc{
		Arm:      "disable one replica's proxy to the database (its link)",
		Injector: "the link read back disabled",
		Victim:   "judged: while cut off the replica acknowledged nothing and the others did",
		Levels:   clusterLevels,
	},
}}

// settle is how long after the cut the victim's window opens: a
// transaction in flight when it landed may still commit.
const settle = 200 * time.Millisecond

type partition struct{ spec }

func (p partition) Arm(ctx context.Context, t Target) (Fault, error) {
	if err := t.check(p, p.needs); err != nil {
		return nil, err
	}
	if t.Toxiproxy == nil {
		return nil, fmt.Errorf("%w: partition needs the Toxiproxy its links are on", ErrNoTarget)
	}
	f := &partitionFault{c: t.Cluster, tp: t.Toxiproxy, i: t.Replica}
	link, err := t.Toxiproxy.Proxy(t.Cluster.Link(t.Replica))
	if err != nil {
		return nil, err
	}
	if err := link.Disable(); err != nil {
		return f, err
	}
	back, err := t.Toxiproxy.Proxy(link.Name)
	if err != nil {
		return f, err
	}
	f.in = !back.Enabled
	f.what = fmt.Sprintf("proxy %s between %s and Postgres disabled (read back enabled=%v)", back.Name, t.Cluster.Names()[t.Replica], back.Enabled)
	f.from = time.Now().Add(settle)
	return f, nil
}

type partitionFault struct {
	c        Cluster
	tp       *toxiproxy.Client
	i        int
	in       bool
	what     string
	from     time.Time // the victim's window: from a moment after the cut
	healedAt time.Time // to the moment the heal was asked for
}

func (f *partitionFault) Injector() (bool, string) { return f.in, f.what }

func (f *partitionFault) Heal(context.Context) error {
	link, err := f.tp.Proxy(f.c.Link(f.i))
	if err != nil {
		return err
	}
	// The window closes as the heal is asked for, not when Toxiproxy
	// answers: the replica may reconnect and acknowledge before the answer
	// arrives, and that work is after the heal.
	f.healedAt = time.Now()
	return link.Enable()
}

// Victim: while cut off the replica acknowledged nothing and the others
// did.
func (f *partitionFault) Victim(ctx context.Context) (bool, string) {
	names := f.c.Names()
	during, others := 0, 0
	for i := range names {
		n := f.c.Acked(ctx, i, f.from, f.healedAt)
		if i == f.i {
			during = n
		} else {
			others += n
		}
	}
	after := f.c.Acked(ctx, f.i, f.healedAt, time.Time{})
	what := fmt.Sprintf("while cut off %s acknowledged %d items and the others %d; after healing it acknowledged %d", names[f.i], during, others, after)
	return during == 0 && others > 0, what
}
