package verdict

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contested/contested/e2e/internal/e2etest"
	"github.com/contested/contested/internal/gate/flakes"
)

// TestArbitrateReadsTheFlakeHistory: with a history in which the adopter's
// TestStockReport failed 3 of its last 20 runs, each at a commit it also
// passed at (four runs a commit), so flaky, arbitrate prints the trend
// (the rate, the first failing commit); the test passes every rerun and
// there is no validate run it failed in, so there is nothing to arbitrate
// (exit 0), whatever the history says, which the outcome gives as context.
func TestArbitrateReadsTheFlakeHistory(t *testing.T) {
	t.Parallel()
	dir := e2etest.Adopter(t, nil)
	var outs []flakes.Outcome
	for i := range 20 {
		verdict := "pass"
		if i == 5 || i == 11 || i == 18 {
			verdict = "fail"
		}
		outs = append(outs, flakes.Outcome{Time: time.Unix(int64(1_800_000_000+i), 0), RunID: fmt.Sprintf("run-%02d", i),
			Commit: fmt.Sprintf("%040d", i/4), Command: "validate", Package: "example.com/adopter", Test: "TestStockReport", Verdict: verdict})
	}
	if err := flakes.NewFile(filepath.Join(dir, "test-results")).Append(context.Background(), outs); err != nil {
		t.Fatal(err)
	}
	out, code := e2etest.Mage(t, dir, nil, "history", "TestStockReport")
	if code != 0 || !strings.Contains(out, "TestStockReport failed 3 of the last 20 runs (15%): flaky") || !strings.Contains(out, "run-05 on commit 000000000000") {
		t.Fatalf("history: exit %d:\n%s", code, out)
	}
	out, code = e2etest.Mage(t, dir, nil, "arbitrate", "TestStockReport")
	for _, want := range []string{
		"TestStockReport failed 3 of the last 20 runs (15%): flaky",
		"failed 0 of 2 reruns alone (passes)",
		"NO FAILURE",
		"for context, the flake history: it failed in 3 of its last 20 runs (first failing run run-05",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("arbitrate does not say %q:\n%s", want, out)
		}
	}
	if code != 0 || strings.Contains(out, "flaky battery") {
		t.Errorf("arbitrate: exit %d; want 0, the history no vote:\n%s", code, out)
	}
}
