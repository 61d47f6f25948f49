package contested

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/contested/contested/internal/gate/verdict"
)

// TestAnOracleIsRecordedAsItDecided: what a leg's oracle returned goes
// into its record as held, unknown (an error wrapping ErrInconclusive: the
// oracle could not decide) or violated, and the leg's verdict follows: an
// undecided oracle is INCONCLUSIVE-oracle-too-weak, never a pass.
func TestAnOracleIsRecordedAsItDecided(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		result  string
		verdict verdict.Verdict
	}{
		{"held", nil, "held", verdict.PassSmoke},
		{"undecided", fmt.Errorf("linearizability: %w: the check timed out", ErrInconclusive), "unknown", verdict.InconclusiveOracleTooWeak},
		{"violated", errors.New("exactly-once: stock is 31, want 30"), "violated", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			p := runProbe(t, func(tb *probe) {
				leg := Start(tb, "test.consumer", Burst)
				for _, d := range leg.Deliveries(ctx, 40, BurstPlan{}) {
					leg.Consumed(d)
				}
				leg.Oracle("exactly-once", 40, 40, tt.err)
			})
			if errs := p.errors(); errs != "" {
				t.Fatalf("the leg reported:\n%s", errs)
			}
			recs := records(t, p.name)
			if len(recs) != 1 || len(recs[0].Oracles) != 1 {
				t.Fatalf("records %+v, want one with one oracle", recs)
			}
			o := recs[0].Oracles[0]
			if o.Result != tt.result || o.OpsProduced != 40 || o.OpsChecked != 40 {
				t.Fatalf("oracle recorded as %+v, want result %q over 40 of 40 operations", o, tt.result)
			}
			if tt.err != nil && !strings.Contains(o.Detail, tt.err.Error()) {
				t.Errorf("oracle detail %q does not carry what the oracle said: %q", o.Detail, tt.err)
			}
			if tt.verdict == "" {
				return
			}
			r := recs[0]
			run := verdict.Run{Seed: r.Seed, Attempted: true, Armed: 1, Oracles: r.Oracles}
			if r.Fired {
				run.Fired = 1
			}
			if got, reason := verdict.Assign([]verdict.Run{run}, 3); got != tt.verdict {
				t.Errorf("the leg's verdict from its record: %s (%s), want %s", got, reason, tt.verdict)
			}
		})
	}
}
