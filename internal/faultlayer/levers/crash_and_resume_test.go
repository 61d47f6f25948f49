package levers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/contested/contested/internal/reexec"
)

// TestCrashAndResume: a working worker is killed by SIGKILL (its exit
// status read back) and, healed, a new generation finishes the remainder:
// it fired. A worker that had already finished cannot be killed mid-work:
// not in place. On a cluster it kills one replica mid-stream, which works
// again after its restart.
func TestCrashAndResume(t *testing.T) {
	ctx := context.Background()
	t.Run("fires", func(t *testing.T) {
		gen := 0
		w := NewWorker(t, func() *exec.Cmd {
			gen++
			if gen == 1 {
				return reexec.Command(t, "worker")
			}
			return reexec.Command(t, "worker", "WORKER_FINISH=1")
		})
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
		time.Sleep(200 * time.Millisecond)
		f := arm(t, CrashAndResume, Target{Process: w})
		in, what := f.Injector()
		if !in || !strings.HasPrefix(what, "worker killed mid-work: pid ") || !strings.Contains(what, "signal: killed") {
			t.Fatalf("injector: %v %q", in, what)
		}
		if err := f.Heal(ctx); err != nil {
			t.Fatal(err)
		}
		resumed := 0
		if err := w.Wait(ctx); err == nil {
			resumed++ // the new generation finished the remainder
		}
		if err := CrashAndResume.Fired(Proof{Injected: in, Victim: resumed}); err != nil {
			t.Fatalf("did not fire: %v", err)
		}
	})
	t.Run("a worker that already finished is not in place", func(t *testing.T) {
		w := NewWorker(t, func() *exec.Cmd { return reexec.Command(t, "worker", "WORKER_FINISH=1") })
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		w.Wait(ctx)
		f, err := CrashAndResume.Arm(ctx, Target{Process: w})
		if err == nil || !strings.Contains(err.Error(), "before it could be killed mid-work") {
			t.Fatalf("Arm on a finished worker: %v", err)
		}
		in, _ := f.Injector()
		if err := CrashAndResume.Fired(Proof{Injected: in, Victim: 1}); !errors.Is(err, ErrNotInPlace) {
			t.Fatalf("Fired = %v, want ErrNotInPlace", err)
		}
		w.Stop()
	})
	t.Run("one replica of a cluster", func(t *testing.T) {
		c := newTestCluster(t, 2)
		f := arm(t, CrashAndResume, Target{Cluster: c, Replica: 0, Pending: 50})
		if in, what := f.Injector(); !in || strings.Count(what, "SIGKILL: ") != 1 {
			t.Fatalf("injector: %v %q", in, what)
		}
		if c.workers[0].Running() || !c.workers[1].Running() {
			t.Fatal("the kill did not take replica-1, and only it")
		}
		time.Sleep(300 * time.Millisecond)
		victim, err := judge(t, CrashAndResume, c, f)
		if err != nil {
			t.Fatalf("did not fire: %v (%s)", err, victim)
		}
		if !strings.HasPrefix(victim, "killed with 50 items still to come; replica-1 acknowledged ") {
			t.Errorf("victim: %q", victim)
		}
	})
	t.Run("a replica judged before its restart did not resume", func(t *testing.T) {
		c := newTestCluster(t, 2)
		f := arm(t, CrashAndResume, Target{Cluster: c, Replica: 0, Pending: 50})
		time.Sleep(300 * time.Millisecond)
		landed, victim := f.(Judged).Victim(ctx)
		if landed || !strings.HasSuffix(victim, "it was never restarted") {
			t.Fatalf("Victim before Heal = %v, %q; want not landed: never restarted", landed, victim)
		}
	})
}

// checkTable: the levels table's crash-and-resume row, a restart 0-150ms
// after the kill, which is the window's hold.
func (p CrashParams) checkTable(t *testing.T, seed int64, w Window) {
	t.Helper()
	if p.Restart < 0 || p.Restart > 150*time.Millisecond || w.For != p.Restart || w.Hold != 0 {
		t.Errorf("seed %d: crash window %s does not restart 0-150ms later", seed, w)
	}
}

// outputLog is a Logger with an Output writer, as testing.TB has: what
// the worker's lines are written to.
type outputLog struct {
	out    strings.Builder
	logged []string
}

func (o *outputLog) Log(args ...any)   { o.logged = append(o.logged, fmt.Sprint(args...)) }
func (o *outputLog) Output() io.Writer { return &o.out }

// TestAWorkersLinesKeepItsOwnFileAndLine: a worker's line keeps the file
// and line the worker printed (after the log package's date and time when
// it printed them), first, as a test's own log line shows its own; a line
// without one shows no location at all, never this package's; a line cut
// in two writes is one line, and a last line without its newline is
// logged when the process ends.
func TestAWorkersLinesKeepItsOwnFileAndLine(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		want   string
	}{
		{"the log package with Lshortfile", []string{"jobs.go:45: claimed job 7\n"}, "jobs.go:45: worker#1: claimed job 7\n"},
		{"after a date and a time", []string{"2026/12/04 10:15:00 worker/run.go:12: started\n"}, "worker/run.go:12: worker#1: started\n"},
		{"after microseconds", []string{"2026/12/04 10:15:00.123456 run.go:9: started\n"}, "run.go:9: worker#1: started\n"},
		{"no location", []string{"no location here\n"}, "worker#1: no location here\n"},
		{"a line in two writes", []string{"jobs.go:1: one ", "line\n"}, "jobs.go:1: worker#1: one line\n"},
		{"no final newline", []string{"last words"}, "worker#1: last words\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &outputLog{}
			w := &logWriter{log: o, prefix: "worker#1: "}
			for _, s := range tc.writes {
				w.Write([]byte(s))
			}
			w.flush()
			if got := o.out.String(); got != tc.want || len(o.logged) > 0 {
				t.Errorf("written %q (and logged %q), want %q", got, o.logged, tc.want)
			}
		})
	}
	t.Run("a logger without Output logs with the prefix", func(t *testing.T) {
		l := &plainLog{}
		w := &logWriter{log: l, prefix: "worker#2: "}
		w.Write([]byte("jobs.go:3: hello\n"))
		if len(l.logged) != 1 || l.logged[0] != "worker#2: jobs.go:3: hello" {
			t.Errorf("logged %q", l.logged)
		}
	})
}

type plainLog struct{ logged []string }

func (p *plainLog) Log(args ...any) { p.logged = append(p.logged, fmt.Sprint(args...)) }
