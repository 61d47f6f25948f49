package plan

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/contested/contested/internal/faultlayer/levers"
	"github.com/contested/contested/internal/fixture"
	"github.com/contested/contested/internal/pitfall"
	"github.com/contested/contested/internal/tier"
)

// TestEveryModelAndLeverHasItsSkeleton: every model the catalog may name
// has the statements that build it, and every lever a Go test can arm
// has its constant, so no skeleton falls back to a guess.
func TestEveryModelAndLeverHasItsSkeleton(t *testing.T) {
	for _, p := range pitfall.Catalog() {
		for _, m := range p.Models {
			if _, ok := models[m]; !ok {
				t.Errorf("pitfall %s names model %s, which no skeleton can build", p.ID, m)
			}
		}
	}
	for _, name := range levers.Names() {
		l, _ := levers.Lookup(name)
		if _, ok := leverConsts[name]; !ok && !l.Cluster() {
			t.Errorf("lever %s has no constant in the skeletons", name)
		}
	}
}

// skeletonsOfEveryKind are skeletons of package stock, one per lever of
// the fault set (a Go test's, and the cluster rig's) with a model, and
// one per model, and one with a property for an oracle.
func skeletonsOfEveryKind(t *testing.T) map[string]string {
	in := input(t, depositRegistry, "deposit/deposit.go")
	p := Build(in)
	p.SHA256 = strings.Repeat("ab", 32)
	base := p.Scenarios[0]
	out := map[string]string{}
	add := func(lever, model, checker string) {
		sc := base
		sc.ID = fmt.Sprintf("S%d", len(out)+1)
		sc.Package, sc.Lever, sc.Existing = "stock", lever, ""
		sc.Oracle = Oracle{Model: model, Checker: checker}
		sc.Test = "TestSkeleton" + strings.ToUpper(sc.ID)
		out[fmt.Sprintf("plan_%s_test.go", strings.ToLower(sc.ID))] = skeleton(in, p, sc)
	}
	for _, name := range levers.Names() {
		add(name, "idempotent", "exactly-once: at most one effect per key")
	}
	for m := range models {
		add("reset", m, "the model's check")
	}
	add("latency", "", "progress: an operation completes within a bound")
	return out
}

// TestSkeletonsCompileAgainstThePublicAPI writes a skeleton of every kind
// into a copy of the adopter fixture (a module that adopts contested as
// the README says) and has go vet build and check them: a skeleton a plan
// hands a developer compiles as it is.
func TestSkeletonsCompileAgainstThePublicAPI(t *testing.T) {
	tier.Full(t, "go vet of a module that adopts contested")
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	mod := t.TempDir()
	if err := fixture.Copy(filepath.Join(root, "testdata", "adopter"), mod, root); err != nil {
		t.Fatal(err)
	}
	files := skeletonsOfEveryKind(t)
	for name, src := range files {
		if !strings.HasPrefix(src, Header) {
			t.Errorf("%s lacks the header", name)
		}
		if err := os.WriteFile(filepath.Join(mod, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Hand every worker role a skeleton declares to the fixture's TestMain,
	// as each skeleton's comment says to: the roles are what the public
	// API (contested.Main) takes.
	var roles []string
	for _, src := range files {
		for _, line := range strings.Split(src, "\n") {
			if v, ok := strings.CutPrefix(line, "var workerOf"); ok {
				name, _, _ := strings.Cut(v, " ")
				roles = append(roles, "workerOf"+name)
			}
		}
	}
	if len(roles) == 0 {
		t.Fatal("no skeleton declares a worker role")
	}
	mainFile := filepath.Join(mod, "stock_test.go")
	stock, err := os.ReadFile(mainFile)
	if err != nil {
		t.Fatal(err)
	}
	wired := strings.Replace(string(stock), "contested.Main(m)", "contested.Main(m, "+strings.Join(roles, ", ")+")", 1)
	if wired == string(stock) {
		t.Fatal("the adopter fixture's TestMain is no longer contested.Main(m): update this test")
	}
	if err := os.WriteFile(mainFile, []byte(wired), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "vet", ".")
	cmd.Dir = mod
	out, err := cmd.CombinedOutput()
	if err != nil {
		names := slices.Sorted(func(yield func(string) bool) {
			for n := range files {
				if !yield(n) {
					return
				}
			}
		})
		var b strings.Builder
		for _, n := range names {
			fmt.Fprintf(&b, "--- %s\n%s\n", n, files[n])
		}
		t.Fatalf("go vet of the skeletons: %v\n%s\n%s", err, out, b.String())
	}
}

// TestCrashAndResumeSkeletonUsesThePublicWorkerAPI: the crash-and-resume
// skeleton starts its worker the way docs/how-to/contract-job-runner.md
// does (the test binary as a Role, TestBinary, StartWorker, Worker.Run),
// never a command of its own making, and its header names the leg it
// starts.
func TestCrashAndResumeSkeletonUsesThePublicWorkerAPI(t *testing.T) {
	p := Build(input(t, depositRegistry, "deposit/deposit.go"))
	var src string
	for _, sc := range p.Scenarios {
		if sc.Lever == levers.NameCrashAndResume && sc.Skeleton != "" {
			src = sc.Skeleton
			break
		}
	}
	if src == "" {
		t.Fatal("the plan has no crash-and-resume skeleton")
	}
	for _, tc := range []struct {
		name string
		has  string
		want bool
	}{
		{"it starts the worker as this test binary's role", "leg.StartWorker(contested.TestBinary(", true},
		{"it declares the role with contested.Role", "= contested.Role(", true},
		{"it says how to hand the role to contested.Main", "contested.Main(m, workerOf", true},
		{"the schedule is driven by Worker.Run", "w.Run(ctx)", true},
		{"the header names the leg it starts", "// Leg: crash-and-resume of surface bank.deposit", true},
		{"it builds no command of its own", "exec.Command", false},
		{"it does not run os.Args by hand", "os.Args", false},
		{"it does not step the schedule by hand beside the worker", "leg.Step(", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := strings.Contains(src, tc.has); got != tc.want {
				t.Errorf("skeleton contains %q: %v, want %v:\n%s", tc.has, got, tc.want, src)
			}
		})
	}
}

// TestSkeletonHeaderNamesItsLeg: every skeleton's header says which leg
// it lists, a Go test's leg or the cluster rig's.
func TestSkeletonHeaderNamesItsLeg(t *testing.T) {
	for name, src := range skeletonsOfEveryKind(t) {
		header, _, _ := strings.Cut(src, "\npackage ")
		if !strings.Contains(header, "\n// Leg: ") || !strings.Contains(header, " of surface bank.deposit") {
			t.Errorf("%s: the header names no leg:\n%s", name, header)
		}
	}
}
