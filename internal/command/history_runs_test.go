package command

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gate/flakes"
	"github.com/contested/contested/internal/rundir"
)

// TestContestedAndArbitrateRunsAppendToTheHistory: the runs one contested
// or arbitrate run made (its seeds, a seed's rerun, the ladder's reruns)
// land in the flake history under the run's id, each test with its own
// seed's leg and seed, so a test that failed and then passed within the
// run is flaky in it.
func TestContestedAndArbitrateRunsAppendToTheHistory(t *testing.T) {
	leg := func(seed int64, actions ...string) contract.SeedRun {
		r := contract.SeedRun{Seed: seed, Records: []faultrecord.Record{{Package: "example.com/m", Test: "TestLeg/reset", Surface: "m.store", Leg: "reset", Seed: seed}}}
		for _, a := range actions {
			r.Tests = append(r.Tests,
				battery.Test{Package: "example.com/m", Name: "TestLeg", Action: a},
				battery.Test{Package: "example.com/m", Name: "TestLeg/reset", Action: a})
		}
		return r
	}
	tests := []struct {
		name, command string
		runs          []contract.SeedRun
		rows          int
		seeds         string
		marks         []string // class="…" the trend draws for TestLeg
	}{
		{"contested: a seed that failed and passed its rerun", "contested", []contract.SeedRun{leg(11, "pass"), leg(12, "fail", "pass")}, 6, "11 11 12 12 12 12", []string{`class="flaky"`}},
		{"arbitrate: reruns that all failed", "arbitrate", []contract.SeedRun{leg(7, "fail"), leg(7, "fail")}, 4, "7 7 7 7", []string{`class="fail"`}},
		{"nothing ran", "arbitrate", nil, 0, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			var out strings.Builder
			appendRuns(context.Background(), rundir.Dir(root), nil, tt.command, "run-1", tt.runs, flakes.Revision{Commit: "abc123", Dirty: true, Diff: "d1ff"}, &out)
			got, err := flakes.NewFile(root).Read(context.Background())
			if err != nil || len(got) != tt.rows {
				t.Fatalf("the history holds %d rows (%v), want %d; output:\n%s", len(got), err, tt.rows, out.String())
			}
			var seeds []string
			for _, o := range got {
				if o.RunID != "run-1" || o.Command != tt.command || o.Commit != "abc123" || !o.Dirty || o.Diff != "d1ff" || o.Package != "example.com/m" {
					t.Errorf("row %+v: want run-1, %s, commit abc123 with the dirty tree's diff d1ff", o, tt.command)
				}
				if o.Test == "TestLeg/reset" && (o.Leg != "reset" || o.Surface != "m.store") {
					t.Errorf("row %+v lacks its leg and surface", o)
				}
				seeds = append(seeds, fmt.Sprint(o.Seed))
			}
			if s := strings.Join(seeds, " "); s != tt.seeds {
				t.Errorf("seeds %q, want %q", s, tt.seeds)
			}
			if len(got) == 0 {
				return
			}
			svg := flakes.Summarize(got, "TestLeg", 0).SVG(got)
			for _, m := range tt.marks {
				if !strings.Contains(svg, m) {
					t.Errorf("the trend lacks %s:\n%s", m, svg)
				}
			}
		})
	}
}
