package plan

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/contested/contested/internal/digest"
	"github.com/contested/contested/internal/gate/flakes"
	"github.com/contested/contested/internal/registry"
)

// depositRegistry is the registry of a small bank module: a deposit
// surface whose only legs, reset and disconnect, strike between
// operations; a lock surface; and a web front no surface would plan a
// store's pitfalls for.
const depositRegistry = `schema = 1

[[surface]]
id = "bank.deposit"
class = "store"
owner = "bank-team"
behavior = "a deposit is applied once"
oracle = "exactly-once (applied per key)"
legs = ["reset", "disconnect"]
tests = ["TestDepositContract"]
package = "./deposit"

[[surface.claims]]
id = "C1"
text = "a deposit is applied once, however often it is retried"
category = "idempotency"

[[surface.claims]]
id = "C2"
text = "a deposit the bank answered is in the balance afterwards"
category = "durability"

[[surface]]
id = "bank.lock"
class = "lock"
owner = "bank-team"
behavior = "one holder at a time"
oracle = "lock model: one holder at a time, fencing tokens increase"
legs = ["isolate"]
tests = ["TestLockContract"]
package = "./lock"
`

// module is the bank module's link graph as the digest gives it.
func module(root string) *digest.Module {
	return &digest.Module{Path: "example.com/bank", Root: root, Packages: []digest.Package{
		{ImportPath: "example.com/bank/deposit", Dir: filepath.Join(root, "deposit"), Tests: []string{"TestDepositContract"},
			Files: []string{"deposit/deposit.go", "deposit/deposit_test.go", "deposit/testdata/", "money/money.go"}},
		{ImportPath: "example.com/bank/e2e", Dir: filepath.Join(root, "e2e"), Tests: []string{"TestEndToEnd"},
			Files: []string{"e2e/e2e_test.go"}},
		{ImportPath: "example.com/bank/lock", Dir: filepath.Join(root, "lock"), Tests: []string{"TestLockContract"},
			Files: []string{"lock/lease.go", "lock/lock_test.go"}},
		{ImportPath: "example.com/bank/money", Dir: filepath.Join(root, "money"), Tests: []string{"TestRound"},
			Files: []string{"money/money.go", "money/money_test.go"}},
	}}
}

// parse parses a registry or fails the test.
func parse(t testing.TB, doc string) *registry.Registry {
	t.Helper()
	reg, err := registry.Parse("contested-surfaces.toml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// input is a change of files to the bank module.
func input(t testing.TB, doc string, files ...string) Input {
	t.Helper()
	root := t.TempDir()
	return Input{Root: root, Module: "example.com/bank", Registry: parse(t, doc), RegistryFile: "contested-surfaces.toml",
		Digest: module(root), Change: Change{Mode: ModeChange, Base: "0123456789abcdef", BaseWhy: "-since main", Files: files},
		PlanFile: "test-results/plan.md", Now: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
}

// hardened is a history in which run r passed leg of surface over n
// seeds.
func hardened(surface, leg, run string, n int) []flakes.Outcome {
	var out []flakes.Outcome
	for i := range n {
		out = append(out, flakes.Outcome{RunID: run, Surface: surface, Leg: leg, Seed: int64(i + 1), Verdict: "pass", Time: time.Date(2026, 11, 30, 0, 0, i, 0, time.UTC)})
	}
	return out
}

// row is the coverage row of a claim's pitfall in p.
func row(t testing.TB, p *Plan, claim, pitfall string) Row {
	t.Helper()
	for _, r := range p.Coverage {
		h, _ := p.Hypothesis(r.Hypothesis)
		if r.Claim == claim && h.Pitfall == pitfall {
			return r
		}
	}
	t.Fatalf("no coverage row of %s against %s in %+v", claim, pitfall, p.Coverage)
	return Row{}
}
