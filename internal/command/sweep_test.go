package command

import (
	"context"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/contested/contested/internal/faultlayer"
	"github.com/contested/contested/internal/faultlayer/faulttest"
	"github.com/contested/contested/internal/faultlayer/levers"
	"github.com/contested/contested/internal/fixture"
	"github.com/contested/contested/internal/reap"
)

// TestSweepReclaimsTheWarmLayersVictimsOfGoneRuns: a victim database a
// run whose process is gone left on the warm layer (as SIGKILL mid-battery
// leaves it) is dropped, with its role, by the next sweep, which names it;
// the victim of a live process stays.
func TestSweepReclaimsTheWarmLayersVictimsOfGoneRuns(t *testing.T) {
	faulttest.Containers(t)
	env, err := fixture.PrivateCache(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	t.Cleanup(func() { faultlayer.WarmDown(context.Background(), io.Discard) })
	if _, _, err := faultlayer.WarmUp(ctx, faultlayer.ConfigFor(faultlayer.Auto)); err != nil {
		t.Fatal(err)
	}
	pool, _, err := faultlayer.WarmTestPlane(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	a, err := levers.NewPgFaultArmer(ctx, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	abandoned, err := a.CreateVictim(ctx, "TestKilled")
	if err != nil {
		t.Fatal(err)
	}
	live, err := a.CreateVictim(ctx, "TestRunning")
	if err != nil {
		t.Fatal(err)
	}
	defer a.DropVictim(context.Background(), live)
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	gone := reap.Self()
	gone.PID, gone.Start = exited.Process.Pid, 1
	if _, err := pool.Exec(ctx, `UPDATE contested_harness_databases SET owner = $1 WHERE name = $2`, gone.String(), abandoned.Database()); err != nil {
		t.Fatal(err)
	}

	var out strings.Builder
	if err := Sweep(ctx, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "dropped 1 victim databases") || !strings.Contains(out.String(), abandoned.Database()) {
		t.Errorf("the sweep did not say it dropped %s:\n%s", abandoned.Database(), out.String())
	}
	for _, tt := range []struct {
		v     *levers.Victim
		there bool
	}{{abandoned, false}, {live, true}} {
		var db, role bool
		pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, tt.v.Database()).Scan(&db)
		pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)`, tt.v.Role()).Scan(&role)
		if db != tt.there || role != tt.there {
			t.Errorf("%s: database there %v, role there %v; want %v", tt.v.Database(), db, role, tt.there)
		}
	}
}
