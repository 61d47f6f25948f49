package faultrecord

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/contested/contested/internal/atomicfile"
)

func sampleRecord() Record {
	return Record{
		Test: "TestStoreContract/reset", Surface: "ledger.store", Class: "store", Leg: "reset", Seed: 42,
		Replay: "CONTESTED_SEED=42 go test ./store -run '^TestStoreContract$/^reset$' -count=1",
		Armed:  true, ArmedAt: time.Date(2026, 11, 29, 11, 15, 1, 0, time.FixedZone("CET", 3600)),
		Fired: true, FiredAt: time.Date(2026, 11, 29, 10, 15, 2, 0, time.UTC),
		Evidence: Evidence{Injector: "reset_peer; 2 conns reset", Victim: "ECONNRESET x2"},
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestRecorderWrite(t *testing.T) {
	root := t.TempDir()
	rec, err := NewRecorder("example.com/ledger/store", WithResultsDir(root), WithRunID("run-1"))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Dir() != filepath.Join(root, "fault") || rec.RunID() != "run-1" || rec.Package() != "example.com/ledger/store" {
		t.Fatalf("recorder = dir %s run %s pkg %s", rec.Dir(), rec.RunID(), rec.Package())
	}

	tests := []struct {
		name string
		in   func() Record
		want func() Record
	}{
		{
			name: "fills schema, run id and package; stores UTC",
			in:   sampleRecord,
			want: func() Record {
				r := sampleRecord()
				r.Schema, r.RunID, r.Package = Schema, "run-1", "example.com/ledger/store"
				r.ArmedAt = r.ArmedAt.UTC()
				return r
			},
		},
		{
			name: "keeps what the leg set",
			in: func() Record {
				r := sampleRecord()
				r.RunID, r.Package = "other-run", "example.com/other"
				return r
			},
			want: func() Record {
				r := sampleRecord()
				r.Schema, r.RunID, r.Package = Schema, "other-run", "example.com/other"
				r.ArmedAt = r.ArmedAt.UTC()
				return r
			},
		},
		{
			name: "drops fired_at when not fired",
			in: func() Record {
				r := sampleRecord()
				r.Fired = false
				return r
			},
			want: func() Record {
				r := sampleRecord()
				r.Schema, r.RunID, r.Package = Schema, "run-1", "example.com/ledger/store"
				r.ArmedAt = r.ArmedAt.UTC()
				r.Fired, r.FiredAt = false, time.Time{}
				return r
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path, err := rec.Write(tc.in())
			if err != nil {
				t.Fatal(err)
			}
			if filepath.Dir(path) != rec.Dir() || classify(filepath.Base(path)) != kindRecord {
				t.Errorf("record written to %s", path)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseRecord(data)
			if err != nil {
				t.Fatalf("written record does not parse: %v\n%s", err, data)
			}
			if diff := cmp.Diff(tc.want(), got, cmpopts.IgnoreUnexported(Record{}, Evidence{})); diff != "" {
				t.Errorf("record read back (-want +got):\n%s", diff)
			}
			if !got.Fired && strings.Contains(string(data), "fired_at") {
				t.Errorf("unfired record carries fired_at:\n%s", data)
			}
		})
	}
	for _, n := range dirNames(t, rec.Dir()) {
		if classify(n) != kindRecord {
			t.Errorf("writer left %s behind", n)
		}
	}
}

func TestRecorderRefusesInvalidRecords(t *testing.T) {
	rec, err := NewRecorder("p", WithResultsDir(t.TempDir()), WithRunID("r"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		modify func(*Record)
		want   string
	}{
		{"no surface", func(r *Record) { r.Surface = "" }, "no surface"},
		{"no class", func(r *Record) { r.Class = "" }, "no class"},
		{"no leg", func(r *Record) { r.Leg = "" }, "no leg"},
		{"no test", func(r *Record) { r.Test = "" }, "no test"},
		{"not armed", func(r *Record) { r.Armed = false }, "armed is false"},
		{"another schema", func(r *Record) { r.Schema = "contested/faultrecord@0" }, "schema"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := sampleRecord()
			tc.modify(&r)
			path, err := rec.Write(r)
			if !errors.Is(err, ErrInvalidRecord) || !strings.Contains(err.Error(), tc.want) || path != "" {
				t.Errorf("Write = %q, %v; want ErrInvalidRecord mentioning %q", path, err, tc.want)
			}
		})
	}
	if _, err := os.Stat(rec.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("invalid records created the fault dir or files in it: %v %v", err, dirNames(t, rec.Dir()))
	}
}

func TestNewRecorderDefaults(t *testing.T) {
	t.Setenv(EnvResultsDir, "")
	t.Setenv(EnvRunID, "env-run")
	rec, err := NewRecorder("p")
	if err != nil {
		t.Fatal(err)
	}
	root, _ := filepath.Abs("..")
	if rec.Dir() != filepath.Join(root, "test-results", "fault") || rec.RunID() != "env-run" {
		t.Errorf("NewRecorder defaults: dir %s run %s", rec.Dir(), rec.RunID())
	}
}

func TestRecorderConcurrentWrites(t *testing.T) {
	rec, err := NewRecorder("p", WithResultsDir(t.TempDir()), WithRunID("r"))
	if err != nil {
		t.Fatal(err)
	}
	const n = 64
	paths := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r := sampleRecord() // same test and leg: only the random suffix keeps them apart
			r.Seed = int64(i)
			p, err := rec.Write(r)
			if err != nil {
				t.Error(err)
			}
			paths[i] = p
		})
	}
	wg.Wait()
	names := dirNames(t, rec.Dir())
	if len(names) != n {
		t.Fatalf("%d files for %d writes: %v", len(names), n, names)
	}
	slices.Sort(paths)
	if len(slices.Compact(paths)) != n {
		t.Errorf("paths are not unique")
	}
}

func TestWriteStamp(t *testing.T) {
	dir := FaultDir(filepath.Join(t.TempDir(), "results"))
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
	if diff := cmp.Diff([]string{StampName}, dirNames(t, dir)); diff != "" {
		t.Errorf("WriteStamp left other files (-want +got):\n%s", diff)
	}
	other := filepath.Join(t.TempDir(), "elsewhere")
	if err := WriteStamp(other, "x"); !errors.Is(err, ErrNotFaultDir) {
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
		ReportName:            true,
		StampName:             false,
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
		dir := FaultDir(t.TempDir())
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
		if err := Purge(dir); !errors.Is(err, ErrNotFaultDir) {
			t.Errorf("Purge(%s) = %v, want ErrNotFaultDir", dir, err)
		}
		if diff := cmp.Diff(before, dirNames(t, dir)); diff != "" {
			t.Errorf("Purge of a non-fault dir deleted files (-before +after):\n%s", diff)
		}
	})
	t.Run("a missing directory is nothing to purge", func(t *testing.T) {
		if err := Purge(FaultDir(t.TempDir())); err != nil {
			t.Errorf("Purge of a missing dir: %v", err)
		}
	})
	t.Run("a fault directory that is a symlink: refused, its target untouched", func(t *testing.T) {
		decoy := t.TempDir()
		setup(t, decoy)
		before := dirNames(t, decoy)
		dir := FaultDir(t.TempDir())
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
		dir := FaultDir(t.TempDir())
		if err := os.WriteFile(dir, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := Purge(dir); !errors.Is(err, ErrResultsDir) {
			t.Errorf("Purge of a file: err = %v, want ErrResultsDir", err)
		}
	})
}

// TestPairedCycle runs the validate sequence end to end: purge, stamp, battery writes through
// a Recorder, paired verify certifies and consumes the stamp.
func TestPairedCycle(t *testing.T) {
	root := t.TempDir()
	dir := FaultDir(root)
	// Leftovers of a previous run, including a lost write that must not haunt this run.
	old, _ := NewRecorder("p", WithResultsDir(root), WithRunID("old"))
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
	if err := os.Chtimes(filepath.Join(dir, StampName), past, past); err != nil {
		t.Fatal(err)
	}
	rec, _ := NewRecorder("p", WithResultsDir(root), WithRunID("new"))
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
