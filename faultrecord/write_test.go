package faultrecord

import (
	"errors"
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
	"github.com/contested/contested/internal/faultdir"
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
			if filepath.Dir(path) != rec.Dir() || faultdir.Classify(filepath.Base(path)) != faultdir.KindRecord {
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
		if faultdir.Classify(n) != faultdir.KindRecord {
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

// TestNewRecorderNeedsAPlace: a recorder resolves nothing itself, so one
// without a results directory or a run id is refused rather than writing
// somewhere the gate never looks.
func TestNewRecorderNeedsAPlace(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []RecorderOption
	}{
		{"nothing", nil},
		{"no run id", []RecorderOption{WithResultsDir(t.TempDir())}},
		{"no results directory", []RecorderOption{WithRunID("r")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if rec, err := NewRecorder("p", tc.opts...); !errors.Is(err, ErrNoRecorderPlace) {
				t.Errorf("NewRecorder = %+v, %v; want ErrNoRecorderPlace", rec, err)
			}
		})
	}
	root := t.TempDir()
	rec, err := NewRecorder("p", WithResultsDir(root), WithRunID("r"), WithModuleRoot(root))
	if !errors.Is(err, atomicfile.ErrBadResultsDir) {
		t.Errorf("NewRecorder at the module root = %+v, %v; want ErrBadResultsDir", rec, err)
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
