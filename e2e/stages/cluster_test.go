package stages

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contested/contested/cluster"
	"github.com/contested/contested/e2e/internal/e2etest"
	"github.com/contested/contested/internal/gate"
)

// TestAdopterClusterTests: the adopter runs a service of its own
// (cmd/stockd, with its health endpoint) in the cluster rig through
// cluster-tests: the [cluster] test of its registry, with its own workload
// and oracles, on containers when they can come up here and on local
// processes otherwise. Every kill leg fires and holds, and the artifacts
// and the legs' records of class cluster land under its
// test-results/cluster/.
func TestAdopterClusterTests(t *testing.T) {
	t.Parallel()
	dir := e2etest.Adopter(t, nil)
	start := time.Now()
	out, code := e2etest.Mage(t, dir, nil, "cluster-tests")
	t.Logf("cluster-tests took %s", time.Since(start).Round(time.Second))
	if code != 0 || !strings.Contains(out, "cluster legs (stock, ") || !strings.Contains(out, "cluster-tests: GREEN") {
		t.Fatalf("cluster-tests in the adopter: exit %d, want 0, its legs and GREEN:\n%s", code, out)
	}
	results := filepath.Join(dir, "test-results", "cluster")
	var rep cluster.Report
	e2etest.ReadJSON(t, filepath.Join(results, "legs.json"), &rep)
	if rep.Service != "stock" || !rep.Green || len(rep.Legs) != 3 {
		t.Fatalf("legs.json: service %q, green %v, %d legs; want stock's three kill legs, green", rep.Service, rep.Green, len(rep.Legs))
	}
	for _, l := range rep.Legs {
		if !l.OK() || len(l.Oracles) != 2 {
			t.Errorf("leg %s: fired %v, error %q, oracles %+v; want fired and both of the adopter's oracles held", l.Name, l.Fired, l.Error, l.Oracles)
		}
	}
	for _, f := range []string{"ps.txt", "logs.txt"} {
		if b, err := os.ReadFile(filepath.Join(results, f)); err != nil || len(b) == 0 {
			t.Errorf("artifact %s missing or empty: %v", f, err)
		}
	}
	recs, unreadable, err := gate.ReadRecords(filepath.Join(results, "fault"))
	if err != nil || len(unreadable) > 0 || len(recs) != 3 {
		t.Fatalf("records: %d, unreadable %v, %v; want one per leg", len(recs), unreadable, err)
	}
	for _, r := range recs {
		if r.Class != cluster.Class || r.Surface != "adopter.cluster" || r.Package != "example.com/adopter" || !strings.HasPrefix(r.Test, "TestStockCluster/") || !r.Fired {
			t.Errorf("record %s: class %q, surface %q, package %q, fired %v", r.Test, r.Class, r.Surface, r.Package, r.Fired)
		}
	}
}
