package gate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/contested/contested/internal/faultdir"
)

// TestListSomeAtItsLimit: up to maxListed names are listed in full; one
// more and the list stops at maxListed and says how many it left out.
func TestListSomeAtItsLimit(t *testing.T) {
	items := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("f%d.json", i))
		}
		return out
	}
	if got := listSome(items(maxListed)); got != strings.Join(items(maxListed), "; ") {
		t.Errorf("listSome of %d items = %q, want them all", maxListed, got)
	}
	want := strings.Join(items(maxListed), "; ") + "; (+1 more, see " + faultdir.ReportName + ")"
	if got := listSome(items(maxListed + 1)); got != want {
		t.Errorf("listSome of %d items = %q, want %q", maxListed+1, got, want)
	}
	if got := listSome(items(2)); got != "f0.json; f1.json" {
		t.Errorf("listSome of 2 items = %q", got)
	}
}

// TestPhase2CountsTheFilesItSaw: the files counted in phase 2's detail are
// the record files seen and the unfinished record writes, each once.
func TestPhase2CountsTheFilesItSaw(t *testing.T) {
	sc := scanResult{tally: tally{records: 3, unreadable: []Unreadable{
		{File: ".record-x.tmp", Reason: "an unfinished write"},
		{File: ".record-y.tmp", Reason: "an unfinished write"},
		{File: "bad.json", Reason: "truncated"},
	}}}
	if got := countTemps(sc.unreadable); got != 2 {
		t.Errorf("countTemps = %d, want 2", got)
	}
	p := phase2("/r/fault", sc)
	if p.OK || !strings.HasPrefix(p.Detail, "3 unreadable of 5 files: ") {
		t.Errorf("phase 2: ok %v, detail %q; want refused, 3 unreadable of 5 files", p.OK, p.Detail)
	}
}

// TestPhase5NamesZeroFiredClassesOnlyWhenThereAreSome: phase 5's detail
// adds the non-recording classes with zero fired only when there are any.
func TestPhase5NamesZeroFiredClassesOnlyWhenThereAreSome(t *testing.T) {
	rep := &Report{RecordingClasses: []string{"store"}, ByClass: map[string]ClassCount{"store": {Armed: 1, Fired: 1}}}
	if p := phase5(rep); !p.OK || strings.Contains(p.Detail, "classes_with_zero_fired") {
		t.Errorf("phase 5 with every class fired: ok %v, detail %q", p.OK, p.Detail)
	}
	rep.ClassesWithZeroFired = []string{"lease"}
	if p := phase5(rep); !p.OK || !strings.HasSuffix(p.Detail, "; classes_with_zero_fired (not recording classes): lease") {
		t.Errorf("phase 5 with lease at zero: ok %v, detail %q", p.OK, p.Detail)
	}
}

// TestPhase6KeepsAnInventoryErrorUpToItsLimit: an inventory error of
// exactly maxDetailOutput bytes is kept whole; a longer one is cut there.
func TestPhase6KeepsAnInventoryErrorUpToItsLimit(t *testing.T) {
	opts := Options{SelfTests: []string{"TestA"}, Inventory: func(context.Context) ([]string, error) { return nil, nil }}
	exact := strings.Repeat("x", maxDetailOutput)
	if p := phase6(&Report{}, opts, inventoryResult{err: errors.New(exact)}); p.OK || p.Detail != "test inventory: "+exact {
		t.Errorf("an error of %d bytes: ok %v, detail of %d bytes ending %q; want it whole", maxDetailOutput, p.OK, len(p.Detail), p.Detail[max(0, len(p.Detail)-5):])
	}
	if p := phase6(&Report{}, opts, inventoryResult{err: errors.New(exact + "y")}); p.Detail != "test inventory: "+exact+"…" {
		t.Errorf("an error one byte longer: detail ends %q; want it cut to %d bytes and …", p.Detail[max(0, len(p.Detail)-5):], maxDetailOutput)
	}
}
