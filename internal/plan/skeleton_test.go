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
