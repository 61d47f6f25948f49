package verdict

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/contested/contested/e2e/internal/e2etest"
	"github.com/contested/contested/internal/faultlayer/noise"
	"github.com/contested/contested/internal/gate/ladder"
	"github.com/contested/contested/internal/testmodule"
)

// TestAValidateBesideANeighbourNamesACapacityFragileTest: validate with
// CONTESTED_NOISE runs the battery beside a noisy neighbour, records it as
// a fired fault of class capacity, certified with the adopter's own, and
// the ladder names the test that fails only beside it capacity-fragile,
// its author's, with both sides' evidence.
func TestAValidateBesideANeighbourNamesACapacityFragileTest(t *testing.T) {
	t.Parallel()
	dir := e2etest.Adopter(t, map[string]string{"quiet_test.go": testmodule.QuietTest("stock", "TestReportNeedsAQuietMachine", 100)})
	out, code := e2etest.Mage(t, dir, []string{"CONTESTED_NOISE=cpu:16"}, "validate")
	if code != 1 {
		t.Fatalf("validate: exit %d, want 1:\n%s", code, out)
	}
	var v e2etest.ValidateJSON
	e2etest.ReadJSON(t, filepath.Join(dir, "test-results", "validate.json"), &v)
	var o *ladder.Outcome
	for _, x := range v.Ladder {
		if x.Test == "TestReportNeedsAQuietMachine" {
			o = x
		}
	}
	if o == nil {
		t.Fatalf("the ladder did not walk the planted test; ladder %+v:\n%s", v.Ladder, out)
	}
	if saturated(o.Reruns) {
		// Other work saturated the machine for every rerun alone (a
		// loaded battery's other packages): a failure every time is
		// consistent, with the caveat.
		if o.Verdict != "consistent failure" || !strings.Contains(o.Action, "every rerun ran while other work saturated the machine") {
			t.Errorf("every rerun alone busy: verdict %q, action %q; want a consistent failure that says so:\n%s", o.Verdict, o.Action, out)
		}
	} else if o.Owner != ladder.TestAuthor || o.Verdict != ladder.CapacityFragile || o.Capacity == nil || !o.Capacity.Fragile || !strings.Contains(o.Capacity.Neighbour, "cpu:16") {
		t.Errorf("the planted test: owner %s, verdict %q, capacity %+v; want its author's, capacity-fragile, naming the battery's neighbour:\n%s", o.Owner, o.Verdict, o.Capacity, out)
	}
	says := []string{"a noisy neighbour beside the tests: cpu:16", "the neighbour fired", "capacity-fragile", "CONTESTED_NOISE=cpu:16"}
	if saturated(o.Reruns) {
		says = append(says[:2], "every rerun ran while other work saturated the machine")
	}
	for _, want := range says {
		if !strings.Contains(out, want) {
			t.Errorf("validate does not say %q:\n%s", want, out)
		}
	}
	if v.Noise == nil || !v.Noise.Fired() {
		t.Errorf("validate.json's noise %+v: want the neighbour, fired", v.Noise)
	}
	gate := v.Gate
	if gate == nil || gate.ByClass[noise.Class].Fired != 1 {
		t.Errorf("the gate's classes %+v: want one fired %s fault", gate, noise.Class)
	}
	// arbitrate reruns it beside the neighbour CONTESTED_NOISE names.
	out, code = e2etest.Mage(t, dir, []string{"CONTESTED_NOISE=cpu:16"}, "arbitrate", "TestReportNeedsAQuietMachine")
	if code != 1 || !strings.Contains(out, "verdict capacity-fragile") && !strings.Contains(out, "every rerun ran while other work saturated the machine") {
		t.Errorf("arbitrate beside CONTESTED_NOISE=cpu:16: exit %d, want 1, capacity-fragile:\n%s", code, out)
	}
}

// saturated reports whether every rerun alone failed while other work
// saturated the machine.
func saturated(r ladder.Reruns) bool { return r.Runs > 0 && r.Busy == r.Runs }
