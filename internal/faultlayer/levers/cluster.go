package levers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Cluster is the multi-replica rig as the cluster levers see it: replicas
// of one service, each reaching the database through a Toxiproxy proxy of
// its own. The rig implements it; the levers only act through it.
type Cluster interface {
	// Names names the replicas, in index order.
	Names() []string
	// Kill sends SIGKILL to replica i, waits for it to exit and returns
	// its exit status.
	Kill(ctx context.Context, i int) (string, error)
	// Start starts replica i again after a kill.
	Start(ctx context.Context, i int) error
	// Link names the Toxiproxy proxy between replica i and the database.
	Link(i int) string
	// Acked counts the items of work replica i acknowledged in (from, to];
	// a zero to means up to now.
	Acked(ctx context.Context, i int, from, to time.Time) int
}

// clusterLevels is the levels-table row (Doc.Levels) of the levers that run
// on the cluster rig alone: the rig, not the lever's windows, plans their
// strikes (package cluster's planLeg), so every such lever draws alike.
var clusterLevels = [3]string{
	"one strike per leg: the first window's step (kept between a sixth and a third of the stream), 80-400ms added to the leg's hold, the replica a one-replica lever strikes",
	"a second strike in the stream's third quarter, on a replica of its own draw",
	"a strike as soon as the first healed, on the same replica, while it recovers (its victim need not have been working yet)",
}

// Replica is replica i of c as a Process.
func Replica(c Cluster, i int) Process { return replica{c, i} }

type replica struct {
	c Cluster
	i int
}

func (r replica) Kill(ctx context.Context) (string, error) { return r.c.Kill(ctx, r.i) }
func (r replica) Start(ctx context.Context) error          { return r.c.Start(ctx, r.i) }

// killReplicas kills the victims at once, after noting how much each had
// acknowledged in the second before. Heal restarts them.
func killReplicas(ctx context.Context, c Cluster, t Target, victims []int) (*killFault, error) {
	f := &killFault{c: c, victims: victims, pending: t.Pending, busy: map[int]int{}, recovering: t.Window.Kind == Recovery}
	mark := time.Now()
	for _, i := range victims {
		f.busy[i] = c.Acked(ctx, i, mark.Add(-time.Second), mark)
	}
	statuses := make([]string, len(victims))
	errs := make([]error, len(victims))
	var wg sync.WaitGroup
	for n, i := range victims {
		wg.Go(func() { statuses[n], errs[n] = c.Kill(ctx, i) })
	}
	wg.Wait()
	for n := range victims {
		if errs[n] == nil {
			f.injector = append(f.injector, "SIGKILL: "+statuses[n])
		}
	}
	if err := errors.Join(errs...); err != nil {
		if len(victims) > 1 {
			err = fmt.Errorf("kill every replica: %w", err)
		}
		return f, err
	}
	return f, nil
}

// killFault is replicas killed mid-stream.
type killFault struct {
	c        Cluster
	victims  []int
	pending  int
	busy     map[int]int // per victim, items acknowledged in the second before the kill
	injector []string
	healing  time.Time // when the restart began
	// recovering: the kill is a schedule's recovery window, landing on
	// victims just restarted, which need not have been working yet.
	recovering bool
}

func (f *killFault) Injector() (bool, string) {
	return len(f.injector) == len(f.victims), strings.Join(f.injector, "; ")
}

func (f *killFault) Heal(ctx context.Context) error {
	f.healing = time.Now()
	for _, i := range f.victims {
		if err := f.c.Start(ctx, i); err != nil {
			return err
		}
	}
	return nil
}

// Victim: the kill landed mid-stream when a victim was working (it
// acknowledged items in the second before; a recovery window's victim,
// just restarted, need not have yet) while work was still to come, and a
// restarted victim took work again. Before Heal no victim was restarted,
// so none resumed.
func (f *killFault) Victim(ctx context.Context) (bool, string) {
	names := f.c.Names()
	busy, resumed := false, false
	var parts []string
	for _, i := range f.victims {
		after := "it was never restarted"
		if !f.healing.IsZero() {
			n := f.c.Acked(ctx, i, f.healing, time.Time{})
			after = fmt.Sprintf("%d after its restart", n)
			resumed = resumed || n > 0
		}
		parts = append(parts, fmt.Sprintf("%s acknowledged %d items in the second before the kill and %s", names[i], f.busy[i], after))
		busy = busy || f.busy[i] > 0
	}
	what := fmt.Sprintf("killed with %d items still to come; %s", f.pending, strings.Join(parts, "; "))
	if f.recovering {
		what = "killed while recovering from the kill before, " + what
	}
	return (busy || f.recovering) && resumed && f.pending > 0, what
}
