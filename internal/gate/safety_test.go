package gate

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/faultdir"
)

// TestNothingThroughASymlinkedFaultDir runs validate's sequence (purge, stamp, a leg's record,
// the paired verification and its report) with the fault directory a link to decoys: each
// step refuses, naming the link, and the decoys survive.
func TestNothingThroughASymlinkedFaultDir(t *testing.T) {
	decoy, intact := decoyDir(t)
	root := t.TempDir()
	dir := faultdir.Of(root)
	if err := os.Symlink(decoy, dir); err != nil {
		t.Fatal(err)
	}
	refused := func(step string, err error) {
		t.Helper()
		if !errors.Is(err, atomicfile.ErrSymlink) || !strings.Contains(err.Error(), dir) {
			t.Errorf("%s through a linked fault directory: err = %v, want a refusal naming %s", step, err, dir)
		}
	}
	refused("purge", Purge(dir))
	refused("stamp", WriteStamp(dir, "run"))
	rec, err := faultrecord.NewRecorder("p", faultrecord.WithResultsDir(root), faultrecord.WithRunID("run"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = rec.Write(sampleRecord())
	refused("record", err)
	rep, err := Verify(t.Context(), baseOptions(dir))
	if !errors.Is(err, ErrRefused) || !errors.Is(err, faultdir.ErrUnreadable) {
		t.Errorf("verify: err = %v, want a refusal (faultdir.ErrUnreadable)", err)
	}
	refused("verify's report", err)
	if rep == nil || rep.Phases[1].OK || !strings.Contains(rep.Phases[1].Detail, "symbolic link") {
		t.Errorf("verify: phase 2 = %+v, want it refused for the link", rep.Phases[1])
	}
	refused("report save", rep.Save())
	recs, _, err := ReadRecords(dir)
	if len(recs) != 0 {
		t.Errorf("ReadRecords read %d records through the link", len(recs))
	}
	refused("read records", err)
	intact()
}

// TestNothingThroughASymlinkedResultsRoot: the same with the results root itself a link.
func TestNothingThroughASymlinkedResultsRoot(t *testing.T) {
	decoy, intact := decoyDir(t)
	os.Mkdir(filepath.Join(decoy, faultdir.Name), 0o755)
	defer func() { os.Remove(filepath.Join(decoy, faultdir.Name)) }()
	root := filepath.Join(t.TempDir(), "test-results")
	if err := os.Symlink(decoy, root); err != nil {
		t.Fatal(err)
	}
	dir := faultdir.Of(root)
	for step, err := range map[string]error{"purge": Purge(dir), "stamp": WriteStamp(dir, "run")} {
		if !errors.Is(err, atomicfile.ErrSymlink) {
			t.Errorf("%s under a linked results root: %v, want ErrSymlink", step, err)
		}
	}
	if _, err := os.ReadDir(filepath.Join(decoy, faultdir.Name)); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(filepath.Join(decoy, faultdir.Name)); len(entries) != 0 {
		t.Errorf("wrote into the link's target: %v", entries)
	}
	os.Remove(filepath.Join(decoy, faultdir.Name))
	intact()
}

// TestVerifyNeverWaitsOnOrFollowsARecord puts a FIFO, a link to /dev/zero, a link to a valid
// record elsewhere and a linked stamp among valid records: the verification ends (a blocking
// open of the FIFO would hang it until go test's timeout; reading /dev/zero would exhaust
// memory), names each, and refuses.
func TestVerifyNeverWaitsOnOrFollowsARecord(t *testing.T) {
	dir := layout(t, fixture{sets: []string{"good"}, stamp: true})
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.json")); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	good, _ := filepath.Glob(filepath.Join(recordSets, "good", "*.json"))
	b, _ := os.ReadFile(good[0])
	os.WriteFile(filepath.Join(elsewhere, "r.json"), b, 0o644)
	if err := os.Symlink(filepath.Join(elsewhere, "r.json"), filepath.Join(dir, "linked.json")); err != nil {
		t.Fatal(err)
	}

	opts := baseOptions(dir)
	opts.Mode = Standalone
	rep, err := Verify(t.Context(), opts)
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("err = %v, want ErrRefused", err)
	}
	wantUnreadable(t, rep, "fifo.json", "FIFO")
	wantUnreadable(t, rep, "zero.json", "symbolic link")
	wantUnreadable(t, rep, "linked.json", "symbolic link")
	if diff := cmp.Diff([]int{2}, failedPhases(rep)); diff != "" {
		t.Errorf("failed phases (-want +got):\n%s", diff)
	}

	recs, unreadable, err := ReadRecords(dir)
	if err != nil || len(recs) != len(good) {
		t.Errorf("ReadRecords: %d records, %v; want the %d good ones", len(recs), err, len(good))
	}
	var names []string
	for _, u := range unreadable {
		names = append(names, u.File)
	}
	if diff := cmp.Diff([]string{"fifo.json", "linked.json", "zero.json"}, names); diff != "" {
		t.Errorf("ReadRecords unreadable (-want +got):\n%s", diff)
	}

	// A stamp that is a link is not taken as this run's reference.
	stamp := filepath.Join(dir, faultdir.StampName)
	os.Rename(stamp, filepath.Join(elsewhere, faultdir.StampName))
	os.Symlink(filepath.Join(elsewhere, faultdir.StampName), stamp)
	rep, _ = Verify(t.Context(), opts)
	if rep.Phases[0].OK || !strings.Contains(rep.Phases[0].Detail, "symbolic link") {
		t.Errorf("phase 1 with a linked stamp = %+v, want refused", rep.Phases[0])
	}
}
