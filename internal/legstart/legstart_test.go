package legstart

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestAStartIsReadBackAndFoundByItsTest: a start written under a results
// directory reads back with its seed; Of finds a test's latest start, and
// OfRun keeps one run's; a file that is not a start is skipped and counted.
func TestAStartIsReadBackAndFoundByItsTest(t *testing.T) {
	root := t.TempDir()
	at := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	for i, s := range []Start{
		{RunID: "r1", Package: "example.com/m", Test: "TestC/reset", Leg: "reset", Seed: 7, StartedAt: at},
		{RunID: "r2", Package: "example.com/m", Test: "TestC/reset", Leg: "reset", Seed: 9, StartedAt: at.Add(time.Minute)},
	} {
		if _, err := Write(root, s); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, DirName, "junk.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	starts, skipped, err := Read(root)
	if err != nil || len(starts) != 2 || skipped != 1 {
		t.Fatalf("read %d starts, skipped %d, %v; want 2 and 1", len(starts), skipped, err)
	}
	if s, ok := Of(starts, "example.com/m", "TestC/reset"); !ok || s.Seed != 9 {
		t.Errorf("Of = %+v, %v; want the latest, seed 9", s, ok)
	}
	if got := OfRun(starts, "r1"); len(got) != 1 || got[0].Seed != 7 {
		t.Errorf("OfRun(r1) = %+v", got)
	}
	if _, err := Write(root, Start{RunID: "r3"}); err == nil {
		t.Error("a start without its test and leg was written")
	}
}
