package gate

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contested/contested/internal/faultdir"
)

// A shard that owned no contract test fired nothing: phases 4 and 5 are
// the union's, so the shard alone certifies, saying so; the same records
// outside a shard are refused.
func TestShardDefersPhasesFourAndFive(t *testing.T) {
	for _, tc := range []struct {
		name      string
		shard     bool
		certified bool
	}{
		{"whole battery", false, false},
		{"one shard", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := faultdir.Of(filepath.Join(t.TempDir(), "results"))
			if err := WriteStamp(dir, "run-s1of3"); err != nil {
				t.Fatal(err)
			}
			rep, _ := Verify(context.Background(), Options{Dir: dir, Mode: Paired, RecordingClasses: []string{"store"}, Shard: tc.shard})
			if rep == nil || rep.Certified != tc.certified || rep.Shard != tc.shard {
				t.Fatalf("report %+v; want certified %v", rep, tc.certified)
			}
			for _, p := range rep.Phases[3:5] {
				if deferred := strings.HasPrefix(p.Detail, "deferred to the union"); deferred != tc.shard || p.OK != tc.shard {
					t.Errorf("phase %d: ok %v, %q", p.Number, p.OK, p.Detail)
				}
			}
			if tc.shard && !rep.StampConsumed {
				t.Error("a certified shard did not consume its stamp")
			}
		})
	}
}
