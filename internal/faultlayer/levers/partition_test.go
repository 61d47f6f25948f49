package levers

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestPartition: cutting replica-2's link reads back disabled, replica-2
// acknowledges nothing while the others go on, and, healed, it works
// again: it fired. A cut of a link the replica does not use reads back
// just as disabled, but the replica goes on working: it did not fire.
func TestPartition(t *testing.T) {
	c := newTestCluster(t, 3)
	spare, _ := proxyTo(t, c.fx.layer, c.fx.layer.PostgresUpstream)
	tests := []struct {
		name    string
		cluster Cluster
		want    error
	}{
		{"its own link", c, nil},
		{"a link it does not use", sparedLink{c, spare.Name}, ErrUnseen},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := arm(t, Partition, Target{Toxiproxy: c.fx.layer.Toxiproxy(), Cluster: tt.cluster, Replica: 1})
			in, what := f.Injector()
			if !in || !strings.Contains(what, "and Postgres disabled (read back enabled=false)") {
				t.Fatalf("injector: %v %q", in, what)
			}
			time.Sleep(time.Second)
			victim, err := judge(t, Partition, c, f)
			if !errors.Is(err, tt.want) || (err == nil) != (tt.want == nil) {
				t.Fatalf("Fired = %v, want %v (%s)", err, tt.want, victim)
			}
			if back, err := c.fx.layer.Toxiproxy().Proxy(tt.cluster.Link(1)); err != nil || !back.Enabled {
				t.Fatalf("after Heal the link reads back %+v, %v; want enabled", back, err)
			}
		})
	}
}

// sparedLink is a cluster whose Link names a proxy no replica uses.
type sparedLink struct {
	*testCluster
	spare string
}

func (s sparedLink) Link(int) string { return s.spare }
