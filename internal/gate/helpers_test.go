package gate

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/contested/contested/faultrecord"
)

// recordSets holds the record format's fixtures, one directory per set (good, stale, unfired, ...).
var recordSets = filepath.Join("..", "..", "faultrecord", "testdata", "records")

// sampleRecord is a valid record of a fault that fired.
func sampleRecord() faultrecord.Record {
	return faultrecord.Record{
		Test: "TestStoreContract/reset", Surface: "ledger.store", Class: "store", Leg: "reset", Seed: 42,
		Replay: "CONTESTED_SEED=42 go test ./store -run '^TestStoreContract$/^reset$' -count=1",
		Armed:  true, ArmedAt: time.Date(2026, 11, 29, 11, 15, 1, 0, time.FixedZone("CET", 3600)),
		Fired: true, FiredAt: time.Date(2026, 11, 29, 10, 15, 2, 0, time.UTC),
		Evidence: faultrecord.Evidence{Injector: "reset_peer; 2 conns reset", Victim: "ECONNRESET x2"},
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

// decoyDir is a directory outside any results directory holding files a run must never touch
// (what validate deleted when test-results/fault was a link to a project's root), and a check
// that they are byte for byte intact with nothing added.
func decoyDir(t *testing.T) (string, func()) {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"config.json":  `{"keep": true}` + "\n",
		"package.json": `{"name": "decoy"}` + "\n",
		"notes.md":     "not ours\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, func() {
		t.Helper()
		got := map[string]string{}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatalf("decoy directory: %v", err)
		}
		for _, e := range entries {
			b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			got[e.Name()] = string(b)
		}
		if diff := cmp.Diff(files, got); diff != "" {
			t.Errorf("the decoy directory changed (-want +got):\n%s", diff)
		}
	}
}
