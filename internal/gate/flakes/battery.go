package flakes

import (
	"time"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/battery"
)

// Meta is what every outcome of one run shares.
type Meta struct {
	RunID, Shard, Commit, Command string
	// Dirty and Diff say the work tree had changes Commit does not hold.
	Dirty bool
	Diff  string
	Time  time.Time
}

// FromBattery is one outcome per test and subtest that res ran (passed,
// failed or skipped), each with the leg, surface and seed of the record
// its test wrote, when it wrote one.
func FromBattery(res *battery.Result, recs []faultrecord.Record, m Meta) []Outcome {
	if res == nil {
		return nil
	}
	type id struct{ pkg, test string }
	legs := map[id]faultrecord.Record{}
	for _, r := range recs {
		legs[id{r.Package, r.Test}] = r
	}
	out := make([]Outcome, 0, len(res.Tests))
	for _, t := range res.Tests {
		o := Outcome{Schema: Schema, Time: m.Time, RunID: m.RunID, Shard: m.Shard, Commit: m.Commit, Dirty: m.Dirty, Diff: m.Diff, Command: m.Command,
			Package: t.Package, Test: t.Name, Verdict: t.Action, Duration: t.Elapsed}
		if r, ok := legs[id{t.Package, t.Name}]; ok {
			o.Surface, o.Leg, o.Seed = r.Surface, r.Leg, r.Seed
		}
		out = append(out, o)
	}
	return out
}
