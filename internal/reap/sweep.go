package reap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/moby/moby/client"
)

// Docker is the part of the Docker API the sweep uses.
type Docker interface {
	ContainerList(ctx context.Context, options client.ContainerListOptions) (client.ContainerListResult, error)
	ContainerRemove(ctx context.Context, id string, options client.ContainerRemoveOptions) (client.ContainerRemoveResult, error)
	NetworkList(ctx context.Context, options client.NetworkListOptions) (client.NetworkListResult, error)
	NetworkRemove(ctx context.Context, id string, options client.NetworkRemoveOptions) (client.NetworkRemoveResult, error)
	VolumeList(ctx context.Context, options client.VolumeListOptions) (client.VolumeListResult, error)
	VolumeRemove(ctx context.Context, id string, options client.VolumeRemoveOptions) (client.VolumeRemoveResult, error)
}

var _ Docker = (*client.Client)(nil)

// Swept lists what a sweep removed, by name.
type Swept struct {
	Containers []string
	Networks   []string
	Volumes    []string
}

// Empty reports whether the sweep removed nothing.
func (s Swept) Empty() bool {
	return len(s.Containers)+len(s.Networks)+len(s.Volumes) == 0
}

func (s Swept) String() string {
	return fmt.Sprintf("%d containers, %d networks, %d volumes", len(s.Containers), len(s.Networks), len(s.Volumes))
}

// Selector decides whether a labelled resource is reaped. The sweep only
// ever offers resources that carry LabelManaged=true.
type Selector func(labels map[string]string) bool

// Orphaned selects resources whose owner process is gone, optionally
// narrowed to one role prefix (for example "cluster-"). Resources kept on
// purpose (LabelKeep) are orphaned too once their owner has exited: keeping
// lasts until the next run.
func Orphaned(rolePrefix string) Selector {
	return func(labels map[string]string) bool {
		if rolePrefix != "" && !hasPrefix(labels[LabelRole], rolePrefix) {
			return false
		}
		o, err := ParseOwner(labels[LabelOwner])
		if err != nil {
			// Our label without a readable owner: written by us, owner unknown.
			// It can only be residue of a broken run, so it is reaped.
			return true
		}
		return o.Gone()
	}
}

// OwnedBy selects the resources created by the process with this PID on
// this host: what a test that killed or interrupted that process inspects.
func OwnedBy(pid int) Selector {
	return func(labels map[string]string) bool {
		o, err := ParseOwner(labels[LabelOwner])
		return err == nil && o.PID == pid
	}
}

// Run selects every resource of one run id, whatever its owner's state. It
// is what a run uses to tear down its own resources.
func Run(run string) Selector {
	return func(labels map[string]string) bool { return labels[LabelRun] == run }
}

func hasPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }

// Sweep removes the containers (with their anonymous volumes), then the
// networks and named volumes, that carry LabelManaged and that sel selects.
// Containers go first because a network cannot be removed while a container
// is attached. Each removal is logged to w. Errors are collected, not fatal:
// one stuck resource must not keep the rest alive.
func Sweep(ctx context.Context, d Docker, sel Selector, w io.Writer) (Swept, error) {
	var out Swept
	var errs []error
	managed := client.Filters{}.Add("label", LabelManaged+"=true")

	cs, err := d.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: managed})
	if err != nil {
		return out, fmt.Errorf("list containers: %w", err)
	}
	for _, c := range cs.Items {
		if !sel(c.Labels) {
			continue
		}
		name := c.ID[:12]
		if len(c.Names) > 0 {
			name = c.Names[0]
		}
		if _, err := d.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !isNotFound(err) {
			if !removedElsewhere(ctx, d, c.ID, err) {
				errs = append(errs, fmt.Errorf("remove container %s: %w", name, err))
				continue
			}
		}
		fmt.Fprintf(w, "swept container %s (run %s, owner %s)\n", name, c.Labels[LabelRun], c.Labels[LabelOwner])
		out.Containers = append(out.Containers, name)
	}

	ns, err := d.NetworkList(ctx, client.NetworkListOptions{Filters: managed})
	if err != nil {
		errs = append(errs, fmt.Errorf("list networks: %w", err))
	} else {
		for _, n := range ns.Items {
			if !sel(n.Labels) {
				continue
			}
			if _, err := d.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{}); err != nil && !isNotFound(err) {
				errs = append(errs, fmt.Errorf("remove network %s: %w", n.Name, err))
				continue
			}
			fmt.Fprintf(w, "swept network %s (run %s)\n", n.Name, n.Labels[LabelRun])
			out.Networks = append(out.Networks, n.Name)
		}
	}

	vs, err := d.VolumeList(ctx, client.VolumeListOptions{Filters: managed})
	if err != nil {
		errs = append(errs, fmt.Errorf("list volumes: %w", err))
	} else {
		for _, v := range vs.Items {
			if !sel(v.Labels) {
				continue
			}
			if _, err := d.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{Force: true}); err != nil && !isNotFound(err) {
				errs = append(errs, fmt.Errorf("remove volume %s: %w", v.Name, err))
				continue
			}
			fmt.Fprintf(w, "swept volume %s (run %s)\n", v.Name, v.Labels[LabelRun])
			out.Volumes = append(out.Volumes, v.Name)
		}
	}
	sort.Strings(out.Containers)
	sort.Strings(out.Networks)
	sort.Strings(out.Volumes)
	return out, errors.Join(errs...)
}

// Leftovers counts the managed resources that sel selects without removing
// them; tests use it to prove a sweep or a teardown left nothing behind.
func Leftovers(ctx context.Context, d Docker, sel Selector) (Swept, error) {
	var out Swept
	managed := client.Filters{}.Add("label", LabelManaged+"=true")
	cs, err := d.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: managed})
	if err != nil {
		return out, fmt.Errorf("list containers: %w", err)
	}
	for _, c := range cs.Items {
		if sel(c.Labels) {
			out.Containers = append(out.Containers, c.ID[:12])
		}
	}
	ns, err := d.NetworkList(ctx, client.NetworkListOptions{Filters: managed})
	if err != nil {
		return out, fmt.Errorf("list networks: %w", err)
	}
	for _, n := range ns.Items {
		if sel(n.Labels) {
			out.Networks = append(out.Networks, n.Name)
		}
	}
	vs, err := d.VolumeList(ctx, client.VolumeListOptions{Filters: managed})
	if err != nil {
		return out, fmt.Errorf("list volumes: %w", err)
	}
	for _, v := range vs.Items {
		if sel(v.Labels) {
			out.Volumes = append(out.Volumes, v.Name)
		}
	}
	return out, nil
}

func isNotFound(err error) bool { return cerrdefs.IsNotFound(err) }

// removedElsewhere reports whether a removal that failed because another
// sweep (a parallel test package, another run's bring-up) is already
// removing the container has finished: it waits up to ten seconds for the
// container to disappear. Without it, the second sweeper reports an error
// and, worse, leaves the network that container still holds.
func removedElsewhere(ctx context.Context, d Docker, id string, err error) bool {
	if !strings.Contains(err.Error(), "already in progress") {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		cs, lerr := d.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: client.Filters{}.Add("id", id)})
		if lerr == nil && len(cs.Items) == 0 {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
}
