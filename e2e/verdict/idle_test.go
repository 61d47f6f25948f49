package verdict

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contested/contested/e2e/internal/e2etest"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gate/ladder"
	"github.com/contested/contested/internal/gate/verdict"
)

// idleLeg is a leg of the adopter's surface that arms its fault and stays
// idle: nothing goes through the disconnected proxy, so the fault never
// lands, while its oracle says it held. Everything else about it looks
// like a pass.
const idleLeg = `package stock

import (
	"context"
	"testing"

	"github.com/contested/contested/contested"
)

func TestStockIdle(t *testing.T) {
	t.Run("disconnect", func(t *testing.T) {
		ctx := context.Background()
		leg := contested.Start(t, "adopter.stock", contested.Disconnect)
		leg.Arm(ctx)
		leg.Heal(ctx)
		leg.Oracle("exactly-once", 1, 1, nil)
	})
}
`

// TestAnIdleLegIsNotProvenThroughContestedAndTheLadder adds a leg that
// arms and stays idle to a copy of the adopter fixture: mage contested
// judges it INCONCLUSIVE-fault-not-proven and the surface INCONCLUSIVE
// (exit 1), and the ladder (mage arbitrate on the idle leg's test) reads
// the same verdict from the contract in isolation and gives it to the
// test author as a contract to make decisive, never as GREEN.
func TestAnIdleLegIsNotProvenThroughContestedAndTheLadder(t *testing.T) {
	t.Parallel()
	reg, err := os.ReadFile(filepath.Join(e2etest.RepoRoot(t), "testdata", "adopter", "contested-surfaces.toml"))
	if err != nil {
		t.Fatal(err)
	}
	const legs, tests = `legs = ["burst", "reset"]`, `tests = ["TestStockContract", "TestStockReport"]`
	if !strings.Contains(string(reg), legs) || !strings.Contains(string(reg), tests) {
		t.Fatalf("the adopter registry no longer has %s and %s to extend", legs, tests)
	}
	withIdle := strings.Replace(strings.Replace(string(reg), legs, `legs = ["burst", "reset", "disconnect"]`, 1),
		tests, `tests = ["TestStockContract", "TestStockReport", "TestStockIdle"]`, 1)
	dir := e2etest.Adopter(t, map[string]string{"contested-surfaces.toml": withIdle, "idle_test.go": idleLeg})
	env := []string{"CONTESTED_SEEDS=1"}

	out, code := e2etest.Mage(t, dir, env, "contested", "adopter.stock")
	if code != 1 {
		t.Fatalf("contested adopter.stock with an idle leg: exit %d, want 1:\n%s", code, out)
	}
	var res contract.Result
	e2etest.ReadJSON(t, filepath.Join(dir, "test-results", "contested", "adopter.stock.json"), &res)
	idle, ok := res.Leg("disconnect")
	if !ok || idle.Verdict != verdict.InconclusiveFaultNotProven || idle.Armed == 0 || idle.Fired != 0 {
		t.Fatalf("contested: disconnect leg %+v; want INCONCLUSIVE-fault-not-proven, armed and never fired", idle)
	}
	if res.Contract != verdict.Inconclusive {
		t.Errorf("contested: contract %s, want INCONCLUSIVE", res.Contract)
	}
	for _, lever := range []string{"burst", "reset"} {
		if l, _ := res.Leg(lever); !l.Verdict.Pass() {
			t.Errorf("contested: %s is %s (%s); the healthy legs should still pass", lever, l.Verdict, l.Reason)
		}
	}
	if !strings.Contains(out, "contract: INCONCLUSIVE") || !strings.Contains(out, string(verdict.InconclusiveFaultNotProven)) {
		t.Errorf("contested does not print the idle leg's verdict and the contract:\n%s", out)
	}

	out, code = e2etest.Mage(t, dir, env, "arbitrate", "TestStockIdle/disconnect")
	if code != 1 {
		t.Fatalf("arbitrate TestStockIdle/disconnect: exit %d, want 1:\n%s", code, out)
	}
	var o ladder.Outcome
	e2etest.ReadJSON(t, filepath.Join(dir, "test-results", "ladder", ladder.FileName("TestStockIdle/disconnect")+".json"), &o)
	if o.Step != 3 || o.Contract != verdict.Inconclusive || o.Owner != ladder.TestAuthor || string(o.Verdict) != string(verdict.Inconclusive) {
		t.Fatalf("ladder: step %d, contract %s, owner %s, verdict %s; want step 3, INCONCLUSIVE, test author, INCONCLUSIVE\n%s",
			o.Step, o.Contract, o.Owner, o.Verdict, out)
	}
	var found bool
	for _, l := range o.Legs {
		if l.Lever == "disconnect" {
			found = l.Verdict == verdict.InconclusiveFaultNotProven
		}
	}
	if !found || !strings.Contains(o.Action, "disconnect is "+string(verdict.InconclusiveFaultNotProven)) {
		t.Errorf("ladder: legs %+v, action %q; want the idle leg judged INCONCLUSIVE-fault-not-proven and named in the action", o.Legs, o.Action)
	}
}
