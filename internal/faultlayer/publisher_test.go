package faultlayer

import (
	"context"
	"net/netip"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// listing is an Inspector over a fixed set of containers, each by name with
// the host addresses it publishes.
type listing map[string][]container.PortSummary

var _ Inspector = listing{}

func (l listing) ContainerList(context.Context, client.ContainerListOptions) (client.ContainerListResult, error) {
	var r client.ContainerListResult
	for id, ports := range l {
		r.Items = append(r.Items, container.Summary{ID: id, Ports: ports})
	}
	return r, nil
}

func (l listing) ContainerInspect(_ context.Context, id string, _ client.ContainerInspectOptions) (client.ContainerInspectResult, error) {
	return client.ContainerInspectResult{Container: container.InspectResponse{Name: "/" + id}}, nil
}

func published(ip string, port uint16) container.PortSummary {
	var a netip.Addr
	if ip != "" {
		a = netip.MustParseAddr(ip)
	}
	return container.PortSummary{IP: a, PrivatePort: 8474, PublicPort: port, Type: "tcp"}
}

// TestThePublisherIsTheOneAtTheURLsAddress: Docker hands out host ports per
// address, so a container publishing the same port number on another
// address (a test's Toxiproxy on the bridge's gateway) is not the one the
// control API's URL reaches.
func TestThePublisherIsTheOneAtTheURLsAddress(t *testing.T) {
	tests := []struct {
		name       string
		containers listing
		host       string
		want       string
	}{
		{"the same port on another address is another container's",
			listing{"exposed": {published("192.168.208.1", 32768), published("127.0.0.1", 32922)}, "layer": {published("127.0.0.1", 32768)}},
			"127.0.0.1", "layer"},
		{"only another address publishes the port", listing{"exposed": {published("192.168.208.1", 32768)}}, "127.0.0.1", ""},
		{"every address", listing{"wide": {published("0.0.0.0", 32768)}}, "127.0.0.1", "wide"},
		{"no address given", listing{"bare": {published("", 32768)}}, "127.0.0.1", "bare"},
		{"localhost is loopback", listing{"exposed": {published("192.168.208.1", 32768)}, "layer": {published("::1", 32768)}}, "localhost", "layer"},
		{"another port", listing{"layer": {published("127.0.0.1", 32769)}}, "127.0.0.1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pub, err := publisherOf(context.Background(), tt.containers, tt.host, "32768")
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if pub != nil {
				got = pub.name
			}
			if got != tt.want {
				t.Errorf("publisherOf(%s:32768) = %q, want %q", tt.host, got, tt.want)
			}
		})
	}
}
