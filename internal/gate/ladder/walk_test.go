package ladder

// The tests that walk the ladder over the adopter fixture to its end run
// go test on it several times each (reruns, then the contract over a
// seed): a minute or more apiece on a loaded machine. They run in
// parallel, and this file comes last, so every quick test of the package
// runs before any of them starts: with go test's -failfast (which
// mutation testing passes) a failure among the quick tests ends the run
// without starting them.

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/capacity"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gate/verdict"
	"github.com/contested/contested/internal/markdown"
	"github.com/contested/contested/internal/replayenv"
	"github.com/contested/contested/internal/testlog"
)

// TestAPassingPreflightGoesOnToStepThree is the other side of
// TestAFailedPreflightAlwaysCannotRun: the same options with a preflight whose checks all passed reach
// step 3, so step 2 is not simply always taken. The leg reruns on a real
// layer: on a layer that does not answer it fails (under CI it must, not
// skip), and that rerun would be evidence against the given contract.
func TestAPassingPreflightGoesOnToStepThree(t *testing.T) {
	t.Parallel()
	given := fixtureOptions(t)
	opts := options(t)
	opts.Reruns, opts.Seen, opts.Contracts = 1, given.Seen, given.Contracts
	o, err := Walk(context.Background(), "TestStockContract/reset", opts)
	if err != nil {
		t.Fatal(err)
	}
	if o.Step != 3 || o.Contract != verdict.Green {
		t.Fatalf("step %d, contract %s; want step 3 and the given GREEN contract", o.Step, o.Contract)
	}
}

func TestAComponentDefectIsTheComponentsWithAReproducibleSeed(t *testing.T) {
	t.Parallel()
	opts := options(t, "GOFLAGS=-tags=adopter_defect")
	// One rerun of the test: the seed's reproducibility is the contract's
	// own reruns, which every failing seed gets.
	opts.Reruns = 1
	o, err := Walk(context.Background(), "TestStockContract/burst", opts)
	if err != nil {
		t.Fatal(err)
	}
	o.Write(testlog.Writer(t))
	if o.Step != 3 || o.Contract != verdict.Red || o.Owner != Component || o.OwnerName != "stock-team" {
		t.Fatalf("ended at step %d, contract %s, owner %s (%s); want step 3, RED, component (stock-team)", o.Step, o.Contract, o.Owner, o.OwnerName)
	}
	if o.Verdict != Finding(verdict.FailReproducible) {
		t.Errorf("verdict %s, want FAIL-reproducible", o.Verdict)
	}
	if !strings.Contains(o.Action, "CONTESTED_SEED=") || !strings.Contains(o.Action, "leg burst") {
		t.Errorf("action %q lacks the leg and the seed's replay command", o.Action)
	}
	if o.Reruns.Class != "consistent" {
		t.Errorf("the defective test's reruns: %+v, want consistent", o.Reruns)
	}
	issue := o.Issue()
	// The body is Markdown: the owner shows as written once rendered.
	for _, want := range []string{"fix: adopter.stock:", markdown.Text("component (stock-team)"), "FAIL-reproducible", "CONTESTED_SEED="} {
		if !strings.Contains(issue, want) {
			t.Errorf("issue body lacks %q:\n%s", want, issue)
		}
	}
}

func TestATestThatFlakesOnItsFixtureIsTheTestAuthors(t *testing.T) {
	t.Parallel()
	counter := filepath.Join(t.TempDir(), "runs")
	opts := options(t, "ADOPTER_FLAKY_FIXTURE="+counter)
	opts.Reruns = 2 // the fixture fails the first, passes the second
	o, err := Walk(context.Background(), "TestStockReport", opts)
	if err != nil {
		t.Fatal(err)
	}
	o.Write(testlog.Writer(t))
	if o.Step != 3 || o.Contract != verdict.Green || o.Owner != TestAuthor {
		t.Fatalf("ended at step %d, contract %s, owner %s; want step 3, GREEN, test author", o.Step, o.Contract, o.Owner)
	}
	if o.Reruns.Class != "flaky" || o.Reruns.Failures != 1 || !strings.Contains(string(o.Verdict), "flaky battery") {
		t.Errorf("reruns %+v, verdict %q; want flaky", o.Reruns, o.Verdict)
	}
	if !strings.Contains(o.Action, "without loosening it") {
		t.Errorf("action %q does not forbid loosening the test", o.Action)
	}
}

func TestAGreenContractInASaturatedRunIsCapacityWithEvidence(t *testing.T) {
	t.Parallel()
	opts := options(t)
	opts.Reruns = 1 // it passes; the capacity report decides
	// The capacity report of a run in which the machine was saturated.
	var samples []capacity.Sample
	for range 8 {
		samples = append(samples, capacity.Sample{CPUs: 2, Load1: 11, MemTotalBytes: 100, MemAvailBytes: 50, DiskTotalBytes: 100 << 30, DiskFreeBytes: 50 << 30})
	}
	rep := capacity.Analyze(samples)
	opts.Capacity = &rep
	opts.Contracts = map[string]*contract.Result{"adopter.stock": {Surface: "adopter.stock", Contract: verdict.Green}}
	// It failed in that run, in words of time (and passes its reruns).
	opts.Seen = &battery.Result{Tests: []battery.Test{{Package: "example.com/adopter", Name: "TestStockReport", Action: "fail", Failure: "stock_test.go:40: the report took 3.1s, over its 2s bound"}}}
	o, err := Walk(context.Background(), "TestStockReport", opts)
	if err != nil {
		t.Fatal(err)
	}
	if o.Owner != Capacity || len(o.Contended) == 0 || !strings.Contains(o.Action, "load: 5.5 per CPU") || !strings.Contains(o.Action, "still fix it") {
		t.Fatalf("owner %s, contended %v, action %q; want capacity naming the load, and still a fix", o.Owner, o.Contended, o.Action)
	}
}

// TestATestThatDidNotFailHasNothingToArbitrate: a test that passes every
// rerun and did not fail in the battery it was reported from (or when no
// battery is known) ends with NO FAILURE, no owner and no contract run;
// the same reruns with a battery in which it failed go on to judge it.
func TestATestThatDidNotFailHasNothingToArbitrate(t *testing.T) {
	t.Parallel()
	passed := &battery.Result{Tests: []battery.Test{
		{Package: "example.com/adopter", Name: "TestStockReport", Action: "pass"},
		{Package: "example.com/adopter", Name: "TestStockContract", Action: "fail"},
	}}
	failed := &battery.Result{Tests: []battery.Test{{Package: "example.com/adopter", Name: "TestStockReport", Action: "fail"}}}
	packageFailed := &battery.Result{Packages: []battery.Package{{Name: "example.com/adopter", Action: "fail", Output: "FAIL\texample.com/adopter [build failed]\n"}}}
	tests := []struct {
		name      string
		seen      *battery.Result
		noFailure bool
	}{
		{"passed in the last run", passed, true},
		{"no last run", nil, true},
		{"failed in the last run", failed, false},
		{"its package failed in the last run", packageFailed, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := options(t)
			opts.Reruns = 1
			opts.Seen = tt.seen
			opts.Contracts = map[string]*contract.Result{"adopter.stock": {Surface: "adopter.stock", Contract: verdict.Green}}
			o, err := Walk(context.Background(), "TestStockReport", opts)
			if err != nil {
				t.Fatal(err)
			}
			o.Write(testlog.Writer(t))
			if o.Reruns.Class != "passes" {
				t.Fatalf("reruns %+v; the fixture's TestStockReport should pass", o.Reruns)
			}
			if got := o.NoFailure(); got != tt.noFailure {
				t.Fatalf("NoFailure() = %v (verdict %s, owner %q), want %v", got, o.Verdict, o.Owner, tt.noFailure)
			}
			if !tt.noFailure {
				if o.Owner != TestAuthor || o.Contract != verdict.Green {
					t.Errorf("owner %q, contract %s; want the test author over a GREEN contract", o.Owner, o.Contract)
				}
				return
			}
			if o.Owner != "" || o.Contract != "" || len(o.Legs) != 0 || !strings.Contains(o.Action, "nothing to arbitrate") {
				t.Errorf("owner %q, contract %q, legs %d, action %q; want no owner, no contract, nothing to arbitrate", o.Owner, o.Contract, len(o.Legs), o.Action)
			}
			// The answer says which battery it compared with, or that there was none.
			where := map[bool]string{true: "no validate run to compare with", false: "did not fail in the last validate run"}[tt.seen == nil]
			if !strings.Contains(o.Action, where) {
				t.Errorf("action %q does not say %q", o.Action, where)
			}
		})
	}
}

// TestTheReplayAndTheRerunsCarryWhatTheTestRead: a test that fails only
// with four clients (CLIENTS, which it reads) failed in a battery run with
// CLIENTS=4. Given what its package read there, its reruns set CLIENTS=4
// again and fail as it did (consistent), and the command that reproduces
// it carries CLIENTS=4. Without it (another shell, no CLIENTS) the same
// reruns pass: the variable is what decides.
func TestTheReplayAndTheRerunsCarryWhatTheTestRead(t *testing.T) {
	t.Parallel()
	if _, set := os.LookupEnv("CLIENTS"); set {
		t.Skip("CLIENTS is set in this environment; the test needs it unset")
	}
	body := "package p\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestNeedsFewClients(t *testing.T) {\n\tif os.Getenv(\"CLIENTS\") == \"4\" {\n\t\tt.Fatal(\"four clients lost a job\")\n\t}\n}\n"
	seen := &battery.Result{Tests: []battery.Test{{Package: "example.com/m/p", Name: "TestNeedsFewClients", Action: "fail", Failure: "four clients lost a job"}}}
	set := &replayenv.Set{Module: "example.com/m", Packages: map[string][]replayenv.Var{"example.com/m/p": {{Name: "CLIENTS", Value: "4"}}}}
	for _, tc := range []struct {
		name  string
		set   *replayenv.Set
		class string
	}{
		{"with what it read", set, Consistent},
		{"without", nil, Passes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := packageModule(t, map[string]string{"p/p_test.go": body})
			opts.Seen, opts.Replay = seen, tc.set
			o, err := Walk(context.Background(), "example.com/m/p.TestNeedsFewClients", opts)
			if err != nil {
				t.Fatal(err)
			}
			if o.Reruns.Class != tc.class {
				t.Fatalf("reruns %+v; want %s", o.Reruns, tc.class)
			}
			if reproduces := strings.Contains(o.Action, "CLIENTS=4 go test"); reproduces != (tc.set != nil) {
				t.Errorf("action %q; the command that reproduces it carries CLIENTS=4: %v, want %v", o.Action, reproduces, tc.set != nil)
			}
		})
	}
}
