package plan

import (
	"slices"
	"strings"
	"testing"

	"github.com/contested/contested/internal/capability"
)

// TestAPlanSaysWhichLegsAMissingNeedStops: when a surface's registry needs
// name a capability the probe finds missing, the plan's environment names
// that surface and its legs as NOT-RUN on this machine; when it is
// present, or not asked, it says nothing of the kind.
func TestAPlanSaysWhichLegsAMissingNeedStops(t *testing.T) {
	withNeeds := strings.Replace(depositRegistry, `package = "./deposit"`, "package = \"./deposit\"\nneeds = [\"chromium\"]", 1)
	for _, tc := range []struct {
		name    string
		present bool
		probe   bool
		want    []string
	}{
		{"a missing need names the surface and its legs", false, true, []string{"surface bank.deposit (reset, disconnect, crash-and-resume)"}},
		{"a present need stops nothing", true, true, nil},
		{"an unprobed need says nothing of this machine", false, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := input(t, withNeeds, "deposit/deposit.go")
			if tc.probe {
				in.Probe = func(n capability.Name) capability.Capability {
					return capability.Capability{Name: n, Present: n != capability.Chromium || tc.present}
				}
			}
			p := Build(in)
			i := slices.IndexFunc(p.Environment, func(r Requirement) bool { return r.Name == capability.Chromium })
			if i < 0 {
				t.Fatalf("no chromium requirement in %+v", p.Environment)
			}
			if got := p.Environment[i].NotRun; !slices.Equal(got, tc.want) {
				t.Errorf("not run %q, want %q", got, tc.want)
			}
			var md strings.Builder
			if err := WriteMarkdown(&md, p); err != nil {
				t.Fatal(err)
			}
			if says := strings.Contains(md.String(), "NOT-RUN here"); says != (tc.want != nil) {
				t.Errorf("plan.md says NOT-RUN here: %v, want %v", says, tc.want != nil)
			}
		})
	}
}
