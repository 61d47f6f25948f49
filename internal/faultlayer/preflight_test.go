package faultlayer

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/contested/contested/internal/runid"
	"github.com/contested/contested/internal/testlog"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/contested/contested/internal/dockerenv"
	"github.com/contested/contested/internal/images"
	"github.com/contested/contested/internal/reap"
)

func TestNonLoopbackBindings(t *testing.T) {
	p := network.MustParsePort("8474/tcp")
	tests := []struct {
		name     string
		bindings []network.PortBinding
		want     int
	}{
		{"loopback v4", []network.PortBinding{{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: "1"}}, 0},
		{"loopback v6", []network.PortBinding{{HostIP: netip.MustParseAddr("::1"), HostPort: "1"}}, 0},
		{"every interface v4", []network.PortBinding{{HostIP: netip.MustParseAddr("0.0.0.0"), HostPort: "1"}}, 1},
		{"every interface v6", []network.PortBinding{{HostIP: netip.MustParseAddr("::"), HostPort: "1"}}, 1},
		{"no host ip means every interface", []network.PortBinding{{HostPort: "1"}}, 1},
		{"a LAN address", []network.PortBinding{{HostIP: netip.MustParseAddr("10.1.2.3"), HostPort: "1"}}, 1},
		{"loopback plus every interface", []network.PortBinding{{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: "1"}, {HostIP: netip.MustParseAddr("0.0.0.0"), HostPort: "2"}}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := NonLoopbackBindings(network.PortMap{p: tt.bindings}, "")
			if len(got) != tt.want {
				t.Errorf("NonLoopbackBindings = %v, want %d entries", got, tt.want)
			}
		})
	}
}

// TestPreflightFailsHardWhenTheControlAPIIsPublishedOffLoopback starts a
// Toxiproxy whose control port is published on 127.0.0.1 and also on a
// non-loopback address, points an external layer at the loopback URL, and
// expects preflight to fail hard, in report-only mode too. The
// non-loopback address is the gateway of a private network of the test's
// own: as non-loopback as 0.0.0.0 for the check, but not reachable from
// off this machine.
func TestPreflightFailsHardWhenTheControlAPIIsPublishedOffLoopback(t *testing.T) {
	cli := dockerenv.Require(t)
	l := shared.get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run := runid.New(time.Now())
	t.Cleanup(func() { reap.Sweep(context.Background(), cli, reap.Run(run), testlog.Writer(t)) })

	nw, err := cli.NetworkCreate(ctx, "contested-"+run+"-exposed", client.NetworkCreateOptions{Driver: "bridge", Labels: reap.Labels(run, "test-network")})
	if err != nil {
		t.Fatal(err)
	}
	ni, err := cli.NetworkInspect(ctx, nw.ID, client.NetworkInspectOptions{})
	if err != nil || len(ni.Network.IPAM.Config) == 0 {
		t.Fatalf("inspect network: %v", err)
	}
	gateway := ni.Network.IPAM.Config[0].Gateway
	if !gateway.IsValid() || gateway.IsLoopback() {
		t.Fatalf("network gateway %v is not a usable non-loopback address", gateway)
	}

	img, err := images.Toxiproxy().Ensure(ctx, cli, "", testlog.Writer(t))
	if err != nil {
		t.Fatal(err)
	}
	tp, err := testcontainers.Run(ctx, img,
		testcontainers.WithCmd("-host=0.0.0.0", "-port=8474"),
		testcontainers.WithLabels(reap.Labels(run, "test-toxiproxy")),
		testcontainers.WithExposedPorts("8474/tcp"),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.PortBindings = network.PortMap{network.MustParsePort("8474/tcp"): {
				{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: "0"},
				{HostIP: gateway, HostPort: "0"},
			}}
		}),
		// wait.ForHTTP would dial whichever binding it picks first; the
		// log line plus a poll of the loopback URL below is unambiguous.
		testcontainers.WithWaitStrategy(wait.ForLog("Starting Toxiproxy HTTP server")),
	)
	if err != nil {
		t.Fatalf("start the exposed Toxiproxy: %v", err)
	}
	insp, err := tp.Inspect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var loopPort string
	for _, b := range insp.NetworkSettings.Ports[network.MustParsePort("8474/tcp")] {
		if b.HostIP.IsLoopback() {
			loopPort = b.HostPort
		}
	}
	if loopPort == "" {
		t.Fatalf("no loopback binding in %+v", insp.NetworkSettings.Ports)
	}

	url := "http://127.0.0.1:" + loopPort
	for i := 0; ; i++ {
		if _, err := fetchVersion(ctx, url, "contested-test"); err == nil {
			break
		} else if i == 100 {
			t.Fatalf("the exposed Toxiproxy does not answer on %s: %v", url, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	exposed := &Layer{Kind: External, ToxiproxyURL: url, PostgresDSN: l.PostgresDSN,
		Ports: l.Ports, pool: l.pool, leases: l.leases}
	p := RunPreflight(ctx, exposed)
	var out strings.Builder
	p.Write(&out)
	t.Log("\n" + out.String())
	if !p.Hard() {
		t.Fatalf("preflight did not fail hard on a control API published on %s:\n%s", gateway, out.String())
	}
	if want := gateway.String(); !strings.Contains(out.String(), want) {
		t.Errorf("preflight output does not name the offending address %s", want)
	}

	// The same layer reached on the loopback binding only is fine when
	// nothing publishes it elsewhere: the check is not just failing always.
	ok := RunPreflight(ctx, l)
	if !ok.OK() {
		var b strings.Builder
		ok.Write(&b)
		t.Errorf("preflight of the shared layer failed:\n%s", b.String())
	}
}
