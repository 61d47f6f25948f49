package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/faultdir"
)

// writeRecords writes n valid records into a fresh fault directory, and
// links of one to it under extra names.
func writeRecords(t *testing.T, n int, links ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), faultdir.Name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		r := sampleRecord()
		r.Schema = faultrecord.Schema
		r.Test = fmt.Sprintf("TestStoreContract/reset-%d", i)
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("r%05d.json", i)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range links {
		if err := os.Symlink(filepath.Join(dir, "r00000.json"), filepath.Join(dir, l)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestVerifyReadsEveryRecordOfALargeDirectory: the directory is listed in
// chunks of 1024 entries; every chunk is read, not only the first.
func TestVerifyReadsEveryRecordOfALargeDirectory(t *testing.T) {
	dir := writeRecords(t, 1100)
	opts := Options{Dir: dir, Mode: Standalone}
	rep, _ := Verify(context.Background(), opts)
	if rep == nil || rep.RecordsRead != 1100 {
		t.Fatalf("Verify of 1100 records read %d", readCount(rep))
	}
}

// TestPhase2CountsLinkedRecordFiles: a record file that is a link is
// refused unread, and counted among the files phase 2 saw.
func TestPhase2CountsLinkedRecordFiles(t *testing.T) {
	dir := writeRecords(t, 2, "linked.json")
	rep, _ := Verify(context.Background(), Options{Dir: dir, Mode: Standalone})
	if rep == nil || len(rep.Phases) < 2 || !strings.HasPrefix(rep.Phases[1].Detail, "1 unreadable of 3 files: linked.json") {
		t.Fatalf("phase 2: %s", phase2Detail(rep))
	}
}

// TestVerifyListsTheInventoryOnlyForSelfTests: without self-tests the test
// inventory (a go test -list of the module, slow) is never asked for.
func TestVerifyListsTheInventoryOnlyForSelfTests(t *testing.T) {
	dir := writeRecords(t, 1)
	var calls atomic.Int64
	inv := func(context.Context) ([]string, error) { calls.Add(1); return []string{"TestA"}, nil }
	if _, err := Verify(context.Background(), Options{Dir: dir, Mode: Standalone, Inventory: inv}); calls.Load() != 0 {
		t.Errorf("Verify without self-tests listed the inventory %d times (%v)", calls.Load(), err)
	}
	if _, err := Verify(context.Background(), Options{Dir: dir, Mode: Standalone, Inventory: inv, SelfTests: []string{"TestA"}}); calls.Load() != 1 {
		t.Errorf("Verify with a self-test listed the inventory %d times (%v), want once", calls.Load(), err)
	}
}

// TestVerifyReadsWithManyCPUs: the readers scale with GOMAXPROCS (four per
// CPU, at most 64), and there is always at least one: with eight CPUs the
// scan still ends.
func TestVerifyReadsWithManyCPUs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	dir := writeRecords(t, 3)
	done := make(chan *Report, 1)
	go func() {
		rep, _ := Verify(context.Background(), Options{Dir: dir, Mode: Standalone})
		done <- rep
	}()
	select {
	case rep := <-done:
		if rep == nil || rep.RecordsRead != 3 {
			t.Errorf("Verify with 8 CPUs read %d records, want 3", readCount(rep))
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Verify with 8 CPUs did not end in 20s: no reader took the records")
	}
}

func readCount(rep *Report) int {
	if rep == nil {
		return -1
	}
	return rep.RecordsRead
}

func phase2Detail(rep *Report) string {
	if rep == nil || len(rep.Phases) < 2 {
		return "(no phase 2)"
	}
	return rep.Phases[1].Detail
}
