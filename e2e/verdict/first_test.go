package verdict

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contested/contested/e2e/internal/e2etest"
)

// firstRED is validate.json as the first verdict writes it.
type firstRED struct {
	Green             bool          `json:"green"`
	Confirming        bool          `json:"confirming"`
	FirstVerdictAfter time.Duration `json:"first_verdict_after_ns"`
	Unconfirmed       []string      `json:"unconfirmed"`
	BatteryFailures   []struct {
		Test       string `json:"test"`
		Owner      string `json:"owner"`
		Replay     string `json:"replay"`
		Confirming bool   `json:"confirming"`
	} `json:"battery_failures"`
}

// stopAtFirstRED runs validate of the adopter with its planted defect, as a
// GitHub Actions step, and sends sig to its process group the moment it
// has given its first RED, before the ladder confirms it. It returns the
// exit code, the output, validate.json and the job's summary.
func stopAtFirstRED(t *testing.T, sig syscall.Signal) (int, string, firstRED, string) {
	t.Helper()
	dir := e2etest.Adopter(t, nil)
	cmd := exec.Command(e2etest.Targets(t), "validate")
	cmd.Dir = dir
	summary := filepath.Join(t.TempDir(), "step_summary")
	if err := os.WriteFile(summary, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(e2etest.LayerEnv(t), "CI=", "GOFLAGS=-tags=adopter_defect", "GITHUB_ACTIONS=true", "GITHUB_STEP_SUMMARY="+summary)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	deadline := time.AfterFunc(10*time.Minute, func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	defer deadline.Stop()
	done := make(chan error, 1)
	go func() { err := cmd.Wait(); pw.Close(); done <- err }()
	var b strings.Builder
	lines := bufio.NewScanner(pr)
	signalled := false
	for lines.Scan() {
		b.WriteString(lines.Text() + "\n")
		if !signalled && strings.Contains(lines.Text(), "the ladder confirms each owner next") {
			syscall.Kill(-cmd.Process.Pid, sig)
			signalled = true
		}
	}
	err := <-done
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	if !signalled {
		t.Fatalf("validate never gave a first RED:\n%s", b.String())
	}
	var r firstRED
	e2etest.ReadJSON(t, filepath.Join(dir, "test-results", "validate.json"), &r)
	md, _ := os.ReadFile(summary)
	return cmd.ProcessState.ExitCode(), b.String(), r, string(md)
}

// TestAJobKilledWhileTheLadderConfirmsKeepsItsRED: a CI job's timeout
// kills validate (SIGKILL to the group) the moment it gave its first RED:
// validate.json and the job's summary hold that RED, each failure with its
// likely owner and replay, marked confirming (or, when the worker outlived
// the kill long enough to end the walk it had begun, unconfirmed); nothing
// says GREEN.
func TestAJobKilledWhileTheLadderConfirmsKeepsItsRED(t *testing.T) {
	t.Parallel()
	code, out, r, summary := stopAtFirstRED(t, syscall.SIGKILL)
	if code == 0 {
		t.Errorf("killed, it exited 0")
	}
	if r.Green || !r.Confirming && len(r.Unconfirmed) != 1 || len(r.BatteryFailures) != 1 {
		t.Fatalf("validate.json: green %v, confirming %v, unconfirmed %v, %d failures; want RED, the failing leg confirming or unconfirmed:\n%s", r.Green, r.Confirming, r.Unconfirmed, len(r.BatteryFailures), out)
	}
	f := r.BatteryFailures[0]
	if f.Test != "TestStockContract/burst" || !strings.HasPrefix(f.Owner, "component (stock-team)") || !strings.Contains(f.Replay, "CONTESTED_SEED=") {
		t.Errorf("the failure %+v; want the burst leg, likely owner component (stock-team), confirming, with its seed's replay", f)
	}
	if r.FirstVerdictAfter > 5*time.Second {
		t.Errorf("the first verdict came %s after the battery, want at most 5s", r.FirstVerdictAfter)
	}
	if !strings.Contains(summary, "### contested validate: RED (confirming)") || !strings.Contains(summary, "TestStockContract/burst") || strings.Contains(summary, "validate: GREEN") {
		t.Errorf("the job's summary:\n%s\nwant the RED, confirming, with the failing leg", summary)
	}
	if r.Confirming && strings.Contains(out, "::error") {
		t.Errorf("annotations were written before the ladder confirmed:\n%s", out)
	}
}

// TestCtrlCWhileTheLadderConfirmsEndsRED: Ctrl-C the moment the first RED
// is given ends validate RED (exit 1): its validate.json is RED, and any
// failure the ladder did not finish is listed as unconfirmed.
func TestCtrlCWhileTheLadderConfirmsEndsRED(t *testing.T) {
	t.Parallel()
	code, out, r, _ := stopAtFirstRED(t, syscall.SIGINT)
	if code != 1 || r.Green {
		t.Fatalf("exit %d, green %v; want 1 and RED:\n%s", code, r.Green, out)
	}
	if r.Confirming && len(r.BatteryFailures) == 0 {
		t.Errorf("validate.json says confirming with no failure:\n%s", out)
	}
	if !r.Confirming && len(r.Unconfirmed) == 0 && !strings.Contains(out, "owner component (stock-team); FAIL-reproducible") {
		t.Errorf("the run neither kept its first RED nor confirmed it:\n%s", out)
	}
}
