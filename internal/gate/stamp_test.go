package gate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/faultdir"
)

func TestWriteStamp(t *testing.T) {
	dir := faultdir.Of(filepath.Join(t.TempDir(), "results"))
	if err := WriteStamp(dir, "run-7"); err != nil {
		t.Fatal(err)
	}
	d, _, err := openFaultDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	st := readStamp(d)
	d.Close()
	if !st.present || st.runID != "run-7" || st.err != nil {
		t.Errorf("stamp read back = %+v", st)
	}
	if diff := cmp.Diff([]string{faultdir.StampName}, dirNames(t, dir)); diff != "" {
		t.Errorf("WriteStamp left other files (-want +got):\n%s", diff)
	}
	other := filepath.Join(t.TempDir(), "elsewhere")
	if err := WriteStamp(other, "x"); !errors.Is(err, faultdir.ErrNotFaultDir) {
		t.Errorf("WriteStamp outside a fault dir: err = %v", err)
	}
	if _, err := os.Stat(other); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("WriteStamp outside a fault dir created it: %v", err)
	}
}

func TestPurge(t *testing.T) {
	files := map[string]bool{ // name → removed by Purge
		"20261129T101500Z-4f2a--TestX--reset--0123456789ab.json": true,
		"truncated.json":      true,
		".record-123.tmp":     true,
		".gate-stamp-4.tmp":   true,
		".fault-report-5.tmp": true,
		faultdir.ReportName:   true,
		faultdir.StampName:    false,
		"README.txt":          false,
		"notes.tmp":           false,
		"x.json.bak":          false,
	}
	setup := func(t *testing.T, dir string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, "keep.json"), 0o755); err != nil { // a directory, even with a record-like name
			t.Fatal(err)
		}
		for name := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte("{}"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}

	t.Run("removes records, temp files and the report only", func(t *testing.T) {
		dir := faultdir.Of(t.TempDir())
		setup(t, dir)
		if err := Purge(dir); err != nil {
			t.Fatal(err)
		}
		want := []string{"keep.json"}
		for name, removed := range files {
			if !removed {
				want = append(want, name)
			}
		}
		slices.Sort(want)
		if diff := cmp.Diff(want, dirNames(t, dir)); diff != "" {
			t.Errorf("after Purge (-want +got):\n%s", diff)
		}
	})
	t.Run("refuses a directory that is not a fault dir", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "results")
		setup(t, dir)
		before := dirNames(t, dir)
		if err := Purge(dir); !errors.Is(err, faultdir.ErrNotFaultDir) {
			t.Errorf("Purge(%s) = %v, want faultdir.ErrNotFaultDir", dir, err)
		}
		if diff := cmp.Diff(before, dirNames(t, dir)); diff != "" {
			t.Errorf("Purge of a non-fault dir deleted files (-before +after):\n%s", diff)
		}
	})
	t.Run("a missing directory is nothing to purge", func(t *testing.T) {
		if err := Purge(faultdir.Of(t.TempDir())); err != nil {
			t.Errorf("Purge of a missing dir: %v", err)
		}
	})
	t.Run("a fault directory that is a symlink: refused, its target untouched", func(t *testing.T) {
		decoy := t.TempDir()
		setup(t, decoy)
		before := dirNames(t, decoy)
		dir := faultdir.Of(t.TempDir())
		if err := os.Symlink(decoy, dir); err != nil {
			t.Fatal(err)
		}
		err := Purge(dir)
		if !errors.Is(err, atomicfile.ErrSymlink) || !strings.Contains(err.Error(), dir) {
			t.Errorf("Purge through a symlink: err = %v, want ErrSymlink naming %s", err, dir)
		}
		if diff := cmp.Diff(before, dirNames(t, decoy)); diff != "" {
			t.Errorf("Purge deleted through the link (-before +after):\n%s", diff)
		}
	})
	t.Run("a fault path that is a file is reported", func(t *testing.T) {
		dir := faultdir.Of(t.TempDir())
		if err := os.WriteFile(dir, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := Purge(dir); !errors.Is(err, faultdir.ErrUnreadable) {
			t.Errorf("Purge of a file: err = %v, want faultdir.ErrUnreadable", err)
		}
	})
}

// TestPairedCycle runs the validate sequence end to end: purge, stamp, battery writes through
// a Recorder, paired verify certifies and consumes the stamp.
func TestPairedCycle(t *testing.T) {
	root := t.TempDir()
	dir := faultdir.Of(root)
	// Leftovers of a previous run, including a lost write that must not haunt this run.
	old, _ := faultrecord.NewRecorder("p", faultrecord.WithResultsDir(root), faultrecord.WithRunID("old"))
	if _, err := old.Write(sampleRecord()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".record-1.tmp"), []byte(`{"schema":`), 0o644); err != nil {
		t.Fatal(err)
	}

	if err := Purge(dir); err != nil {
		t.Fatal(err)
	}
	if err := WriteStamp(dir, "new"); err != nil {
		t.Fatal(err)
	}
	// Some file systems keep coarse mtimes; records must be strictly newer than the stamp.
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(dir, faultdir.StampName), past, past); err != nil {
		t.Fatal(err)
	}
	rec, _ := faultrecord.NewRecorder("p", faultrecord.WithResultsDir(root), faultrecord.WithRunID("new"))
	for i, class := range []string{"store", "mq-consumer"} {
		r := sampleRecord()
		r.Class, r.Surface, r.Test = class, "ledger."+class, fmt.Sprintf("TestContract%d/reset", i)
		if _, err := rec.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := Verify(t.Context(), Options{Dir: dir, Mode: Paired, RecordingClasses: []string{"store", "mq-consumer"}})
	if err != nil {
		t.Fatalf("paired verify: %v\n%+v", err, rep.Phases)
	}
	if !rep.StampConsumed || rep.RunID != "new" || rep.RecordsRead != 2 {
		t.Errorf("report: consumed %v run %q read %d", rep.StampConsumed, rep.RunID, rep.RecordsRead)
	}
}
