package faultlayer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/contested/contested/internal/dbguard"
	"github.com/contested/contested/internal/dockerenv"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/faultlayer/lease"
	"github.com/contested/contested/internal/secret"
)

// Check is the result of one preflight check.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Hard   bool   `json:"hard,omitempty"` // fails preflight even in report-only mode
	Detail string `json:"detail"`         // what was checked, or what is wrong
	Fix    string `json:"fix,omitempty"`  // what to do, when not OK
}

// Preflight is the outcome of all checks on one layer.
type Preflight struct {
	Layer  string        `json:"layer"`
	Checks []Check       `json:"checks"`
	Took   time.Duration `json:"took_ns"`
}

// OK reports whether every check passed.
func (p Preflight) OK() bool {
	for _, c := range p.Checks {
		if !c.OK {
			return false
		}
	}
	return true
}

// Hard reports whether a check failed that fails preflight in any mode: a
// proven exposure off this host (the control API published off loopback,
// proxies that would listen off loopback on the host's network).
func (p Preflight) Hard() bool {
	for _, c := range p.Checks {
		if !c.OK && c.Hard {
			return true
		}
	}
	return false
}

// Failed returns the failed checks.
func (p Preflight) Failed() []Check {
	var out []Check
	for _, c := range p.Checks {
		if !c.OK {
			out = append(out, c)
		}
	}
	return out
}

// Write prints one line per check: what was checked, ok or what is wrong
// and how to fix it.
func (p Preflight) Write(w io.Writer) {
	for _, c := range p.Checks {
		switch {
		case c.OK:
			fmt.Fprintf(w, "  ok    %-22s %s\n", c.Name, c.Detail)
		case c.Hard:
			fmt.Fprintf(w, "  FAIL! %-22s %s; fix: %s\n", c.Name, c.Detail, c.Fix)
		default:
			fmt.Fprintf(w, "  FAIL  %-22s %s; fix: %s\n", c.Name, c.Detail, c.Fix)
		}
	}
}

// Inspector is the part of the Docker API the loopback check uses.
type Inspector interface {
	ContainerInspect(ctx context.Context, id string, options client.ContainerInspectOptions) (client.ContainerInspectResult, error)
	ContainerList(ctx context.Context, options client.ContainerListOptions) (client.ContainerListResult, error)
}

var _ Inspector = (*client.Client)(nil)

// RunPreflight checks a layer: its identity (Identity) and then that the
// lease table exists and completes a lease round trip.
func RunPreflight(ctx context.Context, l *Layer) Preflight {
	start := time.Now()
	p := Identity(ctx, l)
	p.Checks = append(p.Checks, checkLeases(ctx, l))
	p.Took = time.Since(start)
	return p
}

// Identity runs the checks that must pass before anything is created in a
// layer or deleted from it (Up runs them before the lease migration and
// the reclaim): Toxiproxy answers /version and refuses a browser, which
// proves it is Toxiproxy; its control API is published on loopback only;
// its proxies listen where only this host reaches them; the test-plane
// Postgres answers. Docker is consulted for the loopback and listen checks
// when an engine answers.
func Identity(ctx context.Context, l *Layer) Preflight {
	start := time.Now()
	var insp Inspector
	if cli, err := dockerenv.Connect(ctx); err == nil {
		defer cli.Close()
		insp = cli
	}
	p := Preflight{Layer: string(l.Kind)}
	p.Checks = append(p.Checks,
		checkVersion(ctx, l.ToxiproxyURL),
		checkLoopback(ctx, l, insp),
		checkProxyListen(ctx, l, insp),
		checkPostgres(ctx, l),
	)
	p.Took = time.Since(start)
	return p
}

func checkVersion(ctx context.Context, base string) Check {
	c := Check{Name: "toxiproxy /version"}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/version", nil)
	req.Header.Set("User-Agent", "contested-preflight")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.Detail = fmt.Sprintf("Toxiproxy at %s does not answer: GET /version: %v", base, err)
		c.Fix = "start the fault layer (go tool mage fault-preflight brings one up), or point " + envvar.ToxiproxyURL + " at a running Toxiproxy"
		return c
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	var v struct {
		Version string `json:"version"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &v) != nil || v.Version == "" {
		c.Detail = fmt.Sprintf("GET %s/version answered %s %q, not Toxiproxy's JSON version", base, resp.Status, strings.TrimSpace(string(body)))
		c.Fix = "check that " + envvar.ToxiproxyURL + " names Toxiproxy's control API, not another service"
		return c
	}
	browser := "not checked"
	if code, _ := fetchVersion(ctx, base, "Mozilla/5.0 (contested preflight)"); code == http.StatusForbidden {
		browser = "browser User-Agent refused with 403"
	} else if code != 0 {
		c.Detail = fmt.Sprintf("%s/version answers a browser User-Agent with %d; Toxiproxy refuses browsers with 403, so this is not Toxiproxy or it sits behind a proxy", base, code)
		c.Fix = "point " + envvar.ToxiproxyURL + " at Toxiproxy itself"
		return c
	}
	c.OK = true
	c.Detail = fmt.Sprintf("Toxiproxy %s answers at %s (%s)", v.Version, base, browser)
	return c
}

// isLoopback reports whether a published host IP is reachable only from
// this host. The unspecified address (0.0.0.0, ::) and an empty HostIP mean
// every interface.
func isLoopback(a netip.Addr) bool { return a.IsValid() && a.IsLoopback() }

// NonLoopbackBindings returns the bindings of a port map that are reachable
// from off the host, rendered as "8474/tcp on 0.0.0.0:49153".
func NonLoopbackBindings(ports network.PortMap, only string) []string {
	var out []string
	for p, bs := range ports {
		if only != "" && p.Port() != only {
			continue
		}
		for _, b := range bs {
			if !isLoopback(b.HostIP) {
				ip := "0.0.0.0"
				if b.HostIP.IsValid() {
					ip = b.HostIP.String()
				}
				out = append(out, fmt.Sprintf("%s on %s", p, net.JoinHostPort(ip, b.HostPort)))
			}
		}
	}
	return out
}

func checkLoopback(ctx context.Context, l *Layer, insp Inspector) Check {
	c := Check{Name: "control API loopback"}
	u, err := url.Parse(l.ToxiproxyURL)
	if err != nil {
		c.Detail = fmt.Sprintf("cannot parse %q: %v", l.ToxiproxyURL, err)
		c.Fix = "set " + envvar.ToxiproxyURL + " to http://127.0.0.1:PORT"
		return c
	}
	// Whatever provider: the URL runs reach it at is loopback (a warm
	// layer's record or a container's bindings prove nothing about an
	// address the URL names elsewhere).
	if !resolvesToLoopback(ctx, u.Hostname()) {
		c.Detail = fmt.Sprintf("%s is not a loopback address", u.Host)
		c.Fix = "reach the control API on 127.0.0.1 and publish it on 127.0.0.1 only"
		if _, err := fetchVersion(ctx, l.ToxiproxyURL, "contested-preflight"); err == nil {
			c.Hard = true
			c.Detail = fmt.Sprintf("the control API answers on %s, a non-loopback address", u.Host)
		}
		return c
	}
	// The container we started: its bindings are the proof.
	if l.ToxiproxyContainer != "" {
		return loopbackOfContainer(ctx, c, l.ToxiproxyContainer, u, insp)
	}
	if l.Kind == Embedded {
		c.OK = true
		c.Detail = fmt.Sprintf("in-process Toxiproxy listens on %s", u.Host)
		return c
	}
	return loopbackOfPublisher(ctx, c, u, insp)
}

// resolvesToLoopback reports whether every address host resolves to is a
// loopback address (false when it resolves to none).
func resolvesToLoopback(ctx context.Context, host string) bool {
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		return false
	}
	for _, ip := range ips {
		if !ip.Unmap().IsLoopback() {
			return false
		}
	}
	return true
}

// loopbackOfContainer decides c from the bindings of the Toxiproxy
// container the layer started (those of the container whose network
// namespace it runs in, when it shares one).
func loopbackOfContainer(ctx context.Context, c Check, id string, u *url.URL, insp Inspector) Check {
	if insp == nil {
		c.Detail = "cannot inspect the Toxiproxy container: no Docker engine answers"
		c.Fix = "restart the Docker engine"
		return c
	}
	pub, err := inspectPublisher(ctx, insp, id)
	if err != nil {
		c.Detail = fmt.Sprintf("inspect Toxiproxy container %.12s: %v", id, err)
		c.Fix = "bring the layer up again"
		return c
	}
	if bad := NonLoopbackBindings(pub.ports, ""); len(bad) > 0 {
		c.Hard = true
		c.Detail = fmt.Sprintf("Toxiproxy container %s publishes %s: reachable off this host", pub.name, strings.Join(bad, ", "))
		c.Fix = "publish every port on 127.0.0.1 only (\"127.0.0.1::8474\")"
		return c
	}
	// The URL must reach this container's control port: a URL naming
	// another port is another service, whatever this one publishes.
	reached := false
	for _, b := range pub.ports[network.MustParsePort(fmt.Sprintf("%d/tcp", controlPort))] {
		reached = reached || b.HostPort == u.Port() && reaches(b.HostIP, u.Hostname())
	}
	if !reached {
		c.Detail = fmt.Sprintf("the control URL %s is not where Toxiproxy container %s publishes its control API", u.Host, pub.name)
		c.Fix = "bring the layer up again (go tool mage layer down, then layer up, for a warm layer)"
		return c
	}
	c.OK = true
	c.Detail = fmt.Sprintf("Toxiproxy container %s publishes on 127.0.0.1 only", pub.name)
	return c
}

// loopbackOfPublisher decides c for an external layer on loopback: if a
// local container publishes the URL's port, its bindings decide.
func loopbackOfPublisher(ctx context.Context, c Check, u *url.URL, insp Inspector) Check {
	if insp == nil {
		c.OK = true
		c.Detail = fmt.Sprintf("%s is loopback; no Docker engine to inspect publishes", u.Host)
		return c
	}
	port := u.Port()
	pub, err := publisherOf(ctx, insp, u.Hostname(), port)
	if err != nil {
		c.Detail = fmt.Sprintf("list containers: %v", err)
		c.Fix = "check the Docker engine"
		return c
	}
	if pub == nil {
		c.OK = true
		c.Detail = fmt.Sprintf("%s is loopback and no local container publishes port %s", u.Host, port)
		return c
	}
	// The container port behind the URL's host port: any of its bindings
	// that is not loopback makes the control API reachable from off the
	// host, whichever host port it uses.
	var bad []string
	for p, bs := range pub.ports {
		for _, b := range bs {
			if b.HostPort == port {
				bad = append(bad, NonLoopbackBindings(network.PortMap{p: bs}, "")...)
				break
			}
		}
	}
	if len(bad) > 0 {
		c.Hard = true
		c.Detail = fmt.Sprintf("container %s publishes the control API as %s: reachable off this host", pub.name, strings.Join(bad, ", "))
		c.Fix = "publish it on 127.0.0.1 only (ports: [\"127.0.0.1:" + port + ":8474\"] in compose)"
		return c
	}
	c.OK = true
	c.Detail = fmt.Sprintf("container %s publishes the control API on 127.0.0.1:%s only", pub.name, port)
	return c
}

// publisher is a local container that publishes a host port.
type publisher struct {
	id, name string
	ports    network.PortMap
	hostNet  bool
}

// publisherOf finds the local container that publishes the control API's
// address, host:port of its URL, nil when none does. Docker hands out host
// ports per address, so another container may publish the same port number
// on another address: only a binding on host's address, or on every
// address, is the one the URL reaches.
func publisherOf(ctx context.Context, insp Inspector, host, port string) (*publisher, error) {
	list, err := insp.ContainerList(ctx, client.ContainerListOptions{})
	if err != nil {
		return nil, err
	}
	for _, ct := range list.Items {
		for _, p := range ct.Ports {
			if strconv.Itoa(int(p.PublicPort)) == port && reaches(p.IP, host) {
				return inspectPublisher(ctx, insp, ct.ID)
			}
		}
	}
	return nil, nil
}

// reaches reports whether a port published on ip answers at host, an
// address or a name (localhost is loopback; any other name could be any
// address, so any binding may be it).
func reaches(ip netip.Addr, host string) bool {
	if !ip.IsValid() || ip.IsUnspecified() {
		return true
	}
	if host == "localhost" {
		return ip.IsLoopback()
	}
	want, err := netip.ParseAddr(host)
	if err != nil {
		return true
	}
	return want.Unmap() == ip.Unmap()
}

func inspectPublisher(ctx context.Context, insp Inspector, id string) (*publisher, error) {
	r, err := insp.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return nil, err
	}
	p := &publisher{id: id, name: strings.TrimPrefix(r.Container.Name, "/")}
	if p.name == "" {
		p.name = id[:min(12, len(id))]
	}
	if hc := r.Container.HostConfig; hc != nil && hc.NetworkMode.IsContainer() {
		// Its ports are published by the container whose network namespace
		// it runs in (the containers provider puts Toxiproxy in Postgres').
		owner, err := inspectPublisher(ctx, insp, hc.NetworkMode.ConnectedContainer())
		if err != nil {
			return nil, fmt.Errorf("the container whose network %s shares: %w", p.name, err)
		}
		owner.name = p.name + " (in the network namespace of " + owner.name + ")"
		return owner, nil
	}
	if r.Container.NetworkSettings != nil {
		p.ports = r.Container.NetworkSettings.Ports
	}
	if r.Container.HostConfig != nil {
		p.hostNet = r.Container.HostConfig.NetworkMode.IsHost()
	}
	return p, nil
}

// checkProxyListen checks where the layer's proxies listen. Loopback is
// safe anywhere. Any other address (0.0.0.0) is safe only inside a
// container whose proxy ports are published on 127.0.0.1 alone (the
// containers provider, the compose devstack): on the host's own network
// it would expose the test plane's Postgres to every machine that can
// reach this one, so it fails, hard, as does any existing proxy of such a
// Toxiproxy that already listens off loopback.
func checkProxyListen(ctx context.Context, l *Layer, insp Inspector) Check {
	c := Check{Name: "proxy listen host"}
	addr, err := listenAddr(l.ProxyListenHost)
	if err != nil {
		c.Detail = fmt.Sprintf("proxy listen host %q: %v", l.ProxyListenHost, err)
		c.Fix = "set " + envvar.ProxyListenHost + "=127.0.0.1"
		return c
	}
	if addr.IsLoopback() {
		return checkLoopbackListen(ctx, l, insp, c)
	}
	fixHost := "set " + envvar.ProxyListenHost + "=127.0.0.1 (Toxiproxy runs on this host's network), or run Toxiproxy in a container that publishes its ports on 127.0.0.1 only"
	if insp == nil {
		c.Detail = fmt.Sprintf("proxies would listen on %s, and no Docker engine answers to show that Toxiproxy runs in a container publishing them on 127.0.0.1 only", l.ProxyListenHost)
		c.Fix = fixHost
		return c
	}
	var pub *publisher
	if l.ToxiproxyContainer != "" {
		pub, err = inspectPublisher(ctx, insp, l.ToxiproxyContainer)
	} else if u, perr := url.Parse(l.ToxiproxyURL); perr == nil {
		pub, err = publisherOf(ctx, insp, u.Hostname(), u.Port())
	}
	if err != nil {
		c.Detail = fmt.Sprintf("find the Toxiproxy container: %v", err)
		c.Fix = "check the Docker engine"
		return c
	}
	if pub == nil || pub.hostNet {
		c.Hard = true
		c.Detail = fmt.Sprintf("proxies would listen on %s and Toxiproxy runs on this host's network (no container publishes its control API): every proxy would be reachable off this host", l.ProxyListenHost)
		if off := offLoopbackProxies(l); len(off) > 0 {
			c.Detail += "; already listening off loopback: " + strings.Join(off, ", ")
		}
		c.Fix = fixHost
		return c
	}
	var bad []string
	for _, p := range l.Ports {
		bad = append(bad, NonLoopbackBindings(pub.ports, strconv.Itoa(p.Port))...)
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		c.Hard = true
		c.Detail = fmt.Sprintf("proxies listen on %s inside container %s, which publishes %s: reachable off this host", l.ProxyListenHost, pub.name, strings.Join(bad, ", "))
		c.Fix = "publish the proxy ports on 127.0.0.1 only (\"127.0.0.1:20000-20031:20000-20031\" in compose)"
		return c
	}
	c.OK = true
	published := 0
	for _, p := range l.Ports {
		published += len(pub.ports[network.MustParsePort(fmt.Sprintf("%d/tcp", p.Port))])
	}
	if published == 0 && len(l.Ports) > 0 {
		host, _, _ := net.SplitHostPort(l.Ports[0].Dial)
		c.Detail = fmt.Sprintf("proxies listen on %s inside container %s, which publishes none of them: legs dial them on the layer's network at %s", l.ProxyListenHost, pub.name, host)
		return c
	}
	c.Detail = fmt.Sprintf("proxies listen on %s inside container %s, which publishes them on 127.0.0.1 only", l.ProxyListenHost, pub.name)
	return c
}

// checkLoopbackListen: a loopback listen is safe anywhere, and works
// unless Toxiproxy runs in a container, whose loopback the ports it
// publishes cannot reach: then every leg would fail to connect.
func checkLoopbackListen(ctx context.Context, l *Layer, insp Inspector, c Check) Check {
	c.OK = true
	c.Detail = fmt.Sprintf("proxies listen on %s: this host only", l.ProxyListenHost)
	if insp == nil || l.Kind == Embedded {
		return c
	}
	var pub *publisher
	var err error
	if l.ToxiproxyContainer != "" {
		pub, err = inspectPublisher(ctx, insp, l.ToxiproxyContainer)
	} else if u, perr := url.Parse(l.ToxiproxyURL); perr == nil {
		pub, err = publisherOf(ctx, insp, u.Hostname(), u.Port())
	}
	if err != nil || pub == nil || pub.hostNet {
		return c
	}
	c.OK = false
	c.Detail = fmt.Sprintf("proxies would listen on %s inside container %s, where the ports it publishes cannot reach them", l.ProxyListenHost, pub.name)
	c.Fix = "set " + envvar.ProxyListenHost + "=0.0.0.0: inside a container that publishes its proxy ports on 127.0.0.1 only, that is still this host only"
	return c
}

// offLoopbackProxies lists the proxies that listen on a non-loopback
// address, as "name on addr".
func offLoopbackProxies(l *Layer) []string {
	proxies, err := l.Toxiproxy().Proxies()
	if err != nil {
		return nil
	}
	var out []string
	for name, p := range proxies {
		host, _, err := net.SplitHostPort(p.Listen)
		if err != nil {
			continue
		}
		if a, err := listenAddr(host); err != nil || !a.IsLoopback() {
			out = append(out, name+" on "+p.Listen)
		}
	}
	sort.Strings(out)
	return out
}

// checkPostgres checks that the test-plane Postgres answers.
func checkPostgres(ctx context.Context, l *Layer) Check {
	c := Check{Name: "test-plane postgres"}
	if l.DB() == nil {
		c.Detail = "no connection to the test-plane Postgres"
		c.Fix = "check " + envvar.PostgresDSN
		return c
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var version string
	if err := l.DB().QueryRow(ctx, `SHOW server_version`).Scan(&version); err != nil {
		c.Detail = fmt.Sprintf("the test-plane Postgres at %s refused us: %s", secret.ScrubString(l.PostgresDSN), secret.ScrubString(err.Error()))
		c.Fix = "check " + envvar.PostgresDSN + " (host, port, user, password, database) and that Postgres is up"
		return c
	}
	// Nothing is created in a service's real database, whatever the DSN
	// said and wherever a pooler's alias led.
	db, err := dbguard.CheckServer(ctx, l.DB(), l.canonical, "the test-plane Postgres")
	if err != nil {
		c.Detail = err.Error()
		c.Fix = guardFix
		return c
	}
	c.OK = true
	c.Detail = fmt.Sprintf("Postgres %s answers (database %s)", version, db)
	if l.direct {
		c.Detail += fmt.Sprintf(" (on the layer's network at %s, not through the published port)", l.PostgresDirect)
	}
	return c
}

func checkLeases(ctx context.Context, l *Layer) Check {
	c := Check{Name: "lease table"}
	if l.DB() == nil {
		c.Detail = "no connection to the test-plane Postgres"
		c.Fix = "check " + envvar.PostgresDSN
		return c
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var exists bool
	if err := l.DB().QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, lease.TableName).Scan(&exists); err != nil {
		c.Detail = fmt.Sprintf("query the test-plane Postgres: %v", err)
		c.Fix = "check " + envvar.PostgresDSN + " and that Postgres is up"
		return c
	}
	if !exists {
		c.Detail = lease.TableName + " does not exist"
		c.Fix = "bring the layer up through contested (it migrates the table)"
		return c
	}
	held, err := l.Leases().Held(ctx)
	if err != nil {
		c.Detail = err.Error()
		c.Fix = "check the test-plane Postgres"
		return c
	}
	actx, acancel := context.WithTimeout(ctx, 5*time.Second)
	defer acancel()
	got, err := l.Leases().Acquire(actx, "fault-preflight")
	if err != nil {
		c.Detail = fmt.Sprintf("lease round trip: %v", err)
		c.Fix = "wait for the holders to finish, or widen " + envvar.ProxyPorts
		if !errors.Is(err, lease.ErrExhausted) {
			c.Fix = "check the test-plane Postgres"
		}
		return c
	}
	if _, err := l.Leases().Release(ctx, got); err != nil {
		c.Detail = fmt.Sprintf("lease round trip: release: %v", err)
		c.Fix = "check the test-plane Postgres"
		return c
	}
	c.OK = true
	c.Detail = fmt.Sprintf("%s: %d ports, %d held; acquired and released port %d (epoch %d)", lease.TableName, len(l.Ports), len(held), got.Port, got.Epoch)
	return c
}
