package command

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contested/contested/internal/degraded"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/faultlayer"
)

// TestValidateWaitsForADegradedStageAndRestoresItsOverlay: while a degraded
// stage holds the stage lock, validate waits and touches no layer; once
// the lock is free, validate restores what a crashed stage left (here its
// layer is down, so the marker is cleared) before it brings a layer up.
func TestValidateWaitsForADegradedStageAndRestoresItsOverlay(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := module(t)
	dead := deadAddr(t)
	t.Setenv(envvar.Layer, "")
	t.Setenv(envvar.ToxiproxyURL, "http://"+dead)
	t.Setenv(envvar.PostgresDSN, "postgres://u:p@"+dead+"/db")
	t.Setenv(envvar.ResultsDir, "")
	t.Setenv(envvar.Surfaces, "")

	unlock, err := faultlayer.HoldStage(context.Background(), "a stage", nil)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	err = Validate(ctx, ValidateOptions{Dir: dir, Out: &out})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("validate while a stage holds the lock: %v, want it to wait until its deadline; output:\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "waiting for it to finish") || strings.Contains(out.String(), "fault-preflight") {
		t.Errorf("validate did not wait before the layer:\n%s", out.String())
	}
	unlock()

	results := filepath.Join(dir, "test-results")
	marker := degraded.MarkerPath(results)
	if err := os.MkdirAll(filepath.Dir(marker), 0o755); err != nil {
		t.Fatal(err)
	}
	body := `{"schema":"` + degraded.MarkerSchema + `","run_id":"crashed","toxiproxy_url":"http://` + dead + `","proxies":["contested-degraded-20001"]}`
	if err := os.WriteFile(marker, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	err = Validate(context.Background(), ValidateOptions{Dir: dir, Out: &out})
	if got := ExitCode(err); got != ExitCannotRun {
		t.Fatalf("exit %d (%v), want %d from the dead layer; output:\n%s", got, err, ExitCannotRun, out.String())
	}
	if !strings.Contains(out.String(), "marker cleared") {
		t.Errorf("validate did not restore the crashed stage's overlay:\n%s", out.String())
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the marker survived validate's restore: %v", err)
	}
}
