package command

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contested/contested/internal/faultlayer"
	"github.com/contested/contested/internal/interrupt"
	"github.com/contested/contested/internal/reexec"
	"github.com/contested/contested/internal/workflowtest"
)

// TestMain lets this test binary be a worker of the targets below (Serve
// returns at once in any other process) and the supervisor that starts
// one (the role supervise-hang).
func TestMain(m *testing.M) {
	// hang is a target that never looks at its context, as a read
	// blocked on a FIFO would not.
	jobs["hang"] = func(context.Context, []byte, io.Writer) error {
		fmt.Printf("ready %d\n", os.Getpid())
		select {}
	}
	Serve()
	reexec.Main(reexec.Roles{
		"supervise-hang": func() int {
			if err := Supervise(context.Background(), "hang", nil); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 9
			}
			return 0
		},
	})
	os.Exit(m.Run())
}

// TestASecondSignalEndsTheRunAndSaysSo: a worker forced out by a second
// SIGINT reports its exit code to its supervisor, so the run exits 1
// without the supervisor's "internal error: ... reported """, and under
// GitHub Actions the job's summary and one annotation say it was stopped.
func TestASecondSignalEndsTheRunAndSaysSo(t *testing.T) {
	summary := filepath.Join(t.TempDir(), "summary.md")
	if err := os.WriteFile(summary, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := reexec.Command(t, "supervise-hang", "GITHUB_ACTIONS=true", "GITHUB_STEP_SUMMARY="+summary)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	r := bufio.NewReader(out)
	var log strings.Builder
	var worker int
	for worker == 0 {
		line, err := r.ReadString('\n')
		log.WriteString(line)
		if err != nil {
			t.Fatalf("the worker never said ready: %v\nstdout:\n%s\nstderr:\n%s", err, log.String(), stderr.String())
		}
		fmt.Sscanf(line, "ready %d", &worker)
	}
	t.Cleanup(func() { syscall.Kill(-worker, syscall.SIGKILL) })
	cmd.Process.Signal(syscall.SIGINT)
	time.Sleep(2 * interrupt.Repeat)
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the run did not end within a minute of the second SIGINT")
	}
	cmd.Wait()
	got := stderr.String()
	if code := cmd.ProcessState.ExitCode(); code != interrupt.ExitForced {
		t.Errorf("exit %d, want %d:\n%s", code, interrupt.ExitForced, got)
	}
	for _, bad := range []string{"internal error", "reported"} {
		if strings.Contains(got, bad) {
			t.Errorf("stderr says %q:\n%s", bad, got)
		}
	}
	if !strings.Contains(got, "a second signal (SIGINT)") {
		t.Errorf("stderr does not say the run was forced by a second SIGINT:\n%s", got)
	}
	b, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); strings.Count(s, "### contested hang: STOPPED") != 1 || !strings.Contains(s, "exit 1") || !strings.Contains(s, "SIGINT") {
		t.Errorf("the job's summary does not say once that the run was stopped by a second SIGINT:\n%s", s)
	}
	var errs []workflowtest.Command
	for _, c := range workflowtest.Commands(log.String()) {
		if c.Name == "error" {
			errs = append(errs, c)
		}
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Data, "STOPPED") {
		t.Errorf("the runner reads %+v, want one ::error saying STOPPED; stdout:\n%s", errs, log.String())
	}
}

// TestALayerRefusedAtBringUpKeepsItsRepairs: a layer whose preflight
// refuses it before anything is created (an external layer that does not
// answer) keeps each failed check with its fix, for the CI's summary of a
// run that cannot run, as a preflight after bring-up does.
func TestALayerRefusedAtBringUpKeepsItsRepairs(t *testing.T) {
	defer cannotRun.Store(nil)
	p := faultlayer.Preflight{Checks: []faultlayer.Check{
		{Name: "postgres", OK: true, Detail: "answers"},
		{Name: "toxiproxy /version", Detail: "does not answer", Fix: "point CONTESTED_TOXIPROXY_URL at a running Toxiproxy"},
	}}
	reportUpError(io.Discard, fmt.Errorf("bring up: %w", &faultlayer.PreflightError{Preflight: p}))
	want := []string{"toxiproxy /version: does not answer; point CONTESTED_TOXIPROXY_URL at a running Toxiproxy"}
	if got := cannotRunRepair(); !slices.Equal(got, want) {
		t.Errorf("the repairs kept are %q, want %q", got, want)
	}
}
