//go:build linux

package gate

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/contested/contested/internal/faultdir"
)

// stampReads counts the times the stamp in dir is read to the end and closed, from inotify
// (IN_CLOSE_NOWRITE): the ordering evidence that a verification has read its stamp, without
// waiting for any length of time. after(n) is closed once n reads were seen.
type stampReads struct {
	mu    sync.Mutex
	n     int
	waits map[int]chan struct{}
}

func watchStampReads(t *testing.T, dir string) *stampReads {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CLOSE_NOWRITE); err != nil {
		unix.Close(fd)
		t.Fatalf("inotify watch %s: %v", dir, err)
	}
	f := os.NewFile(uintptr(fd), "inotify") // non-blocking: Close ends a pending Read
	s := &stampReads{waits: map[int]chan struct{}{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 64<<10)
		for {
			n, err := f.Read(buf)
			if err != nil {
				return
			}
			for off := 0; off+unix.SizeofInotifyEvent <= n; {
				ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
				name := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
				off += unix.SizeofInotifyEvent + int(ev.Len)
				if string(bytes.TrimRight(name, "\x00")) == faultdir.StampName {
					s.seen()
				}
			}
		}
	}()
	t.Cleanup(func() { f.Close(); <-done })
	return s
}

func (s *stampReads) seen() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	for n, ch := range s.waits {
		if s.n >= n {
			close(ch)
			delete(s.waits, n)
		}
	}
}

// after returns a channel closed once n reads of the stamp were seen.
func (s *stampReads) after(n int) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := make(chan struct{})
	if s.n >= n {
		close(ch)
		return ch
	}
	if w, ok := s.waits[n]; ok {
		return w
	}
	s.waits[n] = ch
	return ch
}

// inventoryAfter is an inventory that returns only once the stamp was read n times, then runs
// meanwhile, and answers fullInventory. Verify runs the inventory concurrently with reading the
// stamp and records and consumes the stamp only after the inventory returned, so meanwhile runs
// between a verification's reading of its stamp and its consuming it.
func inventoryAfter(t *testing.T, reads *stampReads, n int, meanwhile func()) func(context.Context) ([]string, error) {
	return func(ctx context.Context) ([]string, error) {
		select {
		case <-reads.after(n):
		case <-time.After(time.Minute):
			t.Errorf("the stamp was not read %d times within a minute", n)
			return nil, errors.New("stamp not read")
		}
		if meanwhile != nil {
			meanwhile()
		}
		return fullInventory, nil
	}
}

// claimLeftovers lists claim files left in dir.
func claimLeftovers(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, ".gate-stamp-claim-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestAStampThatVanishesMidVerificationRefuses: the stamp is removed after the paired
// verification read it and before it consumed it. Nothing proves these records were not
// certified meanwhile, so the verification refuses (phase 1) and leaves the records alone.
func TestAStampThatVanishesMidVerificationRefuses(t *testing.T) {
	dir := layout(t, fixture{sets: []string{"good"}, stamp: true})
	records := listing(t, dir)
	delete(records, faultdir.StampName)
	opts := baseOptions(dir)
	opts.Inventory = inventoryAfter(t, watchStampReads(t, dir), 1, func() {
		if err := os.Remove(filepath.Join(dir, faultdir.StampName)); err != nil {
			t.Errorf("remove the stamp: %v", err)
		}
	})
	rep, err := Verify(t.Context(), opts)
	if !errors.Is(err, ErrRefused) || rep.Certified || rep.StampConsumed {
		t.Fatalf("verification whose stamp vanished: err = %v, certified %v, consumed %v; want ErrRefused, not certified, not consumed",
			err, rep.Certified, rep.StampConsumed)
	}
	if diff := cmp.Diff([]int{1}, failedPhases(rep)); diff != "" {
		t.Errorf("failed phases (-want +got):\n%s", diff)
	}
	if !strings.Contains(rep.Phases[0].Detail, "vanished") {
		t.Errorf("phase 1 detail %q does not say the stamp vanished", rep.Phases[0].Detail)
	}
	if diff := cmp.Diff(records, listing(t, dir)); diff != "" {
		t.Errorf("the refused verification changed the records (-before +after):\n%s", diff)
	}
	if left := claimLeftovers(t, dir); len(left) != 0 {
		t.Errorf("claim files left behind: %v", left)
	}
}

// TestTwoPairedVerificationsCannotBothCertify races two paired verifications of one record set
// and one stamp, both past reading the stamp before either consumes it: exactly one certifies,
// and the other refuses on phase 1. Several rounds, each on a fresh directory. (The second starts
// once the first has read the stamp: inotify merges two identical events that were not yet
// read, so the reads are counted one at a time.)
func TestTwoPairedVerificationsCannotBothCertify(t *testing.T) {
	for round := range 5 {
		dir := layout(t, fixture{sets: []string{"good"}, stamp: true})
		reads := watchStampReads(t, dir)
		var wg sync.WaitGroup
		reps := make([]*Report, 2)
		errs := make([]error, 2)
		for i := range 2 {
			opts := baseOptions(dir)
			opts.Inventory = inventoryAfter(t, reads, 2, nil)
			wg.Go(func() { reps[i], errs[i] = Verify(t.Context(), opts) })
			select {
			case <-reads.after(i + 1):
			case <-time.After(time.Minute):
				t.Fatalf("round %d: verification %d did not read the stamp within a minute", round, i)
			}
		}
		wg.Wait()
		certified := 0
		for i, rep := range reps {
			if rep == nil {
				t.Fatalf("round %d: verification %d returned no report: %v", round, i, errs[i])
			}
			if rep.Certified {
				certified++
				if errs[i] != nil || !rep.StampConsumed {
					t.Errorf("round %d: the certified verification: err %v, consumed %v", round, errs[i], rep.StampConsumed)
				}
				continue
			}
			if !errors.Is(errs[i], ErrRefused) || !slices.Equal(failedPhases(rep), []int{1}) || !strings.Contains(rep.Phases[0].Detail, "vanished") {
				t.Errorf("round %d: the losing verification: err %v, failed phases %v, phase 1 %q; want a refusal on phase 1 saying the stamp is gone",
					round, errs[i], failedPhases(rep), rep.Phases[0].Detail)
			}
		}
		if certified != 1 {
			t.Fatalf("round %d: %d of two racing paired verifications certified the same records, want exactly 1", round, certified)
		}
		if _, err := os.Lstat(filepath.Join(dir, faultdir.StampName)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("round %d: the stamp survived a certified verification: %v", round, err)
		}
		if left := claimLeftovers(t, dir); len(left) != 0 {
			t.Errorf("round %d: claim files left behind: %v", round, left)
		}
	}
}

// TestAStampReplacedMidVerificationIsLeftForItsRun: after the verification read its stamp,
// something else took the stamp's name: a new pairing's stamp with the same mtime, the same
// stamp touched, or a symbolic link to a copy identical in content and mtime. The verification
// must not consume what is not its stamp (a new run could then never certify) nor certify
// against it: it refuses, and the replacement is left where it was.
func TestAStampReplacedMidVerificationIsLeftForItsRun(t *testing.T) {
	later := stampTime.Add(2 * time.Minute)
	tests := []struct {
		name    string
		replace func(t *testing.T, dir string)
	}{
		// Written within the same tick of a coarse file system clock: only its content tells.
		{"a new run's stamp with the same mtime", func(t *testing.T, dir string) {
			if err := WriteStamp(dir, "the-next-run"); err != nil {
				t.Errorf("write the next run's stamp: %v", err)
			}
			if err := os.Chtimes(filepath.Join(dir, faultdir.StampName), stampTime, stampTime); err != nil {
				t.Errorf("date the next run's stamp: %v", err)
			}
		}},
		{"the same content, touched", func(t *testing.T, dir string) {
			if err := os.Chtimes(filepath.Join(dir, faultdir.StampName), later, later); err != nil {
				t.Errorf("touch the stamp: %v", err)
			}
		}},
		{"a link to an identical copy", func(t *testing.T, dir string) {
			stamp := filepath.Join(dir, faultdir.StampName)
			b, err := os.ReadFile(stamp)
			if err != nil {
				t.Error(err)
				return
			}
			copyPath := filepath.Join(filepath.Dir(dir), "stamp-copy")
			if err := os.WriteFile(copyPath, b, 0o644); err != nil {
				t.Error(err)
			}
			if err := os.Chtimes(copyPath, stampTime, stampTime); err != nil {
				t.Error(err)
			}
			tmp := filepath.Join(dir, "link.tmp")
			if err := os.Symlink(copyPath, tmp); err != nil {
				t.Error(err)
			}
			if err := os.Rename(tmp, stamp); err != nil {
				t.Error(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := layout(t, fixture{sets: []string{"good"}, stamp: true})
			stamp := filepath.Join(dir, faultdir.StampName)
			var before os.FileInfo
			opts := baseOptions(dir)
			opts.Inventory = inventoryAfter(t, watchStampReads(t, dir), 1, func() {
				tt.replace(t, dir)
				var err error
				if before, err = os.Lstat(stamp); err != nil {
					t.Errorf("the replacement: %v", err)
				}
			})
			rep, err := Verify(t.Context(), opts)
			if !errors.Is(err, ErrRefused) || rep.Certified || rep.StampConsumed {
				t.Fatalf("verification whose stamp was replaced: err = %v, certified %v, consumed %v; want ErrRefused, not certified, not consumed",
					err, rep.Certified, rep.StampConsumed)
			}
			if diff := cmp.Diff([]int{1}, failedPhases(rep)); diff != "" {
				t.Errorf("failed phases (-want +got):\n%s", diff)
			}
			after, err := os.Lstat(stamp)
			if err != nil {
				t.Fatalf("the replacement is gone: %v", err)
			}
			if !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) {
				t.Errorf("the replacement was not left as it was: before %v %v, after %v %v", before.Mode(), before.ModTime(), after.Mode(), after.ModTime())
			}
			if left := claimLeftovers(t, dir); len(left) != 0 {
				t.Errorf("claim files left behind: %v", left)
			}
		})
	}
}
