package reap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
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

// Swept lists what a sweep removed, by name, and what it left alone
// because its owner could not be proven gone.
type Swept struct {
	Containers []string
	Networks   []string
	Volumes    []string
	Kept       []string
}

// Empty reports whether the sweep removed nothing.
func (s Swept) Empty() bool {
	return len(s.Containers)+len(s.Networks)+len(s.Volumes) == 0
}

func (s Swept) String() string {
	return fmt.Sprintf("%d containers, %d networks, %d volumes", len(s.Containers), len(s.Networks), len(s.Volumes))
}

// Selector decides whether a labelled resource is removed. The sweep only
// ever offers resources that carry LabelManaged=true. When it keeps one for
// a reason the user should hear (an owner whose liveness cannot be proven),
// kept says why; otherwise kept is empty.
type Selector func(labels map[string]string) (remove bool, kept string)

// Orphaned selects resources whose owner is provably gone (Owner.Liveness),
// optionally narrowed to one role prefix (for example "cluster-"). A
// resource whose owner cannot be proven gone (another PID namespace,
// another machine, an unreadable or older owner label) is kept, with the
// reason. Resources kept on purpose (LabelKeep) are orphaned too once their
// owner has exited: keeping lasts until the next run.
func Orphaned(rolePrefix string) Selector {
	return func(labels map[string]string) (bool, string) {
		if rolePrefix != "" && !hasPrefix(labels[LabelRole], rolePrefix) {
			return false, ""
		}
		o, err := ParseOwner(labels[LabelOwner])
		if err != nil {
			return false, fmt.Sprintf("its owner label %q does not parse, so its liveness cannot be proven", labels[LabelOwner])
		}
		switch l, why := o.Liveness(); l {
		case Gone:
			// A warm layer outlives the process that started it: it is
			// kept while its owner record names its run.
			if path := labels[LabelWarm]; path != "" && WarmHeld(path, labels[LabelRun]) {
				return false, ""
			}
			return true, ""
		case Alive:
			return false, ""
		default:
			return false, why
		}
	}
}

// OwnedBy selects the resources created by the process with this PID: what
// a test that killed or interrupted that process inspects.
func OwnedBy(pid int) Selector {
	return func(labels map[string]string) (bool, string) {
		o, err := ParseOwner(labels[LabelOwner])
		return err == nil && o.PID == pid, ""
	}
}

// Run selects every resource of one run id, whatever its owner. Tests use
// it to look for leftovers; a run tears down with Mine, never with Run.
func Run(run string) Selector {
	return func(labels map[string]string) (bool, string) { return labels[LabelRun] == run, "" }
}

// Mine selects the resources of one run that the calling process created:
// run label AND owner label. It is what a run tears down, so that another
// process that happened to use the same run id (CONTESTED_RUN_ID shared by
// several processes) never loses its resources to this one's teardown.
func Mine(run string) Selector {
	owner := Self().String()
	return func(labels map[string]string) (bool, string) {
		return labels[LabelRun] == run && labels[LabelOwner] == owner, ""
	}
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
	// Containers are removed concurrently: a removal waits for the engine
	// to stop the process and unpublish its ports (a Toxiproxy publishes
	// dozens), and one does not need another.
	type removal struct {
		name, run, owner string
		err              error
	}
	var picked []*removal
	var wg sync.WaitGroup
	slots := make(chan struct{}, 8)
	for _, c := range cs.Items {
		name := c.ID[:12]
		if len(c.Names) > 0 {
			name = c.Names[0]
		}
		if ok, kept := sel(c.Labels); !ok {
			if kept != "" {
				fmt.Fprintf(w, "left container %s alone (run %s, owner %s): %s; remove it by hand (docker rm -f %s) once you know its run is over\n", name, c.Labels[LabelRun], c.Labels[LabelOwner], kept, strings.TrimPrefix(name, "/"))
				out.Kept = append(out.Kept, name)
			}
			continue
		}
		r := &removal{name: name, run: c.Labels[LabelRun], owner: c.Labels[LabelOwner]}
		picked = append(picked, r)
		wg.Add(1)
		go func(id string) {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			if _, err := d.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !isNotFound(err) {
				if !removedElsewhere(ctx, d, id, err) {
					r.err = fmt.Errorf("remove container %s: %w", r.name, err)
				}
			}
		}(c.ID)
	}
	wg.Wait()
	for _, r := range picked {
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		fmt.Fprintf(w, "swept container %s (run %s, owner %s)\n", r.name, r.run, r.owner)
		out.Containers = append(out.Containers, r.name)
		journal(Removal{At: time.Now(), Container: strings.TrimPrefix(r.name, "/"), Run: r.run, Owner: r.owner, SweeperRun: sweeperRun(), Sweeper: Self().String()})
	}

	ns, err := d.NetworkList(ctx, client.NetworkListOptions{Filters: managed})
	if err != nil {
		errs = append(errs, fmt.Errorf("list networks: %w", err))
	} else {
		for _, n := range ns.Items {
			if ok, kept := sel(n.Labels); !ok {
				if kept != "" {
					fmt.Fprintf(w, "left network %s alone (run %s, owner %s): %s\n", n.Name, n.Labels[LabelRun], n.Labels[LabelOwner], kept)
					out.Kept = append(out.Kept, n.Name)
				}
				continue
			}
			err := removeNetwork(ctx, d, n.ID, n.Name, sel, w)
			if errors.Is(err, errAttached) {
				out.Kept = append(out.Kept, n.Name)
				continue
			}
			if err != nil {
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
			if ok, kept := sel(v.Labels); !ok {
				if kept != "" {
					fmt.Fprintf(w, "left volume %s alone (run %s, owner %s): %s\n", v.Name, v.Labels[LabelRun], v.Labels[LabelOwner], kept)
					out.Kept = append(out.Kept, v.Name)
				}
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
		if ok, _ := sel(c.Labels); ok {
			out.Containers = append(out.Containers, c.ID[:12])
		}
	}
	ns, err := d.NetworkList(ctx, client.NetworkListOptions{Filters: managed})
	if err != nil {
		return out, fmt.Errorf("list networks: %w", err)
	}
	for _, n := range ns.Items {
		if ok, _ := sel(n.Labels); ok {
			out.Networks = append(out.Networks, n.Name)
		}
	}
	vs, err := d.VolumeList(ctx, client.VolumeListOptions{Filters: managed})
	if err != nil {
		return out, fmt.Errorf("list volumes: %w", err)
	}
	for _, v := range vs.Items {
		if ok, _ := sel(v.Labels); ok {
			out.Volumes = append(out.Volumes, v.Name)
		}
	}
	return out, nil
}

func isNotFound(err error) bool { return cerrdefs.IsNotFound(err) }

// errAttached: a network stays because a container Sweep may not remove
// is attached to it.
var errAttached = errors.New("a container not selected is attached")

// removeNetwork removes a network. When containers are still attached
// (created after the sweep listed them, by a process killed mid-start, or
// still being removed by another sweep), it removes those the selector
// selects, waits for removals in progress, and tries again for up to ten
// seconds; a network that holds a container it may not remove is left, and
// said so.
func removeNetwork(ctx context.Context, d Docker, id, name string, sel Selector, w io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		_, err := d.NetworkRemove(ctx, id, client.NetworkRemoveOptions{})
		if err == nil || isNotFound(err) {
			return nil
		}
		if !strings.Contains(err.Error(), "active endpoints") {
			return err
		}
		cs, lerr := d.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: client.Filters{}.Add("network", id)})
		if lerr != nil {
			return errors.Join(err, lerr)
		}
		for _, c := range cs.Items {
			if ok, _ := sel(c.Labels); !ok || c.Labels[LabelManaged] != "true" {
				fmt.Fprintf(w, "left network %s alone: container %s, which this sweep does not remove, is attached\n", name, c.ID[:12])
				return errAttached
			}
			if _, rerr := d.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); rerr != nil && !isNotFound(rerr) && !removedElsewhere(ctx, d, c.ID, rerr) {
				return fmt.Errorf("%w; remove container %s attached to it: %v", err, c.ID[:12], rerr)
			}
			fmt.Fprintf(w, "swept container %s (attached to network %s)\n", c.ID[:12], name)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

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
