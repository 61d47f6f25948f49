package gate

import (
	"context"
	"testing"
	"time"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/faultdir"
)

// TestGateCountsUXRecordsAndRefusesAnUnfiredOne: the degraded-UX stage's
// records (class ux) are counted like any other leg's, and a ux record
// whose fault did not fire (the injector read the toxic back, but the
// browser saw a healthy page) refuses certification, named in unfired.
func TestGateCountsUXRecordsAndRefusesAnUnfiredOne(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fired     bool
		certified bool
	}{
		{name: "fired", fired: true, certified: true},
		{name: "not fired", fired: false, certified: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir := faultdir.Of(root)
			if err := WriteStamp(dir, "r1"); err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond) // records postdate the stamp
			rec, err := faultrecord.NewRecorder("github.com/contested/contested/internal/degraded", faultrecord.WithResultsDir(root), faultrecord.WithRunID("r1"))
			if err != nil {
				t.Fatal(err)
			}
			store := sampleRecord()
			store.RunID = "r1"
			if _, err := rec.Write(store); err != nil {
				t.Fatal(err)
			}
			ux := faultrecord.Record{
				Test: "TestDegradedStage/load/confirm-timeout", Surface: "ledger.web", Class: "ux", Leg: "confirm-timeout",
				Replay: "go tool mage degraded -cells=load/latency", Armed: true, ArmedAt: time.Now(), Fired: tc.fired, FiredAt: time.Now(),
				Evidence: faultrecord.Evidence{Injector: "proxy contested-degraded-20001 read back toxic degraded-latency latency downstream toxicity 1", Victim: `browser: HTTP 200 in 41ms, banner "ok"`},
			}
			if _, err := rec.Write(ux); err != nil {
				t.Fatal(err)
			}
			rep, err := Verify(context.Background(), Options{Dir: dir, Mode: Paired, RecordingClasses: []string{"store"}, KnownClasses: []string{"ux"}})
			if err != nil && tc.certified {
				t.Fatalf("Verify: %v", err)
			}
			if rep == nil {
				t.Fatalf("Verify gave no report: %v", err)
			}
			if rep.Certified != tc.certified {
				t.Fatalf("certified = %v, want %v (phases %+v)", rep.Certified, tc.certified, rep.Phases)
			}
			if got := rep.ByClass["ux"]; got.Armed != 1 || (got.Fired == 1) != tc.fired {
				t.Errorf("by_class[ux] = %+v, want 1 armed, fired %v", got, tc.fired)
			}
			if !tc.fired {
				if len(rep.Unfired) != 1 || rep.Unfired[0].Test != ux.Test {
					t.Errorf("unfired = %+v, want the ux record", rep.Unfired)
				}
				if p := rep.Phases[2]; p.OK {
					t.Errorf("phase 3 %q passed with an unfired ux record", p.Name)
				}
			}
		})
	}
}
