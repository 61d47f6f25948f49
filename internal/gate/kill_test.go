package gate

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

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/faultdir"
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
	rec, err := faultrecord.NewRecorder("example.com/helper", faultrecord.WithResultsDir(root), faultrecord.WithRunID("killed-run"))
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
// leftover temporary file is counted unreadable by Verify, never read as a record. It runs
// several rounds, killing at a random record count or as soon as a temporary file is visible,
// so that a writer that is not atomic would be caught mid-write.
func TestKilledWriterLeavesNoValidLookingPartialRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns and kills subprocesses")
	}
	const rounds = 6
	totalTemps := 0
	for round := range rounds {
		t.Run(fmt.Sprintf("round %d", round), func(t *testing.T) {
			waitForTemp := round%2 == 0
			records, temps := killWriter(t, t.TempDir(), 5+rand.IntN(40), waitForTemp)
			t.Logf("after SIGKILL: %d record files, %d leftover temporary files (waited for a temp file: %v)", records, temps, waitForTemp)
			totalTemps += temps
		})
	}
	t.Logf("%d rounds left %d temporary files in all", rounds, totalTemps)
}

// killWriter starts the writer subprocess on root, kills it with SIGKILL once it has written
// minRecords records (and, with waitForTemp, while a temporary file is visible), then checks
// the directory and Verify's account of it.
func killWriter(t *testing.T, root string, minRecords int, waitForTemp bool) (records, temps int) {
	t.Helper()
	dir := faultdir.Of(root)
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
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		records, temps := countKinds(t, dir)
		if records >= minRecords && (!waitForTemp || temps > 0 || records >= 10*minRecords) {
			break
		}
		time.Sleep(200 * time.Microsecond)
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

	records, temps = countKinds(t, dir)
	if records == 0 {
		t.Fatalf("the writer wrote nothing before the kill:\n%s", stderr.String())
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if faultdir.Classify(e.Name()) != faultdir.KindRecord {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := faultrecord.ParseRecord(data); err != nil {
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
		if faultdir.Classify(u.File) != faultdir.KindRecordTemp || !strings.Contains(u.Reason, "incomplete write") {
			t.Errorf("unexpected unreadable entry %+v", u)
		}
	}
	if (temps > 0) == rep.Certified {
		t.Errorf("certified = %v with %d leftover temporary files; a lost write must refuse", rep.Certified, temps)
	}
	return records, temps
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
		switch faultdir.Classify(e.Name()) {
		case faultdir.KindRecord:
			records++
		case faultdir.KindRecordTemp:
			temps++
		}
	}
	return records, temps
}
