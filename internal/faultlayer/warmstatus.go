package faultlayer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"

	"github.com/contested/contested/internal/dockerenv"
	"github.com/contested/contested/internal/images"
	"github.com/contested/contested/internal/reap"
	"github.com/contested/contested/internal/secret"
)

// WarmState is what WarmStatus finds.
type WarmState struct {
	Path       string
	Record     *WarmRecord // nil when none is recorded
	Containers []WarmContainer
	// Stale says why the recorded layer cannot be attached to as is ("" when
	// it can): a container gone or stopped, an image changed.
	Stale string
	// Refused says why the record at Path is not used ("" when it is, or
	// when there is none): not this user's own, or open to others.
	Refused string
	// Unheld are warm-labelled resources no record holds (a bring-up that
	// was interrupted, a record removed by hand): the next sweep removes
	// them.
	Unheld []string
	// Others are warm layers another record holds (another cache
	// directory's, another user's): never this command's to remove.
	Others []string
}

// WarmContainer is one container of the warm layer.
type WarmContainer struct {
	Name, Role, Image, State string
	Ports                    int // published ports
}

// WarmStatus reports the warm layer: its record, its containers, and
// whether it is current. It changes nothing.
func WarmStatus(ctx context.Context, cfg Config) (WarmState, error) {
	path, err := WarmRecordPath()
	if err != nil {
		return WarmState{}, err
	}
	st := WarmState{Path: path}
	rec, rerr := readWarm(path)
	if rerr != nil && !errors.Is(rerr, ErrNoWarm) {
		if !errors.Is(rerr, ErrWarmRecord) {
			return st, rerr
		}
		st.Refused = strings.TrimPrefix(rerr.Error(), ErrWarmRecord.Error()+": ")
	}
	cli, err := dockerenv.Connect(ctx)
	if err != nil {
		if rerr == nil {
			st.Record = &rec
			st.Stale = "the Docker engine does not answer: " + err.Error()
		}
		return st, nil
	}
	defer cli.Close()
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: client.Filters{}.Add("label", reap.LabelWarm)})
	if err != nil {
		return st, fmt.Errorf("list the warm layer's containers: %w", err)
	}
	for _, c := range list.Items {
		name := c.ID[:12]
		if len(c.Names) > 0 {
			name = c.Names[0][1:]
		}
		held, run := c.Labels[reap.LabelWarm], c.Labels[reap.LabelRun]
		switch {
		case held == path && rerr == nil && run == rec.RunID:
		case held == path && reap.WarmHeld(held, run):
			st.Others = append(st.Others, fmt.Sprintf("%s (run %s) is held by this cache directory's refused record; go tool mage layer down removes both", name, run))
			continue
		case held != path && reap.WarmHeld(held, run):
			st.Others = append(st.Others, fmt.Sprintf("%s (run %s) is held by the record %s, another cache directory's or user's: no sweep or layer down from here removes it while that record holds it", name, run, held))
			continue
		default:
			st.Unheld = append(st.Unheld, name)
			continue
		}
		st.Containers = append(st.Containers, WarmContainer{Name: name, Role: c.Labels[reap.LabelRole], Image: c.Image, State: string(c.State), Ports: len(c.Ports)})
	}
	sort.Slice(st.Containers, func(i, j int) bool { return st.Containers[i].Name < st.Containers[j].Name })
	if rerr == nil {
		st.Record = &rec
		if st.Stale = warmStale(ctx, cli, cfg, rec, false); st.Stale == "" {
			if why := verifyWarm(ctx, cli, path, rec); why != "" {
				st.Stale = "its record does not match its containers: " + why
			}
		}
	}
	return st, nil
}

// warmStale says why rec's layer cannot be attached to as is, "" when it
// can: both containers run, and the images this configuration would start
// now are the ones it runs (a changed recipe, host Postgres or image
// variable means a new image). With ensure, images missing now are built
// (what a recreation needs anyway); without, a missing one is stale.
func warmStale(ctx context.Context, cli *testcontainers.DockerClient, cfg Config, rec WarmRecord, ensure bool) string {
	if why := warmRunning(ctx, cli, rec); why != "" {
		return why
	}
	var pg, tp string
	var err error
	if ensure {
		pg, tp, err = containerImages(ctx, cli, cfg)
		if err != nil {
			return "its images cannot be resolved now: " + err.Error()
		}
	} else {
		pg, tp = wantedImages(ctx, cli, cfg)
	}
	for _, im := range []struct{ what, ref, recRef, recID string }{
		{"Postgres", pg, rec.PostgresImage, rec.PostgresImageID},
		{"Toxiproxy", tp, rec.ToxiproxyImage, rec.ToxiproxyImageID},
	} {
		if im.ref != im.recRef {
			return fmt.Sprintf("the %s image is now %s, it runs %s", im.what, im.ref, im.recRef)
		}
		if id := imageID(ctx, cli, im.ref); id != im.recID {
			return fmt.Sprintf("the %s image %s was rebuilt since it started", im.what, im.ref)
		}
	}
	return ""
}

// warmRunning says which container of rec's layer is not running, "" when
// both run.
func warmRunning(ctx context.Context, cli *testcontainers.DockerClient, rec WarmRecord) string {
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: client.Filters{}.Add("label", reap.LabelRun+"="+rec.RunID)})
	if err != nil {
		return "its containers cannot be listed: " + err.Error()
	}
	running := map[string]bool{}
	for _, c := range list.Items {
		if c.Labels[reap.LabelWarm] != "" && c.State == "running" {
			running[c.Labels[reap.LabelRole]] = true
		}
	}
	for _, role := range []string{rolePrefix + "postgres", rolePrefix + "toxiproxy"} {
		if !running[role] {
			return fmt.Sprintf("its %s container is not running", role[len(rolePrefix):])
		}
	}
	return ""
}

// wantedImages are the references containerImages would return now,
// without pulling or building anything: what a status can say.
func wantedImages(ctx context.Context, cli *testcontainers.DockerClient, cfg Config) (pg, tp string) {
	pick := func(im images.Image, want string) string {
		if want == "" {
			want = im.Upstream
		}
		if images.Present(ctx, cli, want) || (want != im.Upstream && want != im.Local) {
			return want
		}
		return im.Local
	}
	return pick(images.Postgres(), cfg.PostgresImage), pick(images.Toxiproxy(), cfg.ToxiproxyImage)
}

func imageID(ctx context.Context, cli *testcontainers.DockerClient, ref string) string {
	res, err := cli.ImageInspect(ctx, ref)
	if err != nil {
		return ""
	}
	return res.ID
}

// age renders how long ago t was, to the second.
func age(t time.Time) string {
	d := time.Since(t).Round(time.Second)
	if d < 0 {
		d = 0
	}
	return d.String()
}

// FormatWarm writes a warm layer's state for people: what runs, where,
// since when, from which images, and whether a run would attach to it.
func FormatWarm(w io.Writer, st WarmState) {
	switch {
	case st.Refused != "":
		fmt.Fprintf(w, "warm layer: REFUSED: %s; no run attaches to it\n", st.Refused)
	case st.Record == nil:
		fmt.Fprintf(w, "warm layer: none (no record at %s); start one with go tool mage layer up\n", st.Path)
	default:
		r := st.Record
		fmt.Fprintf(w, "warm layer: run %s, up %s (since %s), record %s\n", r.RunID, age(r.Created), r.Created.Format(time.RFC3339), st.Path)
		fmt.Fprintf(w, "  whose      %s\n", r.Whose())
		fmt.Fprintf(w, "  Toxiproxy  %s (container %s, image %s)\n", r.ToxiproxyURL, shortID(r.ToxiproxyContainer), r.ToxiproxyImage)
		fmt.Fprintf(w, "  Postgres   %s (image %s)\n", secret.ScrubString(r.PostgresDSN), r.PostgresImage)
		fmt.Fprintf(w, "  proxies    %d ports (%s inside, %s), network %s\n", len(r.Ports), portRange(r.Ports), proxyReach(r.Ports), r.Network)
		for _, c := range st.Containers {
			fmt.Fprintf(w, "  container  %-48s %-16s %-8s %s ports\n", c.Name, c.Role, c.State, strconv.Itoa(c.Ports))
		}
		if st.Stale != "" {
			fmt.Fprintf(w, "  STALE: %s; the next run recreates it (or: go tool mage layer up)\n", st.Stale)
		} else {
			fmt.Fprintf(w, "  current: validate, contested, arbitrate and go test attach to it\n")
		}
	}
	for _, n := range st.Others {
		fmt.Fprintf(w, "  held: %s\n", n)
	}
	for _, n := range st.Unheld {
		fmt.Fprintf(w, "  unheld: %s carries the warm label and no record holds it; the next sweep (or go tool mage layer down) removes it\n", n)
	}
}

// proxyReach says how a leg reaches the proxy ports: at Toxiproxy's address
// on the layer's network (none published) or each published on 127.0.0.1.
// It reads the dial addresses, which are what legs use.
func proxyReach(ports []ProxyPort) string {
	if len(ports) == 0 {
		return "none"
	}
	host, _, _ := net.SplitHostPort(ports[0].Dial)
	if host == "127.0.0.1" {
		return "each published on 127.0.0.1"
	}
	return "dialled at " + host + " on the layer's network, none published"
}

// portRange renders the listen ports as first-last.
func portRange(ports []ProxyPort) string {
	if len(ports) == 0 {
		return "none"
	}
	lo, hi := ports[0].Port, ports[0].Port
	for _, p := range ports {
		lo, hi = min(lo, p.Port), max(hi, p.Port)
	}
	return fmt.Sprintf("%d-%d", lo, hi)
}
