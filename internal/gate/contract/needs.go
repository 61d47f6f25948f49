package contract

import (
	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/capability"
	"github.com/contested/contested/internal/registry"
)

// layerNeeds is the capability each fault layer provider stands on.
var layerNeeds = map[string]capability.Name{
	"containers": capability.Docker,
	"embedded":   capability.Postgres,
}

// Needs fills in who needs each capability of m: every registered leg
// needs the fault layer's (a Docker engine for containers, the Postgres
// binaries for embedded, nothing of this machine's for external) and its
// surface's needs; the degraded-UX stage, when the registry has one (its
// [degraded] table), needs Chromium and the layer's; the cluster rig, when
// it has one ([cluster]), needs a Docker engine; every test of res that skipped or
// failed saying it lacked a capability needs that one; the battery needs
// the cores and the disk.
func Needs(m capability.Matrix, reg *registry.Registry, layer string, res *battery.Result) {
	base, hasBase := layerNeeds[layer]
	for _, s := range reg.Surfaces {
		for _, leg := range s.Legs {
			who := s.ID + "/" + leg
			if hasBase {
				m.Need(base, who)
			}
			for _, n := range s.Needs {
				m.Need(capability.Name(n), who)
			}
		}
	}
	if reg.Degraded.Line > 0 {
		m.Need(capability.Chromium, "stage degraded")
		if hasBase {
			m.Need(base, "stage degraded")
		}
	}
	if reg.Cluster != nil {
		m.Need(capability.Docker, "stage cluster-tests")
	}
	if res != nil {
		for _, t := range res.Tests {
			for _, n := range t.Missing {
				m.Need(capability.Name(n), t.ID())
			}
		}
	}
	m.Need(capability.Cores, "battery")
	m.Need(capability.Disk, "battery")
}
