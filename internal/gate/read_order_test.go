package gate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/faultdir"
)

// TestReadRecordsOldestArmedFirst: records come back in the order they
// were armed, whatever their file names say, and records armed at the same
// instant in file-name order.
func TestReadRecordsOldestArmedFirst(t *testing.T) {
	dir := filepath.Join(t.TempDir(), faultdir.Name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 11, 29, 10, 15, 0, 0, time.UTC)
	files := []struct {
		name  string
		armed time.Time
	}{
		{"a.json", base.Add(3 * time.Second)},
		{"b.json", base.Add(time.Second)},
		{"d.json", base.Add(2 * time.Second)},
		{"c.json", base.Add(2 * time.Second)},
	}
	for _, f := range files {
		var r faultrecord.Record
		if err := json.Unmarshal([]byte(recordJSON), &r); err != nil {
			t.Fatal(err)
		}
		r.ArmedAt, r.FiredAt, r.Test = f.armed, f.armed, "TestOrder/"+f.name
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f.name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	recs, unreadable, err := ReadRecords(dir)
	if err != nil || len(unreadable) != 0 || len(recs) != len(files) {
		t.Fatalf("ReadRecords: %d records, unreadable %v, %v", len(recs), unreadable, err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.Test)
	}
	want := []string{"TestOrder/b.json", "TestOrder/c.json", "TestOrder/d.json", "TestOrder/a.json"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want %v (oldest armed first, then by file name)", got, want)
		}
	}
}

// recordJSON is a valid record, the design's example.
const recordJSON = `{
  "schema": "contested/faultrecord@1",
  "run_id": "20261129T101500Z-4f2a",
  "test": "TestStoreContract/reset",
  "surface": "ledger.store",
  "class": "store",
  "leg": "reset",
  "seed": 1,
  "armed": true,
  "armed_at": "2026-11-29T10:15:01Z",
  "fired": true,
  "fired_at": "2026-11-29T10:15:02Z",
  "evidence": {"injector": "toxiproxy reset_peer on proxy p", "victim": "pgx: connection reset"}
}`
