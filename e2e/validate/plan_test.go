package validate

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contested/contested/e2e/internal/e2etest"
	"github.com/contested/contested/internal/findings"
	"github.com/contested/contested/internal/gate/verdict"
	"github.com/contested/contested/internal/plan"
)

// TestPlanThenValidateThePlan takes a change to the adopter from a plan
// to findings, as a user would: the plan puts the stock's claims at risk;
// validate -plan runs them over their hardening seeds and writes findings
// in which each claim passed at hardening with its evidence chain; a plan
// whose scenario lost its oracle is refused before anything runs; and a
// planted defect is a falsified claim, blamed on the SUT.
func TestPlanThenValidateThePlan(t *testing.T) {
	t.Parallel()
	dir := e2etest.Adopter(t, nil)
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.email=t@example.com", "-c", "user.name=t"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	git("add", "-A")
	git("commit", "-qm", "adopter")
	git("checkout", "-qb", "feature")
	stock := filepath.Join(dir, "stock.go")
	b, err := os.ReadFile(stock)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stock, append(b, []byte("\n// Stock is applied once per delivery.\n")...), 0o644); err != nil {
		t.Fatal(err)
	}

	out, code := e2etest.GoToolMage(t, dir, nil, "plan")
	if code != 0 || !strings.Contains(out, "1 surface (adopter.stock), whose 2 claims are at risk") {
		t.Fatalf("plan: exit %d:\n%s", code, out)
	}
	planFile := filepath.Join(dir, "test-results", plan.JSONName)
	p, err := plan.Read(planFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Claims) != 2 || p.Level.Level != 1 || len(p.Packages) != 1 || p.Packages[0] != "." {
		t.Fatalf("plan: claims %+v, level %d, packages %v", p.Claims, p.Level.Level, p.Packages)
	}

	out, code = e2etest.Mage(t, dir, nil, "validate", "-plan", "test-results/plan.json")
	if code != 0 || !strings.Contains(out, "over its hardening budget's 3 seeds") {
		t.Fatalf("validate -plan: exit %d:\n%s", code, out)
	}
	var f findings.Findings
	e2etest.ReadJSON(t, filepath.Join(dir, "test-results", findings.JSONName), &f)
	if f.Plan.SHA256 != p.SHA256 || f.Plan.Edited || len(f.Claims) != 2 {
		t.Fatalf("findings: plan %+v, claims %+v", f.Plan, f.Claims)
	}
	for _, c := range f.Claims {
		if c.Verdict != verdict.PassHardening || c.Budget != findings.TierHardening || len(c.Chain) == 0 || c.Broken != "" {
			t.Errorf("claim %s: %s, budget %s, chain %q (broken %q); want PASS-hardening with its chain", c.Key, c.Verdict, c.Budget, c.Chain, c.Broken)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "test-results", findings.MarkdownName)); err != nil {
		t.Errorf("no findings.md: %v", err)
	}

	// A plan whose scenario lost its oracle: exit 2, nothing run.
	var raw map[string]any
	e2etest.ReadJSON(t, planFile, &raw)
	raw["scenarios"] = []map[string]any{{"id": "S1", "name": "idempotency_under_reset", "budget": map[string]any{"smoke": "1 seed", "hardening": "3 seeds", "release": "10 seeds"}}}
	bad, _ := json.Marshal(raw)
	if err := os.WriteFile(filepath.Join(dir, "bad-plan.json"), bad, 0o644); err != nil {
		t.Fatal(err)
	}
	out, code = e2etest.Mage(t, dir, nil, "validate", "-plan", "bad-plan.json")
	if code != 2 || !strings.Contains(out, "go back to go tool mage plan") || strings.Contains(out, "fault layer: up") {
		t.Errorf("validate -plan of a plan without an oracle: exit %d, want 2 before anything runs:\n%s", code, out)
	}

	// The planted defect: C1 is falsified, and the SUT is to blame.
	out, code = e2etest.Mage(t, dir, []string{"GOFLAGS=-tags=adopter_defect", "CONTESTED_SEEDS=1"}, "validate")
	if code != 1 {
		t.Fatalf("validate with the planted defect: exit %d, want 1:\n%s", code, out)
	}
	f = findings.Findings{}
	e2etest.ReadJSON(t, filepath.Join(dir, "test-results", findings.JSONName), &f)
	blamed := false
	for _, fl := range f.Failures {
		if fl.Surface == "adopter.stock" && fl.Leg == "burst" && fl.Blame == findings.BlameSUT {
			blamed = true
		}
	}
	if !blamed || !strings.Contains(f.Summary, "adopter.stock/C1") || !strings.Contains(f.Summary, "blame: SUT") {
		t.Errorf("findings of the planted defect: summary %q, failures %+v; want C1 falsified, burst blamed on the SUT", f.Summary, f.Failures)
	}
}
