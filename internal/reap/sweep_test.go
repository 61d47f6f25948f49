package reap

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// racedDocker is an engine on which another sweeper got to the one
// labelled container first: removing it answers "already in progress",
// and the container is gone once gone is true.
type racedDocker struct {
	Docker
	removeErr error
	gone      bool // the other sweeper has finished
	lists     int  // listings by id, after which the other sweeper finishes
	netFreed  bool
}

func (d *racedDocker) ContainerList(_ context.Context, o client.ContainerListOptions) (client.ContainerListResult, error) {
	if _, byID := o.Filters["id"]; byID {
		d.lists++
		d.gone = d.gone || d.lists > 2
	}
	if d.gone {
		return client.ContainerListResult{}, nil
	}
	return client.ContainerListResult{Items: []container.Summary{{ID: "0123456789abcdef", Names: []string{"/victim"}, Labels: map[string]string{LabelManaged: "true", LabelRun: "r1"}}}}, nil
}

func (d *racedDocker) ContainerRemove(context.Context, string, client.ContainerRemoveOptions) (client.ContainerRemoveResult, error) {
	return client.ContainerRemoveResult{}, d.removeErr
}

func (d *racedDocker) NetworkList(context.Context, client.NetworkListOptions) (client.NetworkListResult, error) {
	return client.NetworkListResult{Items: []network.Summary{{Network: network.Network{Name: "net-r1", ID: "n1", Labels: map[string]string{LabelManaged: "true", LabelRun: "r1"}}}}}, nil
}

func (d *racedDocker) NetworkRemove(context.Context, string, client.NetworkRemoveOptions) (client.NetworkRemoveResult, error) {
	if !d.gone {
		return client.NetworkRemoveResult{}, errors.New("error while removing network: network net-r1 has active endpoints")
	}
	d.netFreed = true
	return client.NetworkRemoveResult{}, nil
}

func (d *racedDocker) VolumeList(context.Context, client.VolumeListOptions) (client.VolumeListResult, error) {
	return client.VolumeListResult{}, nil
}

// TestASweepRacingAnotherSweepFinishesTheJob: two packages' tests sweep
// the same orphaned rig at once. The one that loses the race for a
// container waits for the winner instead of reporting an error and
// leaving the network behind; any other removal error is still reported.
func TestASweepRacingAnotherSweepFinishesTheJob(t *testing.T) {
	tests := []struct {
		name      string
		removeErr error
		wantErr   bool
		wantNet   bool
	}{
		{"removal already in progress elsewhere", errors.New("Error response from daemon: removal of container 0123456789ab is already in progress"), false, true},
		{"any other failure", errors.New("Error response from daemon: driver failed to remove root filesystem"), true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &racedDocker{removeErr: tt.removeErr}
			swept, err := Sweep(context.Background(), d, Run("r1"), io.Discard)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Sweep: err = %v, want error %v", err, tt.wantErr)
			}
			if d.netFreed != tt.wantNet {
				t.Errorf("network removed = %v, want %v (swept %s)", d.netFreed, tt.wantNet, swept)
			}
		})
	}
}
