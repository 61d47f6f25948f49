package faultlayer

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
)

// ProxyPort is one leasable Toxiproxy listen port and the address a test
// dials to reach it. The two differ when Toxiproxy runs in a container:
// it listens on 0.0.0.0:20000 inside, and the engine publishes that on a
// random 127.0.0.1 port outside.
type ProxyPort struct {
	Port   int    // the lease key: the port Toxiproxy listens on
	Listen string // the listen address handed to Toxiproxy, host:port
	Dial   string // the address the test dials, host:port
}

// Limits on a proxy port set.
const (
	MinProxyPorts = 2
	MaxProxyPorts = 256
)

// reservedPorts are the fault layer's own ports inside its containers; a
// proxy port range must not overlap them.
var reservedPorts = map[int]string{8474: "the Toxiproxy control API", 5432: "Postgres"}

// ParseProxyPorts parses CONTESTED_PROXY_PORTS. Items are separated by
// commas; each is a port ("20000"), an inclusive range ("20000-20015"), or
// a port with the address a test dials for it ("20000=127.0.0.1:49153").
// Listen addresses get listenHost, and dial addresses without an explicit
// mapping get dialHost and the same port number.
func ParseProxyPorts(spec, listenHost, dialHost string) ([]ProxyPort, error) {
	var out []ProxyPort
	seen := map[int]bool{}
	add := func(p int, dial string) error {
		if p < 1 || p > 65535 {
			return fmt.Errorf("port %d is out of range 1-65535", p)
		}
		if what, ok := reservedPorts[p]; ok {
			return fmt.Errorf("port %d overlaps %s; pick a range that avoids 5432 and 8474", p, what)
		}
		if seen[p] {
			return fmt.Errorf("port %d is listed twice (ranges overlap)", p)
		}
		seen[p] = true
		if dial == "" {
			dial = net.JoinHostPort(dialHost, strconv.Itoa(p))
		}
		out = append(out, ProxyPort{Port: p, Listen: net.JoinHostPort(listenHost, strconv.Itoa(p)), Dial: dial})
		return nil
	}
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if l, dial, ok := strings.Cut(item, "="); ok {
			p, err := strconv.Atoi(strings.TrimSpace(l))
			if err != nil {
				return nil, fmt.Errorf("%q: %q is not a port number", item, l)
			}
			if _, _, err := net.SplitHostPort(strings.TrimSpace(dial)); err != nil {
				return nil, fmt.Errorf("%q: dial address %q is not host:port", item, dial)
			}
			if err := add(p, strings.TrimSpace(dial)); err != nil {
				return nil, err
			}
			continue
		}
		lo, hi, isRange := strings.Cut(item, "-")
		a, err := strconv.Atoi(strings.TrimSpace(lo))
		if err != nil {
			return nil, fmt.Errorf("%q is not a port, a range lo-hi or port=host:port", item)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil {
				return nil, fmt.Errorf("%q is not a port, a range lo-hi or port=host:port", item)
			}
			if b < a {
				return nil, fmt.Errorf("range %q runs backwards", item)
			}
			if b-a+1 > MaxProxyPorts {
				return nil, fmt.Errorf("range %q has %d ports; at most %d are published", item, b-a+1, MaxProxyPorts)
			}
		}
		for p := a; p <= b; p++ {
			if err := add(p, ""); err != nil {
				return nil, err
			}
		}
	}
	if len(out) < MinProxyPorts {
		return nil, fmt.Errorf("%d proxy ports is too few: legs lease one each and preflight needs one; give at least %d", len(out), MinProxyPorts)
	}
	if len(out) > MaxProxyPorts {
		return nil, fmt.Errorf("%d proxy ports is too many; at most %d", len(out), MaxProxyPorts)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Port < out[j].Port })
	return out, nil
}

// FormatProxyPorts renders ports in the explicit port=dial form, which
// ParseProxyPorts reads back; it is how a layer hands its ports to child
// processes.
func FormatProxyPorts(ports []ProxyPort) string {
	parts := make([]string, len(ports))
	for i, p := range ports {
		parts[i] = fmt.Sprintf("%d=%s", p.Port, p.Dial)
	}
	return strings.Join(parts, ",")
}

func portNumbers(ports []ProxyPort) []int {
	out := make([]int, len(ports))
	for i, p := range ports {
		out[i] = p.Port
	}
	return out
}
