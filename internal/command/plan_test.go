package command

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/fixture"
	"github.com/contested/contested/internal/gate/certify"
	"github.com/contested/contested/internal/plan"
	"github.com/contested/contested/internal/touched"
)

// bankRegistry registers a deposit contested by reset and disconnect
// alone, and a lock.
const bankRegistry = `schema = 1

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

[[surface]]
id = "bank.lock"
class = "lock"
owner = "bank-team"
behavior = "one holder at a time"
oracle = "lock model: one holder at a time"
legs = ["isolate"]
tests = ["TestLockContract"]
package = "./lock"
`

// bankModule makes a small module in a git repository, committed on main
// and checked out on a feature branch: a deposit of two commits, a lock,
// a README. It returns its root; the results directory is a temporary
// one of its own.
func bankModule(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: apt-get install git")
	}
	dir := t.TempDir()
	env, err := fixture.PrivateCache(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	for _, k := range []string{"GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"} {
		t.Setenv(k, "t")
	}
	for _, k := range []string{"GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"} {
		t.Setenv(k, "t@example.com")
	}
	t.Setenv(envvar.ResultsDir, t.TempDir())
	t.Setenv(envvar.Surfaces, "")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // the secret that seals certificates is the test's own
	for rel, content := range map[string]string{
		"go.mod":                  "module example.com/bank\n\ngo 1.26\n",
		"contested-surfaces.toml": bankRegistry,
		"README.md":               "# bank\n",
		"deposit/deposit.go":      "// Package deposit credits an account in two commits: the credit, then its journal line.\npackage deposit\n\nfunc Deposit() {}\n",
		"deposit/deposit_test.go": "package deposit\n\nimport \"testing\"\n\nfunc TestDepositContract(t *testing.T) {}\n",
		"lock/lease.go":           "package lock\n",
		"lock/lock_test.go":       "package lock\n\nimport \"testing\"\n\nfunc TestLockContract(t *testing.T) {}\n",
	} {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, dir, "init", "-q", "-b", "main")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "bank")
	git(t, dir, "checkout", "-qb", "feature")
	return dir
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// planOf runs the plan command and reads the plan.json it saved.
func planOf(t *testing.T, opts PlanOptions) (*plan.Plan, string) {
	t.Helper()
	var out strings.Builder
	opts.Out, opts.NoProbe = &out, true
	if err := Plan(context.Background(), opts); err != nil {
		t.Fatalf("plan: %v\n%s", err, out.String())
	}
	p, err := plan.Read(filepath.Join(os.Getenv(envvar.ResultsDir), plan.JSONName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(os.Getenv(envvar.ResultsDir), plan.MarkdownName)); err != nil {
		t.Errorf("no plan.md: %v", err)
	}
	return p, out.String()
}

// TestPlanOfChangesOfEveryShape plans four changes to a module as a user
// would: a component change, lease code, docs only, and the deposit of
// two commits that no leg of its own can cut between.
func TestPlanOfChangesOfEveryShape(t *testing.T) {
	tests := []struct {
		name     string
		files    map[string]string
		level    int
		surfaces []string
		early    string
		check    func(t *testing.T, p *plan.Plan)
	}{
		{"a component change", map[string]string{"deposit/deposit.go": "package deposit\n\nfunc Deposit() { _ = 1 }\n"}, 1, []string{"bank.deposit"}, "", nil},
		{"lease code", map[string]string{"lock/lease.go": "package lock\n\nconst TTL = 5\n"}, 2, []string{"bank.lock"}, "", nil},
		{"docs only", map[string]string{"README.md": "# bank\n\nMore.\n"}, 1, nil, "docs only", nil},
		{"a claim no leg of its own can reach", map[string]string{"deposit/deposit.go": "package deposit\n\nfunc Deposit() { credit(); journal() }\nfunc credit() {}\nfunc journal() {}\n"}, 1, []string{"bank.deposit"}, "",
			func(t *testing.T, p *plan.Plan) {
				for _, r := range p.Coverage {
					h, _ := p.Hypothesis(r.Hypothesis)
					if h.Pitfall == "gap-between-commits" {
						if r.Gap != plan.GapNoFault || r.Scenario == "" {
							t.Errorf("the gap between the deposit's commits: %+v", r)
						}
						return
					}
				}
				t.Errorf("no hypothesis of a gap between two commits: %+v", p.Hypotheses)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := bankModule(t)
			for rel, content := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, rel), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			p, out := planOf(t, PlanOptions{Dir: dir})
			if p.Level.Level != tt.level || !slices.Equal(p.Surfaces(), tt.surfaces) || !strings.Contains(p.EarlyExit, tt.early) || tt.early == "" && p.EarlyExit != "" {
				t.Errorf("level %d, surfaces %v, early exit %q; want %d, %v, %q\n%s", p.Level.Level, p.Surfaces(), p.EarlyExit, tt.level, tt.surfaces, tt.early, out)
			}
			if p.Change.Mode != plan.ModeChange || !strings.Contains(p.Change.BaseWhy, "merge base of HEAD and main") {
				t.Errorf("change %+v", p.Change)
			}
			if tt.check != nil {
				tt.check(t, p)
			}
		})
	}
}

// TestPlanReachesAPackageThroughItsCertificate: a change to a file no
// package is built from, which the lock package's last certificate says
// its tests read, reaches the lock package and its surface, and plan.json
// names the route.
func TestPlanReachesAPackageThroughItsCertificate(t *testing.T) {
	dir := bankModule(t)
	own, err := certify.OwnKey()
	if err != nil {
		t.Fatal(err)
	}
	trust, err := certify.NewTrust(own, "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sum := strings.Repeat("ab", 32)
	c, err := trust.Vouch(certify.Certificate{Module: "example.com/bank", Kind: certify.KindPackage, Key: "example.com/bank/lock", Digest: sum, RunID: "run-1",
		At: time.Now().UTC(), Verdict: "PASS", Touched: &touched.Record{Open: []string{"config/limits.yaml"}}, Inputs: sum})
	if err != nil {
		t.Fatal(err)
	}
	if err := certify.NewFile(os.Getenv(envvar.ResultsDir), trust).Write(context.Background(), []certify.Certificate{c}); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "config"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config", "limits.yaml"), []byte("ttl: 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "add", "-A")
	p, out := planOf(t, PlanOptions{Dir: dir})
	if !slices.Equal(p.Surfaces(), []string{"bank.lock"}) {
		t.Fatalf("surfaces %v, want bank.lock, whose package read the file\n%s", p.Surfaces(), out)
	}
	want := []plan.Reach{{File: "config/limits.yaml", Package: "example.com/bank/lock", Route: plan.RouteTouched}}
	if len(p.Radius.Packages) != 1 || !slices.Equal(p.Radius.Packages[0].Routes, want) {
		t.Errorf("packages %+v, want the lock package by its touched record", p.Radius.Packages)
	}
}

// TestPlanAuthorWritesSkeletonsOnce: -author writes the skeletons into
// the module, leaves them alone the second time, and commits nothing.
func TestPlanAuthorWritesSkeletonsOnce(t *testing.T) {
	dir := bankModule(t)
	if err := os.WriteFile(filepath.Join(dir, "deposit", "deposit.go"), []byte("package deposit\n\nfunc Deposit() {}\n// two commits\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, out := planOf(t, PlanOptions{Dir: dir, Author: true})
	var target string
	for _, s := range p.Scenarios {
		if s.Skeleton != "" {
			target = s.Target
			break
		}
	}
	if target == "" || !strings.Contains(out, "plan: wrote "+target) {
		t.Fatalf("nothing written:\n%s", out)
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(target)), []byte("package deposit // mine now\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, out = planOf(t, PlanOptions{Dir: dir, Author: true})
	if b, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(target))); string(b) != "package deposit // mine now\n" {
		t.Errorf("the second -author overwrote %s: %q", target, b)
	}
	if !strings.Contains(out, "never overwritten") {
		t.Errorf("the second -author does not say it left the file alone:\n%s", out)
	}
	cmd := exec.Command("git", "log", "--oneline")
	cmd.Dir = dir
	if b, _ := cmd.Output(); strings.Count(string(b), "\n") != 1 {
		t.Errorf("-author committed: %s", b)
	}
}

// TestPlanRefusesBadInput: contradicting flags, a revision that names no
// commit and a module outside git are bad input (exit 2), saying what to
// give instead.
func TestPlanRefusesBadInput(t *testing.T) {
	dir := bankModule(t)
	outside := t.TempDir()
	for _, rel := range []string{"go.mod", "contested-surfaces.toml"} {
		b, _ := os.ReadFile(filepath.Join(dir, rel))
		if err := os.WriteFile(filepath.Join(outside, rel), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		opts PlanOptions
		says string
	}{
		{"-all with -since", PlanOptions{Dir: dir, All: true, Since: "main"}, "give one"},
		{"a revision that is no commit", PlanOptions{Dir: dir, Since: "v9.9.9"}, "names no commit"},
		{"a module outside git", PlanOptions{Dir: outside}, "give -all"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Out, tt.opts.NoProbe = &strings.Builder{}, true
			err := Plan(context.Background(), tt.opts)
			if ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("Plan = %v (exit %d), want exit 2 saying %q", err, ExitCode(err), tt.says)
			}
		})
	}
	if p, _ := planOf(t, PlanOptions{Dir: outside, All: true}); p.Change.Mode != plan.ModeProject || len(p.Claims) != 2 {
		t.Errorf("-all outside git: %+v", p.Change)
	}
}

// TestValidatePlanRefusesWhatItCannotRun: validate -plan refuses, before
// anything runs and with exit 2, a plan whose scenario lacks an oracle or
// a budget (saying to go back to plan), another module's plan, a plan
// whose claims the registry no longer has, one that names nothing to run
// or a package that is no pattern of the module; a plan edited since it
// was made is run, and said to be edited.
func TestValidatePlanRefusesWhatItCannotRun(t *testing.T) {
	dir := bankModule(t)
	if err := os.WriteFile(filepath.Join(dir, "deposit", "deposit.go"), []byte("package deposit\n\nfunc Deposit() { _ = 2 }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	good, _ := planOf(t, PlanOptions{Dir: dir})
	tests := []struct {
		name  string
		edit  func(p *plan.Plan)
		says  string
		fails bool
	}{
		{"a whole plan runs its packages at its level", func(*plan.Plan) {}, "", false},
		{"a scenario without an oracle", func(p *plan.Plan) { p.Scenarios[0].Oracle.Checker = "" }, "go back to go tool mage plan", true},
		{"a scenario without a budget", func(p *plan.Plan) { p.Scenarios[0].Budget.Hardening = "" }, "has no budget", true},
		{"another module's plan", func(p *plan.Plan) { p.Module = "example.com/other" }, "is a plan of module example.com/other", true},
		{"a claim the registry no longer has", func(p *plan.Plan) { p.Claims[0].ID, p.Claims[0].Key = "C7", "bank.deposit/C7" }, "plan again", true},
		{"nothing to run", func(p *plan.Plan) { p.EarlyExit = "The change is docs only." }, "names nothing to run", true},
		{"a package that is a flag", func(p *plan.Plan) { p.Packages = []string{"-exec=/bin/sh"} }, "no package pattern", true},
		{"an edited plan runs, said to be edited", func(p *plan.Plan) { p.Residual = append(p.Residual, "a reviewer's note") }, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := *good
			p.Scenarios = slices.Clone(good.Scenarios)
			p.Claims = slices.Clone(good.Claims)
			tt.edit(&p)
			file := filepath.Join(t.TempDir(), "plan.json")
			b, _ := json.Marshal(&p)
			if err := os.WriteFile(file, b, 0o644); err != nil {
				t.Fatal(err)
			}
			ws, err := openWorkspace(dir)
			if err != nil {
				t.Fatal(err)
			}
			opts := ValidateOptions{Plan: file}
			rp, err := loadPlan(ws, &opts, false)
			if tt.fails {
				if !errors.Is(err, ErrUsage) || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), tt.says) {
					t.Errorf("loadPlan = %v, want exit 2 saying %q", err, tt.says)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(opts.Patterns, []string{"./deposit"}) || ws.env.Level != p.Level.Level {
				t.Errorf("patterns %v at level %d, want ./deposit at the plan's %d", opts.Patterns, ws.env.Level, p.Level.Level)
			}
			var said strings.Builder
			rp.say(&said)
			if edited := strings.Contains(said.String(), "edited since plan wrote it"); edited != p.Edited() {
				t.Errorf("edited %v, said:\n%s", p.Edited(), said.String())
			}
		})
	}
	ws, err := openWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := loadPlan(ws, &ValidateOptions{Plan: filepath.Join(os.Getenv(envvar.ResultsDir), plan.JSONName)}, true); ExitCode(err) != ExitUsage {
		t.Errorf("a plan with -shard: %v", err)
	}
}
