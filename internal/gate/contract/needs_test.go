package contract

import (
	"slices"
	"testing"

	"github.com/contested/contested/internal/capability"
	"github.com/contested/contested/internal/registry"
)

// TestACapabilityIsNeededOnlyByWhatTheModuleRegistered: Chromium is
// needed by the degraded-UX stage of a registry that has one, and by a
// surface that says it needs it; a module with neither needs no Chromium,
// so a machine without one hears nothing of it.
func TestACapabilityIsNeededOnlyByWhatTheModuleRegistered(t *testing.T) {
	const surface = "schema = 1\n[gate]\nrecording_classes = [\"store\"]\n\n[[surface]]\nid = \"jobs.runner\"\nclass = \"store\"\nowner = \"jobs-team\"\nbehavior = \"a job survives its worker\"\noracle = \"exactly-once\"\nlegs = [\"crash-and-resume\"]\ntests = [\"TestJobsContract\"]\n"
	for _, tc := range []struct {
		name     string
		registry string
		chromium []string
	}{
		{"no browser stage, no surface that needs one", surface, nil},
		{"a [degraded] table", surface + "\n[degraded]\nbuild = \"./cmd/web\"\n", []string{"stage degraded"}},
		{"a surface that needs Chromium", surface + "needs = [\"chromium\"]\n", []string{"jobs.runner/crash-and-resume"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg, err := registry.Parse("contested-surfaces.toml", []byte(tc.registry))
			if err != nil {
				t.Fatal(err)
			}
			m := capability.Matrix{{Name: capability.Chromium}, {Name: capability.Docker}}
			Needs(m, reg, "containers", nil)
			c, _ := m.Get(capability.Chromium)
			if !slices.Equal(c.NeededBy, tc.chromium) {
				t.Errorf("chromium needed by %v, want %v", c.NeededBy, tc.chromium)
			}
			if d, _ := m.Get(capability.Docker); !slices.Contains(d.NeededBy, "jobs.runner/crash-and-resume") {
				t.Errorf("docker needed by %v; the leg needs the layer's engine", d.NeededBy)
			}
		})
	}
}
