package faultrecord

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv carries the results root to the re-executed test binary and turns
// TestHelperWriterLoop into a writer that never stops on its own.
const helperEnv = "FAULTRECORD_HELPER_WRITE_LOOP_ROOT"

// TestHelperWriterLoop is not a test: it is the body of the subprocess that
// TestKilledWriterLeavesNoValidLookingPartialRecord kills. Without helperEnv it does nothing.
func TestHelperWriterLoop(t *testing.T) {
	root := os.Getenv(helperEnv)
	if root == "" {
		return
	}
	rec, err := NewRecorder("example.com/helper", WithResultsDir(root), WithRunID("killed-run"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	// Several writers and large evidence keep a temporary file open most of the time, so the
	// kill usually lands mid-write.
	for w := range 4 {
		go func() {
			for i := 0; ; i++ {
				r := sampleRecord()
				r.Test = fmt.Sprintf("TestHelper/w%d-%d", w, i)
				r.Evidence.Victim = strings.Repeat("x", rand.IntN(512<<10))
				if _, err := rec.Write(r); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
			}
		}()
	}
	select {} // until SIGKILL
}

// TestKilledWriterLeavesNoValidLookingPartialRecord kills a process that writes records in a
// tight loop and checks what it left: every *.json file is a complete valid record, and every
// leftover temporary file is counted unreadable by Verify, never read as a record.
func TestKilledWriterLeavesNoValidLookingPartialRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns and kills a subprocess")
	}
	root := t.TempDir()
	dir := FaultDir(root)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWriterLoop$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+root)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})

	// Let it write a few records, then kill it while a temporary file exists if we can see
	// one (the writer may still finish that file between our look and the signal).
	deadline := time.Now().Add(30 * time.Second)
	sawTemp := false
	for time.Now().Before(deadline) {
		records, temps := countKinds(t, dir)
		if records >= 20 && temps > 0 {
			sawTemp = true
			break
		}
		if records >= 200 { // never caught one mid-write; kill anyway
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	killed = true
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("writer did not die by SIGKILL: %v\n%s", err, stderr.String())
	}

	records, temps := countKinds(t, dir)
	t.Logf("after SIGKILL: %d record files, %d leftover temporary files (a temp file was seen before the kill: %v)", records, temps, sawTemp)
	if records == 0 {
		t.Fatalf("the writer wrote nothing before the kill:\n%s", stderr.String())
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if classify(e.Name()) != kindRecord {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseRecord(data); err != nil {
			t.Errorf("%s is a record file but does not parse as a complete record: %v", e.Name(), err)
		}
	}

	rep, verr := Verify(context.Background(), Options{Dir: dir, Mode: Standalone})
	if rep == nil {
		t.Fatalf("Verify: %v", verr)
	}
	if rep.RecordsRead != records || rep.RecordsUnreadable != temps {
		t.Errorf("Verify read %d and found %d unreadable; the directory has %d records and %d temporary files",
			rep.RecordsRead, rep.RecordsUnreadable, records, temps)
	}
	for _, u := range rep.Unreadable {
		if classify(u.File) != kindRecordTemp || !strings.Contains(u.Reason, "incomplete write") {
			t.Errorf("unexpected unreadable entry %+v", u)
		}
	}
	if (temps > 0) == rep.Certified {
		t.Errorf("certified = %v with %d leftover temporary files; a lost write must refuse", rep.Certified, temps)
	}
}

func countKinds(t *testing.T, dir string) (records, temps int) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, 0
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		switch classify(e.Name()) {
		case kindRecord:
			records++
		case kindRecordTemp:
			temps++
		}
	}
	return records, temps
}
