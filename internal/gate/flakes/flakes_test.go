package flakes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/battery"
)

// runs makes the outcomes of n runs of TestC (with its burst leg) in
// which the runs in failing fail on the leg with seed 100+run.
// runs are n runs of TestC, each at a commit of its own (cNN): the code
// changed between every two of them. The failing ones fail TestC and its
// leg burst.
func runs(n int, failing ...int) []Outcome {
	return runsAt(func(i int) string { return fmt.Sprintf("c%02d", i) }, n, failing...)
}

// sameCode are runs, every one of them at commit c00.
func sameCode(n int, failing ...int) []Outcome {
	return runsAt(func(int) string { return "c00" }, n, failing...)
}

// runsAt are runs, run i at commit(i) ("": a run outside git).
func runsAt(commit func(i int) string, n int, failing ...int) []Outcome {
	var out []Outcome
	for i := range n {
		verdict := "pass"
		for _, f := range failing {
			if f == i {
				verdict = "fail"
			}
		}
		meta := Meta{RunID: fmt.Sprintf("run-%02d", i), Commit: commit(i), Command: "validate", Time: time.Unix(int64(i), 0)}
		res := &battery.Result{Tests: []battery.Test{
			{Package: "m", Name: "TestC", Action: verdict},
			{Package: "m", Name: "TestC/burst", Action: verdict},
			{Package: "m", Name: "TestC/reset", Action: "pass"},
			{Package: "m", Name: "TestOther", Action: "pass"},
		}}
		recs := []faultrecord.Record{
			{Package: "m", Test: "TestC/burst", Leg: "burst", Seed: int64(100 + i)},
			{Package: "m", Test: "TestC/reset", Leg: "reset", Seed: int64(200 + i)},
		}
		out = append(out, FromBattery(res, recs, meta)...)
	}
	return out
}

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		name        string
		outs        []Outcome
		test        string
		last        int
		runs, fails int
		first       string
		burstSeeds  []int64
		flaky       bool
	}{
		{"3 of 20 failed at the commit they passed at is flaky", sameCode(20, 4, 9, 17), "TestC", 20, 20, 3, "c00", []int64{104, 109, 117}, true},
		{"3 of 20 failed, each at a commit no other run ran, is not flaky", runs(20, 4, 9, 17), "TestC", 20, 20, 3, "c04", []int64{104, 109, 117}, false},
		{"the last 10 of them", sameCode(20, 4, 9, 17), "TestC", 10, 10, 1, "c00", []int64{117}, true},
		{"package-qualified id", sameCode(5, 2), "m.TestC", 0, 5, 1, "c00", []int64{102}, true},
		{"failed at one revision and passed at the next is not flaky", twoRevisions(), "TestC", 0, 4, 2, "c00", []int64{100, 101}, false},
		{"never failed", runs(4), "TestC", 0, 4, 0, "", []int64{}, false},
		{"failed every run", runs(3, 0, 1, 2), "TestC", 0, 3, 3, "c00", []int64{100, 101, 102}, false},
		{"another package", runs(3, 1), "other.TestC", 0, 0, 0, "", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Summarize(tc.outs, tc.test, tc.last)
			if len(s.Runs) != tc.runs || s.Failed != tc.fails || s.Flaky() != tc.flaky {
				t.Fatalf("runs %d failed %d flaky %v; want %d, %d, %v", len(s.Runs), s.Failed, s.Flaky(), tc.runs, tc.fails, tc.flaky)
			}
			if (s.FirstFailure == nil) != (tc.first == "") || s.FirstFailure != nil && s.FirstFailure.Commit != tc.first {
				t.Errorf("first failure %+v; want commit %q", s.FirstFailure, tc.first)
			}
			if tc.runs == 0 {
				return
			}
			if len(s.Legs) != 2 || s.Legs[0].Leg != "burst" || s.Legs[0].Failed != tc.fails || s.Legs[1].Failed != 0 {
				t.Fatalf("legs %+v; want burst failing %d times, reset never", s.Legs, tc.fails)
			}
			if fmt.Sprint(s.Legs[0].Seeds) != fmt.Sprint(tc.burstSeeds) {
				t.Errorf("burst's failing seeds %v; want %v", s.Legs[0].Seeds, tc.burstSeeds)
			}
		})
	}
}

// twoRevisions: TestC failed both runs at commit c00, and passed both at
// c01, the fix.
func twoRevisions() []Outcome {
	return runsAt(func(i int) string { return []string{"c00", "c00", "c01", "c01"}[i] }, 4, 0, 1)
}

// TestOnlyOutcomesAtTheSameCodeAreFlaky: a test is flaky where it both
// failed and passed at one revision (one commit, the same uncommitted
// changes, as the record keeps them), or within one run; failing at one
// revision and passing at another is the code changing, and runs whose
// record keeps no commit are the same code as no other run.
func TestOnlyOutcomesAtTheSameCodeAreFlaky(t *testing.T) {
	withRerun := append(runs(2, 1), Outcome{Schema: Schema, RunID: "run-01", Commit: "c01", Package: "m", Test: "TestC", Verdict: "pass"})
	// run-00 failed on c00 with changes d1; the runs after it passed with d2.
	dirty := runs(3, 0)
	for i := range dirty {
		diff := "d2"
		if dirty[i].RunID == "run-00" {
			diff = "d1"
		}
		dirty[i].Commit, dirty[i].Dirty, dirty[i].Diff = "c00", true, diff
	}
	for _, tc := range []struct {
		name string
		outs []Outcome
		want []string
	}{
		{"a failure at one commit and a pass at another are not flaky", twoRevisions(), nil},
		{"a failure and a pass at one commit are flaky", sameCode(4, 1), []string{"commit c00"}},
		{"a failure and a pass within one run are flaky", withRerun, []string{"commit c01"}},
		{"the same commit with other uncommitted changes is other code", dirty, nil},
		{"runs whose record keeps no commit are never the same code", runsAt(func(int) string { return "" }, 4, 1), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Summarize(tc.outs, "TestC", 0)
			if fmt.Sprint(s.FlakyAt) != fmt.Sprint(tc.want) || s.Flaky() != (len(tc.want) > 0) {
				t.Errorf("flaky at %q (Flaky %v); want %q", s.FlakyAt, s.Flaky(), tc.want)
			}
		})
	}
}

func TestSummaryWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		outs []Outcome
		says []string
	}{
		{"failures and passes at one commit read flaky", sameCode(4, 1, 3),
			[]string{"failed 2 of the last 4 runs (50%): flaky (failed and passed at commit c00)", "commit c00", "leg burst", "seeds that failed: 101, 103", "trend (oldest first): .F.F"}},
		{"failures at one commit and passes at another read not flaky", twoRevisions(),
			[]string{"failed 2 of the last 4 runs (50%): not flaky: it never both failed and passed at the same code", "trend (oldest first): FF.."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			Summarize(tc.outs, "TestC", 0).Write(&b)
			for _, want := range tc.says {
				if !strings.Contains(b.String(), want) {
					t.Errorf("summary does not say %q:\n%s", want, b.String())
				}
			}
		})
	}
}

// Concurrent writers never interleave lines, and a line a killed writer
// left unfinished is skipped and counted.
func TestFileConcurrentAppend(t *testing.T) {
	f := NewFile(t.TempDir())
	const writers, batches = 8, 20
	batch := runs(3)
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for range batches {
				if err := f.Append(context.Background(), batch); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	fd, err := os.OpenFile(f.Path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	fd.WriteString(`{"schema":"contested/outcome@1","run_id":"torn","te`)
	fd.Close()
	got, err := f.Read(context.Background())
	var partial *PartialError
	if !errors.As(err, &partial) || partial.Unreadable != 1 || len(got) != writers*batches*len(batch) {
		t.Fatalf("read %d outcomes, %v; want %d and the torn line skipped and counted", len(got), err, writers*batches*len(batch))
	}
	if s := Summarize(got, "TestC", 0); len(s.Runs) != 3 {
		t.Errorf("%d runs; want 3", len(s.Runs))
	}
}

func TestFileMissingIsEmpty(t *testing.T) {
	got, err := NewFile(t.TempDir()).Read(context.Background())
	if got != nil || err != nil {
		t.Fatalf("%v, %v", got, err)
	}
}

// siblings are runs of TestX with two legs and a plain subtest: in run 1
// only crash-and-resume failed, in run 3 only the plain subtest did, in
// run 4 only disconnect.
func siblings() []Outcome {
	var out []Outcome
	for i := range 6 {
		v := func(fails int) string {
			if i == fails {
				return "fail"
			}
			return "pass"
		}
		parent := "pass"
		if i == 1 || i == 3 || i == 4 {
			parent = "fail"
		}
		meta := Meta{RunID: fmt.Sprintf("run-%d", i), Commit: fmt.Sprintf("c%d", i), Command: "validate", Time: time.Unix(int64(i), 0)}
		res := &battery.Result{Tests: []battery.Test{
			{Package: "m", Name: "TestX", Action: parent},
			{Package: "m", Name: "TestX/crash-and-resume", Action: v(1)},
			{Package: "m", Name: "TestX/disconnect", Action: v(4)},
			{Package: "m", Name: "TestX/setup", Action: v(3)},
		}}
		recs := []faultrecord.Record{
			{Package: "m", Test: "TestX/crash-and-resume", Leg: "crash-and-resume", Seed: int64(10 + i)},
			{Package: "m", Test: "TestX/disconnect", Leg: "disconnect", Seed: int64(20 + i)},
		}
		out = append(out, FromBattery(res, recs, meta)...)
	}
	return out
}

// TestAFailureOfOneLegNeverCountsAgainstItsSibling: a leg's history holds
// its own failures only, never its sibling's nor its parent's; a subtest
// that is no leg has its own history too; the parent's holds every run in
// which it or any of its subtests failed, and each leg's count beside it.
func TestAFailureOfOneLegNeverCountsAgainstItsSibling(t *testing.T) {
	outs := siblings()
	for _, tc := range []struct {
		test   string
		failed int
		first  string
	}{
		{"TestX/disconnect", 1, "run-4"},
		{"m.TestX/crash-and-resume", 1, "run-1"},
		{"TestX/setup", 1, "run-3"},
		{"TestX", 3, "run-1"},
	} {
		t.Run(tc.test, func(t *testing.T) {
			s := Summarize(outs, tc.test, 0)
			if len(s.Runs) != 6 || s.Failed != tc.failed || s.FirstFailure == nil || s.FirstFailure.RunID != tc.first {
				t.Fatalf("runs %d, failed %d, first %+v; want 6, %d, %s", len(s.Runs), s.Failed, s.FirstFailure, tc.failed, tc.first)
			}
		})
	}
	s := Summarize(outs, "TestX", 0)
	if len(s.Legs) != 2 || s.Legs[0].Leg != "crash-and-resume" || s.Legs[0].Failed != 1 || fmt.Sprint(s.Legs[0].Seeds) != "[11]" ||
		s.Legs[1].Leg != "disconnect" || s.Legs[1].Failed != 1 || fmt.Sprint(s.Legs[1].Seeds) != "[24]" {
		t.Errorf("the parent's legs %+v; want each failing once, with its own seed", s.Legs)
	}
	var b bytes.Buffer
	Summarize(outs, "TestX/disconnect", 0).Write(&b)
	if !strings.Contains(b.String(), "TestX/disconnect failed 1 of the last 6 runs") || !strings.Contains(b.String(), "run-4") || strings.Contains(b.String(), "run-1") {
		t.Errorf("the disconnect leg's history names another leg's failure:\n%s", b.String())
	}
}
