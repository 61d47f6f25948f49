package hostevents

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/contested/contested/internal/dockerenv"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/reap"
)

// TestAnotherRunsSweepIsInterferenceAndOurOwnIsNot: on a real engine, a
// container of this run removed by another run's sweep is interference,
// named with the container and the sweeping run; one removed by a sweep
// of this run itself is not.
func TestAnotherRunsSweepIsInterferenceAndOurOwnIsNot(t *testing.T) {
	cli := dockerenv.Require(t)
	reap.JournalDir = t.TempDir()
	ctx := context.Background()
	run := fmt.Sprintf("hostevents-%d", time.Now().UnixNano())
	create := func(name, role string) {
		t.Helper()
		labels := reap.Labels(run, role)
		_, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{Name: name,
			Config: &container.Config{Image: "contested.local/toxiproxy:2.12.0", Labels: labels}})
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		t.Cleanup(func() {
			_, _ = cli.ContainerRemove(context.Background(), name, client.ContainerRemoveOptions{Force: true})
		})
	}
	theirs, ours := run+"-theirs", run+"-ours"
	create(theirs, "hostevents-theirs")
	create(ours, "hostevents-ours")
	w := Follow(ctx, cli, run)
	time.Sleep(500 * time.Millisecond) // the stream is open before the removals
	sweep := func(sweeper, role string) {
		t.Helper()
		t.Setenv(envvar.RunID, sweeper)
		var out bytes.Buffer
		if _, err := reap.Sweep(ctx, cli, func(l map[string]string) (bool, string) {
			return l[reap.LabelRun] == run && l[reap.LabelRole] == role, ""
		}, &out); err != nil {
			t.Fatalf("sweep: %v\n%s", err, out.String())
		}
	}
	// This run's own sweep takes "ours", then another run's takes "theirs".
	sweep(run, "hostevents-ours")
	sweep("another-run", "hostevents-theirs")
	time.Sleep(500 * time.Millisecond)
	got := w.Stop()
	if len(got) != 1 || got[0].Container != theirs || !strings.Contains(got[0].Say(), "run another-run's sweep") {
		t.Fatalf("interference %+v; want one: %s removed by run another-run's sweep", got, theirs)
	}
	if strings.Contains(fmt.Sprint(got), ours) {
		t.Errorf("this run's own removal of %s is reported as interference", ours)
	}
}

// TestMatch: a destroy is interference only when a sweep of another run
// (or of none) journalled it, for that container, at about that time.
func TestMatch(t *testing.T) {
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	gone := []Destroyed{{At: at, Container: "rig-1"}}
	tests := []struct {
		name string
		r    reap.Removal
		want int
	}{
		{"another run's sweep", reap.Removal{At: at, Container: "rig-1", Run: "r", SweeperRun: "s", Sweeper: "o"}, 1},
		{"a sweep outside any run", reap.Removal{At: at, Container: "rig-1", Run: "r", Sweeper: "o"}, 1},
		{"this run's own sweep", reap.Removal{At: at, Container: "rig-1", Run: "r", SweeperRun: "r"}, 0},
		{"another container", reap.Removal{At: at, Container: "rig-2", Run: "r", SweeperRun: "s"}, 0},
		{"another time", reap.Removal{At: at.Add(time.Hour), Container: "rig-1", Run: "r", SweeperRun: "s"}, 0},
		{"another run's container", reap.Removal{At: at, Container: "rig-1", Run: "q", SweeperRun: "s"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Match("r", gone, []reap.Removal{tt.r}); len(got) != tt.want {
				t.Errorf("%d interferences (%+v), want %d", len(got), got, tt.want)
			}
		})
	}
}
