package noise

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contested/contested/internal/reap"
	"github.com/contested/contested/internal/reexec"
)

func TestMain(m *testing.M) {
	reexec.Main(reexec.Roles{
		"neighbour":       neighbourRole,
		"named neighbour": func() int { anonymous = false; return neighbourRole() },
	})
	os.Exit(m.Run())
}

// neighbourRole runs an I/O neighbour in $NOISE_DIR, says "writing" once
// its writers have written, and waits to be killed.
func neighbourRole() int {
	n, err := Start(context.Background(), Spec{IO: 2}, 1, os.Getenv("NOISE_DIR"))
	if err != nil {
		fmt.Println(err)
		return 1
	}
	for n.ioBytes.Load() < 4*ioChunk {
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Println("writing")
	time.Sleep(time.Hour)
	return 0
}

func selfToken() string { return reap.Self().Token() }

// scratchFiles lists the writers' files under root.
func scratchFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), scratchPrefix) {
			out = append(out, path)
		}
		return nil
	})
	return out
}

// TestAKilledNeighbourLeavesNoNoiseFiles: the I/O neighbour's files in
// the results directory never outlive the run that made them, even when
// its process is killed with SIGKILL (as the out-of-memory killer does):
// an anonymous file is gone with the process; where only a named one can
// be made, the next neighbour in that directory or the sweep removes it,
// and neither touches the files of a neighbour that still runs.
func TestAKilledNeighbourLeavesNoNoiseFiles(t *testing.T) {
	for _, tt := range []struct {
		name    string
		named   bool   // the writers cannot make anonymous files
		cleanup string // what removes the files: "kernel", "next run" or "sweep"
	}{
		{"anonymous files are gone with the process", false, "kernel"},
		{"named files are removed by the next neighbour", true, "next run"},
		{"named files are removed by the sweep", true, "sweep"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "ladder", "reruns", "TestX", "alone-1")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			role := "neighbour"
			if tt.named {
				role = "named neighbour"
			}
			cmd := reexec.Command(t, role, "NOISE_DIR="+dir)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			line, _ := bufio.NewReader(out).ReadString('\n')
			if strings.TrimSpace(line) != "writing" {
				t.Fatalf("the neighbour said %q", line)
			}
			running := scratchFiles(t, root)
			if tt.named && len(running) != 2 {
				t.Fatalf("a neighbour that can only name its files made %v, want two", running)
			}
			if tt.named {
				var said strings.Builder
				if n := Sweep(root, &said); n != 0 || len(scratchFiles(t, root)) != 2 {
					t.Fatalf("the sweep removed %d files of a neighbour that runs:\n%s", n, said.String())
				}
			}
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			var said strings.Builder
			switch tt.cleanup {
			case "next run":
				n, err := Start(context.Background(), Spec{IO: 1}, 2, dir)
				if err != nil {
					t.Fatal(err)
				}
				n.Stop()
			case "sweep":
				if n := Sweep(root, &said); n != 2 || strings.Count(said.String(), "noise: removed") != 2 {
					t.Errorf("the sweep removed %d files, want 2:\n%s", n, said.String())
				}
			}
			if left := scratchFiles(t, root); len(left) != 0 {
				t.Errorf("after SIGKILL and the %s, the results directory holds %v", tt.cleanup, left)
			}
		})
	}
}

// TestRemoveStaleJudgesEachFileByItsOwner: a file of a process that runs
// stays; one an older contested named without its owner goes once nobody
// has written it for legacyStale; a name that is not a writer's stays.
func TestRemoveStaleJudgesEachFileByItsOwner(t *testing.T) {
	old := time.Now().Add(-2 * legacyStale)
	for _, tt := range []struct {
		name    string
		file    string
		mtime   time.Time
		removed bool
	}{
		{"an older contested's, long unwritten", ".noise-123456.tmp", old, true},
		{"an older contested's, written just now", ".noise-123456.tmp", time.Now(), false},
		{"this process's", scratchPrefix + selfToken() + "-42" + scratchSuffix, old, false},
		{"an owner that does not parse", ".noise-bm90IGFuIG93bmVy-42.tmp", old, false},
		{"not a writer's file", ".noise-123456.json", old, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, tt.file)
			if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, tt.mtime, tt.mtime); err != nil {
				t.Fatal(err)
			}
			var said strings.Builder
			n := RemoveStale(dir, &said)
			_, err := os.Lstat(p)
			if gone := err != nil; gone != tt.removed || (n == 1) != tt.removed {
				t.Errorf("RemoveStale removed %d (file gone: %v), want removed %v:\n%s", n, gone, tt.removed, said.String())
			}
		})
	}
}
