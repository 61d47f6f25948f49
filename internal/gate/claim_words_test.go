//go:build linux

package gate

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contested/contested/internal/faultdir"
)

// claimFailureWords are what phase 1 says when putting a replaced stamp back, or removing the
// claim file, failed. A claim in which neither failed must not say them: a reader would look for
// a stamp or a claim file that is where it should be.
var claimFailureWords = []string{"putting it back failed", "could not be removed"}

// TestAClaimThatWentWellReportsNoFailure: a certified paired verification removed its claim file,
// and a verification whose stamp was replaced put the replacement back; neither says that putting
// it back or removing the claim failed, and the refusal still says why it refused.
func TestAClaimThatWentWellReportsNoFailure(t *testing.T) {
	t.Run("certified", func(t *testing.T) {
		dir := layout(t, fixture{sets: []string{"good"}, stamp: true})
		rep, err := Verify(t.Context(), baseOptions(dir))
		if err != nil || !rep.Certified || !rep.StampConsumed {
			t.Fatalf("paired verification: err = %v, certified %v, consumed %v; want certified and consumed", err, rep.Certified, rep.StampConsumed)
		}
		for _, w := range claimFailureWords {
			if strings.Contains(rep.Phases[0].Detail, w) {
				t.Errorf("phase 1 detail %q says %q of a claim that went well", rep.Phases[0].Detail, w)
			}
		}
	})
	t.Run("replaced", func(t *testing.T) {
		dir := layout(t, fixture{sets: []string{"good"}, stamp: true})
		opts := baseOptions(dir)
		opts.Inventory = inventoryAfter(t, watchStampReads(t, dir), 1, func() {
			if err := WriteStamp(dir, "the-next-run"); err != nil {
				t.Errorf("write the next run's stamp: %v", err)
			}
		})
		rep, err := Verify(t.Context(), opts)
		if !errors.Is(err, ErrRefused) || rep.Certified {
			t.Fatalf("verification whose stamp was replaced: err = %v, certified %v; want ErrRefused", err, rep.Certified)
		}
		if !strings.Contains(rep.Phases[0].Detail, "replaced") {
			t.Errorf("phase 1 detail %q does not say the stamp was replaced", rep.Phases[0].Detail)
		}
		for _, w := range claimFailureWords {
			if strings.Contains(rep.Phases[0].Detail, w) {
				t.Errorf("phase 1 detail %q says %q, but the replacement was put back and the claim removed", rep.Phases[0].Detail, w)
			}
		}
		if _, err := os.Lstat(filepath.Join(dir, faultdir.StampName)); err != nil {
			t.Errorf("the replacement stamp is not back: %v", err)
		}
	})
}

// TestAReportThatCannotBeWrittenIsAnError: a verification that certifies but cannot write
// fault-report.json (its name is taken by a directory) returns the write's error, in both
// modes: a caller that reads only the error must not believe the report is on disk.
func TestAReportThatCannotBeWrittenIsAnError(t *testing.T) {
	for _, mode := range []Mode{Paired, Standalone} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := layout(t, fixture{sets: []string{"good"}, stamp: true})
			if err := os.MkdirAll(filepath.Join(dir, faultdir.ReportName, "in-the-way"), 0o755); err != nil {
				t.Fatal(err)
			}
			opts := baseOptions(dir)
			opts.Mode = mode
			rep, err := Verify(t.Context(), opts)
			if rep == nil || !rep.Certified {
				t.Fatalf("verification: report %+v, err %v; want a certified report", rep, err)
			}
			if err == nil || !strings.Contains(err.Error(), "write fault report") || errors.Is(err, ErrRefused) {
				t.Errorf("err = %v; want the failed write of %s, and no refusal", err, faultdir.ReportName)
			}
		})
	}
}
