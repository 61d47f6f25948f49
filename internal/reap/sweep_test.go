package reap

import (
	"context"
	"errors"
	"io"
	"strings"
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

// lateDocker is an engine on which a container of the orphaned run was
// created after the sweep listed the containers (its process was killed
// mid-start): the network still has it attached, and only a listing by
// network finds it.
type lateDocker struct {
	Docker
	late     container.Summary
	removed  bool
	netFreed bool
	netTries int
}

func (d *lateDocker) ContainerList(_ context.Context, o client.ContainerListOptions) (client.ContainerListResult, error) {
	if _, byNet := o.Filters["network"]; byNet && !d.removed {
		return client.ContainerListResult{Items: []container.Summary{d.late}}, nil
	}
	return client.ContainerListResult{}, nil
}

func (d *lateDocker) ContainerRemove(context.Context, string, client.ContainerRemoveOptions) (client.ContainerRemoveResult, error) {
	d.removed = true
	return client.ContainerRemoveResult{}, nil
}

func (d *lateDocker) NetworkList(context.Context, client.NetworkListOptions) (client.NetworkListResult, error) {
	return client.NetworkListResult{Items: []network.Summary{{Network: network.Network{Name: "net-r1", ID: "n1", Labels: map[string]string{LabelManaged: "true", LabelRun: "r1"}}}}}, nil
}

func (d *lateDocker) NetworkRemove(context.Context, string, client.NetworkRemoveOptions) (client.NetworkRemoveResult, error) {
	d.netTries++
	if !d.removed {
		return client.NetworkRemoveResult{}, errors.New("Error response from daemon: error while removing network: network net-r1 id n1 has active endpoints")
	}
	d.netFreed = true
	return client.NetworkRemoveResult{}, nil
}

func (d *lateDocker) VolumeList(context.Context, client.VolumeListOptions) (client.VolumeListResult, error) {
	return client.VolumeListResult{}, nil
}

// TestANetworkWithALateContainerIsSweptWithIt: a network the sweep selects
// still holds a container its first listing missed. The sweep removes that
// container when it is selected too, then the network, without an error;
// when the container is not its to remove, it leaves both and says so,
// without an error either.
func TestANetworkWithALateContainerIsSweptWithIt(t *testing.T) {
	tests := []struct {
		name    string
		labels  map[string]string
		wantNet bool
	}{
		{"a late container of the same run", map[string]string{LabelManaged: "true", LabelRun: "r1"}, true},
		{"a container of another run", map[string]string{LabelManaged: "true", LabelRun: "r2"}, false},
		{"a container without our label", map[string]string{LabelRun: "r1"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &lateDocker{late: container.Summary{ID: "fedcba9876543210", Labels: tt.labels}}
			var log strings.Builder
			swept, err := Sweep(context.Background(), d, Run("r1"), &log)
			if err != nil {
				t.Fatalf("Sweep: %v\n%s", err, log.String())
			}
			if d.netFreed != tt.wantNet || d.removed != tt.wantNet {
				t.Errorf("network removed %v, container removed %v; want both %v (swept %s)\n%s", d.netFreed, d.removed, tt.wantNet, swept, log.String())
			}
			if !tt.wantNet && !strings.Contains(log.String(), "left network net-r1 alone") {
				t.Errorf("the sweep did not say why it left the network:\n%s", log.String())
			}
		})
	}
}
