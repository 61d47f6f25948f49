package command

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/gate/flakes"
	"github.com/contested/contested/internal/rundir"
)

// TestHistoryReadsWhatItCanSaysWhatItSkippedAndNeverWaits: a history
// holding a line over the line cap still draws the other runs' trend and
// says what it skipped; a test name holding an escape sequence or a
// newline prints escaped; a FIFO in the history's place is refused at
// once, by history and by the report's and the ladder's readers.
func TestHistoryReadsWhatItCanSaysWhatItSkippedAndNeverWaits(t *testing.T) {
	dir := module(t)
	t.Setenv(envvar.Surfaces, "")
	t.Run("a line over the cap and a hostile name", func(t *testing.T) {
		results := t.TempDir()
		t.Setenv(envvar.ResultsDir, results)
		var out strings.Builder
		for i, verdict := range []string{"pass", "fail", "fail"} {
			res := &battery.Result{Tests: []battery.Test{{Package: "m", Name: "TestLeg", Action: verdict}, {Package: "m", Name: "TestEvil\x1b[2J\nok  \tfake", Action: "fail"}}}
			appendHistory(context.Background(), rundir.Dir(results), nil, "validate", fmt.Sprintf("run-%d", i), "", res, []faultrecord.Record{}, flakes.Revision{Commit: "c"}, &out)
			if i == 0 {
				f, err := os.OpenFile(filepath.Join(results, flakes.FileName), os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				f.WriteString(strings.Repeat("x", 2<<20) + "\n")
				f.Close()
			}
		}
		out.Reset()
		if err := History(context.Background(), HistoryOptions{Dir: dir, Out: &out}); err != nil {
			t.Fatalf("history: %v\n%s", err, out.String())
		}
		for _, want := range []string{"TestLeg failed 2 of the last 3 runs", "skipped 1 lines over the 1 MiB line cap", `TestEvil\x1b[2J\nok  \tfake`} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("history does not say %q:\n%s", want, out.String())
			}
		}
		if strings.ContainsAny(out.String(), "\x1b\r") || strings.Contains(out.String(), "\nok  ") {
			t.Errorf("history printed a name raw:\n%q", out.String())
		}
		if got := reportHistory(context.Background(), rundir.Dir(results), nil, &out); len(got) == 0 {
			t.Errorf("the report draws no trend from a history with one bad line:\n%s", out.String())
		}
	})
	t.Run("a FIFO", func(t *testing.T) {
		results := t.TempDir()
		t.Setenv(envvar.ResultsDir, results)
		os.MkdirAll(filepath.Join(results, "history"), 0o755)
		if err := syscall.Mkfifo(filepath.Join(results, flakes.FileName), 0o644); err != nil {
			t.Fatal(err)
		}
		done := make(chan string, 1)
		go func() {
			var out strings.Builder
			err := History(context.Background(), HistoryOptions{Dir: dir, Out: &out})
			reportHistory(context.Background(), rundir.Dir(results), nil, &out)
			readHistory(context.Background(), rundir.Dir(results), nil, &out)
			appendHistory(context.Background(), rundir.Dir(results), nil, "validate", "run", "", &battery.Result{Tests: []battery.Test{{Package: "m", Name: "TestLeg", Action: "pass"}}}, nil, flakes.Revision{Commit: "c"}, &out)
			done <- fmt.Sprint(err) + "\n" + out.String()
		}()
		select {
		case got := <-done:
			if strings.Count(got, "FIFO") < 4 {
				t.Errorf("history, the report, the ladder and the append did not each refuse the FIFO:\n%s", got)
			}
		case <-time.After(time.Minute):
			t.Fatal("a FIFO as the history hung the readers")
		}
	})
}
