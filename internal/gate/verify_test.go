package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/contested/contested/internal/faultdir"
)

// The self-tests this repository pins (docs/reference/registry.md); the inventories below are built around them.
var (
	selfTests     = []string{"TestPanicMidFaultLeavesResidueThatTheReclaimPathReaps", "TestDSNGuardRefusesCanonicalDB"}
	fullInventory = []string{"TestConsumerContract", "TestDSNGuardRefusesCanonicalDB",
		"TestPanicMidFaultLeavesResidueThatTheReclaimPathReaps", "TestPoolContract", "TestStoreContract"}
	// renamedInventory is fullInventory after someone renamed a self-test away.
	renamedInventory = []string{"TestConsumerContract", "TestDSNGuardRefusesCanonicalDatabase",
		"TestPanicMidFaultLeavesResidueThatTheReclaimPathReaps", "TestPoolContract", "TestStoreContract"}
)

func inventoryOf(names []string) func(context.Context) ([]string, error) {
	return func(context.Context) ([]string, error) { return names, nil }
}

// baseOptions are the options of this repository's own registry for the testdata records.
func baseOptions(dir string) Options {
	return Options{
		Dir:              dir,
		Mode:             Paired,
		RecordingClasses: []string{"store", "mq-consumer"},
		KnownClasses:     []string{"lease", "mq-consumer", "pool", "store"},
		Surfaces:         []string{"ledger.consumer", "ledger.pool", "ledger.store"},
		SelfTests:        selfTests,
		Inventory:        inventoryOf(fullInventory),
	}
}

// stampTime is the stamp's mtime in every laid-out fixture; records are set one minute after it
// and stale records one minute before it, so phase 1 never depends on the clock's resolution.
var stampTime = time.Date(2026, 11, 29, 10, 15, 0, 0, time.UTC)

type fixture struct {
	sets  []string // testdata/records/<set> directories copied in, in order
	stale []string // file names given an mtime before the stamp
	stamp bool     // write a gate stamp
}

// layout copies the fixture's record sets into <tmp>/results/fault, writes the stamp and sets
// every mtime relative to it, and returns the fault directory.
func layout(t *testing.T, fx fixture) string {
	t.Helper()
	dir := faultdir.Of(filepath.Join(t.TempDir(), "results"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, set := range fx.sets {
		src := filepath.Join(recordSets, set)
		entries, err := os.ReadDir(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(src, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, e.Name())
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			mtime := stampTime.Add(time.Minute)
			if slices.Contains(fx.stale, e.Name()) {
				mtime = stampTime.Add(-time.Minute)
			}
			if err := os.Chtimes(path, mtime, mtime); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, s := range fx.stale {
		if _, err := os.Stat(filepath.Join(dir, s)); err != nil {
			t.Fatalf("stale file %s is not in the fixture: %v", s, err)
		}
	}
	if fx.stamp {
		if err := WriteStamp(dir, "20261129T101500Z-4f2a"); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(filepath.Join(dir, faultdir.StampName), stampTime, stampTime); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// listing is a directory's content as name → size and mtime, to prove nothing was deleted or
// rewritten. The report is left out: writing it is Verify's job.
func listing(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		if e.Name() == faultdir.ReportName {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = fmt.Sprintf("%d %s", fi.Size(), fi.ModTime().UTC().Format(time.RFC3339Nano))
	}
	return out
}

func failedPhases(rep *Report) []int {
	var failed []int
	for _, p := range rep.Phases {
		if !p.OK {
			failed = append(failed, p.Number)
		}
	}
	return failed
}

// checkReportShape asserts what every report must hold whatever the outcome: six phases in
// order, a certified flag that agrees with them, and a fault-report.json equal to the value.
func checkReportShape(t *testing.T, dir string, rep *Report, err error) {
	t.Helper()
	if len(rep.Phases) != 6 {
		t.Fatalf("report has %d phases, want 6: %+v", len(rep.Phases), rep.Phases)
	}
	wantNames := []string{phaseThisRun, phaseAllRead, phaseAllFired, phaseAnyFired, phaseClasses, phaseSelfTests}
	for i, p := range rep.Phases {
		if p.Number != i+1 || p.Name != wantNames[i] || p.Detail == "" {
			t.Errorf("phase %d = %+v, want number %d name %q and a detail", i, p, i+1, wantNames[i])
		}
	}
	if rep.Certified != (len(failedPhases(rep)) == 0) {
		t.Errorf("certified = %v but failed phases are %v", rep.Certified, failedPhases(rep))
	}
	if rep.Certified != (err == nil) {
		t.Errorf("certified = %v but err = %v", rep.Certified, err)
	}
	if !rep.Certified && !errors.Is(err, ErrRefused) {
		t.Errorf("refused run: err = %v, want ErrRefused", err)
	}
	data, rerr := os.ReadFile(filepath.Join(dir, faultdir.ReportName))
	if rerr != nil {
		t.Fatalf("read report: %v", rerr)
	}
	var onDisk Report
	if err := json.Unmarshal(data, &onDisk); err != nil {
		t.Fatalf("report does not parse: %v", err)
	}
	if diff := cmp.Diff(*rep, onDisk); diff != "" {
		t.Errorf("fault-report.json differs from the returned report (-returned +disk):\n%s", diff)
	}
}

// TestVerifyPhases gives each phase a record set that only that phase refuses.
func TestVerifyPhases(t *testing.T) {
	tests := []struct {
		name       string
		fx         fixture
		tweak      func(*Options)
		wantFailed []int
		check      func(t *testing.T, rep *Report)
	}{
		{
			name: "good set is certified",
			fx:   fixture{sets: []string{"good"}, stamp: true},
			check: func(t *testing.T, rep *Report) {
				want := map[string]ClassCount{"store": {2, 2}, "mq-consumer": {1, 1}, "pool": {1, 1}, "lease": {0, 0}}
				if diff := cmp.Diff(want, rep.ByClass); diff != "" {
					t.Errorf("by_class (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff([]string{"lease"}, rep.ClassesWithZeroFired); diff != "" {
					t.Errorf("classes_with_zero_fired (-want +got):\n%s", diff)
				}
				if rep.RecordsRead != 4 || rep.Armed != 4 || rep.Fired != 4 || rep.RunID != "20261129T101500Z-4f2a" {
					t.Errorf("counts read/armed/fired/run = %d/%d/%d/%q, want 4/4/4 and the stamp's run id", rep.RecordsRead, rep.Armed, rep.Fired, rep.RunID)
				}
				wantSelf := []SelfTest{{"TestDSNGuardRefusesCanonicalDB", true}, {"TestPanicMidFaultLeavesResidueThatTheReclaimPathReaps", true}}
				if diff := cmp.Diff(wantSelf, rep.SelfTests); diff != "" {
					t.Errorf("self_tests (-want +got):\n%s", diff)
				}
			},
		},
		{
			name:       "phase 1: a record older than the stamp",
			fx:         fixture{sets: []string{"good", "stale"}, stale: []string{"old-run-store-reset.json"}, stamp: true},
			wantFailed: []int{1},
			check: func(t *testing.T, rep *Report) {
				if diff := cmp.Diff([]string{"old-run-store-reset.json"}, rep.Stale); diff != "" {
					t.Errorf("stale (-want +got):\n%s", diff)
				}
				if !strings.Contains(rep.Phases[0].Detail, "old-run-store-reset.json") {
					t.Errorf("phase 1 detail does not name the stale file: %s", rep.Phases[0].Detail)
				}
			},
		},
		{
			name:       "phase 1: a record with the stamp's own mtime does not postdate it",
			fx:         fixture{sets: []string{"good"}, stamp: true},
			wantFailed: []int{1},
			tweak: func(o *Options) {
				p := filepath.Join(o.Dir, "store-reset.json")
				if err := os.Chtimes(p, stampTime, stampTime); err != nil {
					panic(err)
				}
			},
		},
		{
			name:       "phase 2: a truncated record",
			fx:         fixture{sets: []string{"good", "truncated"}, stamp: true},
			wantFailed: []int{2},
			check: func(t *testing.T, rep *Report) {
				wantUnreadable(t, rep, "store-reset-truncated.json", "unexpected end of JSON input")
			},
		},
		{
			name:       "phase 3: an armed fault that never fired",
			fx:         fixture{sets: []string{"good", "unfired"}, stamp: true},
			wantFailed: []int{3},
			check: func(t *testing.T, rep *Report) {
				want := []Unfired{{File: "pool-unfired.json", RunID: "20261129T101500Z-4f2a", Test: "TestPoolContract/pool-exhaustion",
					Package: "example.com/ledger/pool", Surface: "ledger.pool", Class: "pool", Leg: "pool-exhaustion", Seed: 1234,
					Replay: "CONTESTED_SEED=1234 go test ./pool -run '^TestPoolContract$/^pool-exhaustion$' -count=1"}}
				if diff := cmp.Diff(want, rep.Unfired); diff != "" {
					t.Errorf("unfired (-want +got):\n%s", diff)
				}
			},
		},
		{
			name:       "phase 4: zero faults executed",
			fx:         fixture{sets: []string{"zero"}, stamp: true},
			tweak:      func(o *Options) { o.RecordingClasses = nil },
			wantFailed: []int{4},
			check: func(t *testing.T, rep *Report) {
				if rep.Fired != 0 || rep.RecordsRead != 0 || rep.RecordsUnreadable != 0 {
					t.Errorf("read/unreadable/fired = %d/%d/%d, want zeros (README.txt is not a record)", rep.RecordsRead, rep.RecordsUnreadable, rep.Fired)
				}
			},
		},
		{
			name:       "phase 5: a recording class at zero",
			fx:         fixture{sets: []string{"class-zero"}, stamp: true},
			wantFailed: []int{5},
			check: func(t *testing.T, rep *Report) {
				if !strings.Contains(rep.Phases[4].Detail, "mq-consumer") {
					t.Errorf("phase 5 detail does not name mq-consumer: %s", rep.Phases[4].Detail)
				}
				if slices.Contains(rep.ClassesWithZeroFired, "mq-consumer") {
					t.Errorf("a recording class is a failure, not a name in classes_with_zero_fired: %v", rep.ClassesWithZeroFired)
				}
			},
		},
		{
			name:       "phase 6: a self-test renamed away",
			fx:         fixture{sets: []string{"good"}, stamp: true},
			tweak:      func(o *Options) { o.Inventory = inventoryOf(renamedInventory) },
			wantFailed: []int{6},
			check: func(t *testing.T, rep *Report) {
				wantSelf := []SelfTest{{"TestDSNGuardRefusesCanonicalDB", false}, {"TestPanicMidFaultLeavesResidueThatTheReclaimPathReaps", true}}
				if diff := cmp.Diff(wantSelf, rep.SelfTests); diff != "" {
					t.Errorf("self_tests (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "phase 6: the inventory cannot be built",
			fx:   fixture{sets: []string{"good"}, stamp: true},
			tweak: func(o *Options) {
				o.Inventory = func(context.Context) ([]string, error) {
					return nil, errors.New("go test -list: ./store/x.go:3:1: syntax error")
				}
			},
			wantFailed: []int{6},
			check: func(t *testing.T, rep *Report) {
				if !strings.Contains(rep.Phases[5].Detail, "syntax error") {
					t.Errorf("phase 6 detail lacks the inventory error: %s", rep.Phases[5].Detail)
				}
			},
		},
		{
			name:       "phase 6: self-tests but no inventory",
			fx:         fixture{sets: []string{"good"}, stamp: true},
			tweak:      func(o *Options) { o.Inventory = nil },
			wantFailed: []int{6},
		},
		{
			name:       "several phases at once are all reported",
			fx:         fixture{sets: []string{"class-zero", "stale", "truncated", "unfired"}, stale: []string{"old-run-store-reset.json"}, stamp: true},
			tweak:      func(o *Options) { o.Inventory = inventoryOf(renamedInventory) },
			wantFailed: []int{1, 2, 3, 5, 6},
		},
		{
			name:       "bad input: another schema",
			fx:         fixture{sets: []string{"good", "other-schema"}, stamp: true},
			wantFailed: []int{2},
			check: func(t *testing.T, rep *Report) {
				wantUnreadable(t, rep, "other-schema.json", `schema "contested/faultrecord@2"`)
			},
		},
		{
			name:       "bad input: a record with no surface",
			fx:         fixture{sets: []string{"good", "no-surface"}, stamp: true},
			wantFailed: []int{2},
			check:      func(t *testing.T, rep *Report) { wantUnreadable(t, rep, "no-surface.json", "no surface") },
		},
		{
			name:       "bad input: a leftover temporary record file",
			fx:         fixture{sets: []string{"good", "leftover-temp"}, stamp: true},
			wantFailed: []int{2},
			check:      func(t *testing.T, rep *Report) { wantUnreadable(t, rep, ".record-8812345.tmp", "incomplete write") },
		},
		{
			name:       "bad input: a surface that is not in the registry",
			fx:         fixture{sets: []string{"good", "unknown-surface"}, stamp: true},
			wantFailed: []int{2},
			check: func(t *testing.T, rep *Report) {
				wantUnreadable(t, rep, "ghost-surface.json", "surface ledger.ghost is not in the registry")
			},
		},
		{
			name:  "no registry: any surface is accepted",
			fx:    fixture{sets: []string{"good", "unknown-surface"}, stamp: true},
			tweak: func(o *Options) { o.Surfaces = nil },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := layout(t, tc.fx)
			opts := baseOptions(dir)
			if tc.tweak != nil {
				tc.tweak(&opts)
			}
			before := listing(t, dir)
			rep, err := Verify(t.Context(), opts)
			if rep == nil {
				t.Fatalf("Verify returned no report: %v", err)
			}
			checkReportShape(t, dir, rep, err)
			if diff := cmp.Diff(tc.wantFailed, failedPhases(rep)); diff != "" {
				t.Errorf("failed phases (-want +got):\n%s\nphases: %+v", diff, rep.Phases)
			}
			after := listing(t, dir)
			if rep.Certified {
				// A certified paired run consumes the stamp and touches nothing else.
				if _, ok := after[faultdir.StampName]; ok {
					t.Errorf("certified paired run left the stamp in place")
				}
				delete(before, faultdir.StampName)
				if !rep.StampConsumed {
					t.Errorf("stamp_consumed = false on a certified paired run")
				}
			}
			if diff := cmp.Diff(before, after); diff != "" {
				t.Errorf("directory changed (-before +after):\n%s", diff)
			}
			if tc.check != nil {
				tc.check(t, rep)
			}
		})
	}
}

func wantUnreadable(t *testing.T, rep *Report, file, reason string) {
	t.Helper()
	if rep.RecordsUnreadable != len(rep.Unreadable) {
		t.Errorf("records_unreadable = %d but %d entries", rep.RecordsUnreadable, len(rep.Unreadable))
	}
	for _, u := range rep.Unreadable {
		if u.File == file {
			if !strings.Contains(u.Reason, reason) {
				t.Errorf("unreadable %s: reason %q does not contain %q", file, u.Reason, reason)
			}
			if !strings.Contains(rep.Phases[1].Detail, file) {
				t.Errorf("phase 2 detail does not name %s: %s", file, rep.Phases[1].Detail)
			}
			return
		}
	}
	t.Errorf("unreadable = %+v, want an entry for %s", rep.Unreadable, file)
}

func TestStampIsSingleUse(t *testing.T) {
	dir := layout(t, fixture{sets: []string{"good"}, stamp: true})
	opts := baseOptions(dir)

	rep, err := Verify(t.Context(), opts)
	if err != nil || !rep.StampConsumed {
		t.Fatalf("first paired verification: err = %v, consumed = %v; want certified and consumed", err, rep.StampConsumed)
	}
	if _, err := os.Stat(filepath.Join(dir, faultdir.StampName)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stamp still there after a certified paired run: %v", err)
	}

	rep, err = Verify(t.Context(), opts)
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("second paired verification without a new stamp: err = %v, want ErrRefused", err)
	}
	if diff := cmp.Diff([]int{1}, failedPhases(rep)); diff != "" {
		t.Errorf("second verification failed phases (-want +got):\n%s", diff)
	}
	if !strings.Contains(rep.Phases[0].Detail, "no gate stamp") {
		t.Errorf("phase 1 detail = %q, want it to say the stamp is missing", rep.Phases[0].Detail)
	}

	// A fresh stamp makes the same (now stale) records fail phase 1 again: they predate it.
	if err := WriteStamp(dir, "next"); err != nil {
		t.Fatal(err)
	}
	later := stampTime.Add(2 * time.Minute) // after the records, as a real new stamp would be
	if err := os.Chtimes(filepath.Join(dir, faultdir.StampName), later, later); err != nil {
		t.Fatal(err)
	}
	rep, _ = Verify(t.Context(), opts)
	if diff := cmp.Diff([]int{1}, failedPhases(rep)); diff != "" {
		t.Errorf("old records under a new stamp: failed phases (-want +got):\n%s", diff)
	}
}

func TestFailedPairedRunLeavesEvidence(t *testing.T) {
	dir := layout(t, fixture{sets: []string{"good", "unfired"}, stamp: true})
	before := listing(t, dir)
	rep, err := Verify(t.Context(), baseOptions(dir))
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("err = %v, want ErrRefused", err)
	}
	if rep.StampConsumed {
		t.Errorf("a refused paired run consumed the stamp")
	}
	if diff := cmp.Diff(before, listing(t, dir)); diff != "" {
		t.Errorf("a refused paired run changed the directory (-before +after):\n%s", diff)
	}
}

func TestStandalone(t *testing.T) {
	tests := []struct {
		name       string
		fx         fixture
		wantFailed []int
		wantDetail string
	}{
		{name: "missing stamp is announced, not fatal", fx: fixture{sets: []string{"good"}}, wantDetail: "no gate stamp"},
		{name: "present stamp is checked and left in place", fx: fixture{sets: []string{"good"}, stamp: true}, wantDetail: "left in place"},
		{name: "stale record still fails with a stamp", fx: fixture{sets: []string{"good", "stale"}, stale: []string{"old-run-store-reset.json"}, stamp: true},
			wantFailed: []int{1}, wantDetail: "old-run-store-reset.json"},
		{name: "missing stamp does not hide other failures", fx: fixture{sets: []string{"good", "unfired"}}, wantFailed: []int{3}, wantDetail: "no gate stamp"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := layout(t, tc.fx)
			opts := baseOptions(dir)
			opts.Mode = Standalone
			before := listing(t, dir)
			rep, err := Verify(t.Context(), opts)
			checkReportShape(t, dir, rep, err)
			if diff := cmp.Diff(tc.wantFailed, failedPhases(rep)); diff != "" {
				t.Errorf("failed phases (-want +got):\n%s", diff)
			}
			if !strings.Contains(rep.Phases[0].Detail, tc.wantDetail) {
				t.Errorf("phase 1 detail = %q, want it to contain %q", rep.Phases[0].Detail, tc.wantDetail)
			}
			if rep.StampConsumed || rep.Mode != Standalone {
				t.Errorf("standalone: consumed = %v, mode = %v", rep.StampConsumed, rep.Mode)
			}
			if diff := cmp.Diff(before, listing(t, dir)); diff != "" {
				t.Errorf("standalone changed the directory (-before +after):\n%s", diff)
			}
		})
	}
}

func TestVerifyUnreadableDirectory(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
	}{
		{
			name: "fault is a regular file",
			setup: func(t *testing.T, dir string) {
				if err := os.WriteFile(dir, []byte("not a directory\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name: "permission denied",
			setup: func(t *testing.T, dir string) {
				if os.Geteuid() == 0 {
					t.Skip("root reads a mode-000 directory; the regular-file case covers the refusal")
				}
				if err := os.Mkdir(dir, 0o000); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = os.Chmod(dir, 0o755) })
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := faultdir.Of(t.TempDir())
			tc.setup(t, dir)
			rep, err := Verify(t.Context(), baseOptions(dir))
			if !errors.Is(err, faultdir.ErrUnreadable) || !errors.Is(err, ErrRefused) {
				t.Fatalf("err = %v, want faultdir.ErrUnreadable and ErrRefused", err)
			}
			if !strings.Contains(err.Error(), dir) {
				t.Errorf("error %q does not name %s", err, dir)
			}
			if rep == nil || rep.Certified || rep.Phases[1].OK || !strings.Contains(rep.Phases[1].Detail, dir) {
				t.Fatalf("report = %+v, want phase 2 refused naming %s", rep, dir)
			}
			if _, statErr := os.Stat(dir); statErr != nil {
				t.Errorf("the unreadable path is gone: %v", statErr)
			}
		})
	}
}

func TestVerifyMissingFaultDir(t *testing.T) {
	dir := faultdir.Of(t.TempDir())
	opts := baseOptions(dir)
	opts.Mode = Standalone
	rep, err := Verify(t.Context(), opts)
	if !errors.Is(err, ErrRefused) || errors.Is(err, faultdir.ErrUnreadable) {
		t.Fatalf("err = %v, want a refusal that is not faultdir.ErrUnreadable", err)
	}
	if diff := cmp.Diff([]int{4, 5}, failedPhases(rep)); diff != "" {
		t.Errorf("failed phases (-want +got):\n%s", diff)
	}
	if !strings.Contains(rep.Phases[1].Detail, "no fault directory") {
		t.Errorf("phase 2 detail = %q", rep.Phases[1].Detail)
	}
}

func TestVerifyBadOptions(t *testing.T) {
	okDir := faultdir.Of(t.TempDir())
	tests := []struct {
		name string
		opts Options
		want error
	}{
		{name: "no mode", opts: Options{Dir: okDir}, want: ErrInvalidOptions},
		{name: "unknown mode", opts: Options{Dir: okDir, Mode: Mode(9)}, want: ErrInvalidOptions},
		{name: "not a fault dir", opts: Options{Dir: t.TempDir(), Mode: Paired}, want: faultdir.ErrNotFaultDir},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Verify(t.Context(), tc.opts)
			if !errors.Is(err, tc.want) || rep != nil {
				t.Errorf("Verify = %v, %v; want nil report and %v", rep, err, tc.want)
			}
		})
	}
}

func TestVerifyCancelled(t *testing.T) {
	dir := layout(t, fixture{sets: []string{"good"}, stamp: true})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	rep, err := Verify(ctx, baseOptions(dir))
	if !errors.Is(err, context.Canceled) || rep != nil {
		t.Fatalf("Verify with a cancelled ctx = %v, %v; want nil, context.Canceled", rep, err)
	}
	if _, err := os.Stat(filepath.Join(dir, faultdir.StampName)); err != nil {
		t.Errorf("a cancelled verification touched the stamp: %v", err)
	}
}

func TestReportIsDeterministic(t *testing.T) {
	dir := layout(t, fixture{sets: []string{"good", "unfired", "truncated", "other-schema", "leftover-temp"}, stamp: true})
	opts := baseOptions(dir)
	opts.Mode = Standalone
	var reports [][]byte
	for _, workers := range []int{1, 3, 16} {
		opts.Workers = workers
		if _, err := Verify(t.Context(), opts); !errors.Is(err, ErrRefused) {
			t.Fatalf("workers %d: err = %v, want ErrRefused", workers, err)
		}
		data, err := os.ReadFile(filepath.Join(dir, faultdir.ReportName))
		if err != nil {
			t.Fatal(err)
		}
		reports = append(reports, data)
	}
	for i := 1; i < len(reports); i++ {
		if !bytes.Equal(reports[0], reports[i]) {
			t.Errorf("report %d differs from report 0:\n%s", i, cmp.Diff(string(reports[0]), string(reports[i])))
		}
	}
}

func TestModeText(t *testing.T) {
	for _, m := range []Mode{Paired, Standalone} {
		b, err := m.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back Mode
		if err := back.UnmarshalText(b); err != nil || back != m {
			t.Errorf("round trip of %v: %v, %v", m, back, err)
		}
	}
	if _, err := Mode(0).MarshalText(); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("marshal of the zero mode: err = %v, want ErrInvalidOptions", err)
	}
	var m Mode
	if err := m.UnmarshalText([]byte("sometimes")); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("unmarshal of an unknown mode: err = %v", err)
	}
}

// TestReusedEvidenceIsTheEarlierRunsNotThisOnes: a run whose only store
// faults came from a reused surface's certificate passes phases 4 and 5
// on that earlier evidence, says whose it is, and counts none of it as
// fired in this run; without it, the same records are refused.
func TestReusedEvidenceIsTheEarlierRunsNotThisOnes(t *testing.T) {
	dir := faultdir.Of(t.TempDir())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	stamp := func(t *testing.T, dir string) {
		if err := WriteStamp(dir, "run-now"); err != nil {
			t.Fatal(err)
		}
	}
	stamp(t, dir)
	opts := Options{Dir: dir, Mode: Paired, RecordingClasses: []string{"store"}}
	if r, _ := Verify(context.Background(), opts); r.Certified {
		t.Fatal("a run with no fault certified without reuse")
	}
	stamp(t, dir)
	opts.Reused = []ReusedEvidence{{Surface: "m.store", Class: "store", Fired: 3, RunID: "run-earlier"}}
	r, err := Verify(context.Background(), opts)
	if err != nil || !r.Certified {
		t.Fatalf("certified %v, %v; phases %+v", r.Certified, err, r.Phases)
	}
	if r.Fired != 0 || r.ByClass["store"].Fired != 0 {
		t.Errorf("fired %d, store %d: the reused faults were counted as this run's", r.Fired, r.ByClass["store"].Fired)
	}
	if !strings.Contains(r.Phases[3].Detail, "run-earlier") || !strings.Contains(r.Phases[4].Detail, "earlier certified runs of reused surfaces: store 3") {
		t.Errorf("phases 4 and 5 do not say whose evidence it is: %q, %q", r.Phases[3].Detail, r.Phases[4].Detail)
	}
}
