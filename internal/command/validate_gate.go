package command

import (
	"context"
	"fmt"
	"strings"

	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/gate"
)

// verify runs the six phases, paired (consuming the stamp only on
// success), and checks that the tests the registry names exist.
func (v *validation) verify(ctx context.Context, res *battery.Result) (*gate.Report, error) {
	inv := v.inventory
	verified, err := gate.Verify(ctx, gate.Options{
		Dir:              v.faultDir(),
		Mode:             gate.Paired,
		RecordingClasses: v.reg.Gate.RecordingClasses,
		KnownClasses:     v.reg.Classes(),
		Surfaces:         v.surfaceIDs(),
		SelfTests:        v.reg.Gate.SelfTests,
		Inventory:        inv,
		Shard:            v.shard != nil,
		Reused:           v.reuse.evidence(),
	})
	if err != nil && verified == nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	v.rep.Gate = verified
	if names, err := inv(ctx); err == nil {
		if err := v.reg.CheckTests(names); err != nil {
			v.rep.Registry = strings.Split(err.Error(), "\n")
		}
	}
	return verified, nil
}

func failedPhases(r *gate.Report) string {
	var parts []string
	for _, p := range r.Phases {
		if !p.OK {
			parts = append(parts, fmt.Sprintf("phase %d (%s)", p.Number, p.Name))
		}
	}
	return strings.Join(parts, ", ")
}
