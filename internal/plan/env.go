package plan

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/contested/contested/internal/capability"
	"github.com/contested/contested/internal/faultlayer/levers"
)

// requirementText says what each capability must be for a plan.
var requirementText = map[capability.Name]string{
	capability.Docker:   "a Docker engine that answers: the containers fault layer (Toxiproxy and Postgres), and the cluster rig",
	capability.Postgres: "initdb and postgres binaries: the embedded fault layer, where no Docker engine is",
	capability.Chromium: "a Chromium or Chrome binary on PATH: a surface whose legs drive a browser",
	capability.Cores:    "the CPUs the battery runs on",
	capability.Disk:     "free space under the results directory for the test binaries and reports",
}

// environment is what the plan's levers need: each lever of a claim at
// risk or a scenario needs the fault layer (a Docker engine, or the
// Postgres binaries of the embedded layer), a cluster lever the rig (a
// Docker engine, or -local), and each surface its own needs. When in.Probe
// is set, this machine is asked for each.
func environment(in Input, p *Plan) []Requirement {
	need := map[capability.Name][]string{}
	// byNeeds are, for each capability, the surfaces whose registry needs
	// name it and the legs of each the plan runs: what it stops when it is
	// missing.
	byNeeds := map[capability.Name]map[string][]string{}
	var order []capability.Name
	add := func(n capability.Name, who string) {
		if _, ok := need[n]; !ok {
			order = append(order, n)
		}
		if !slices.Contains(need[n], who) {
			need[n] = append(need[n], who)
		}
	}
	use := func(surface, lever string) {
		who := surface + "/" + lever
		l, ok := levers.Lookup(lever)
		switch {
		case ok && l.Cluster():
			add(capability.Docker, who)
		default:
			add(capability.Docker, who)
			add(capability.Postgres, who)
		}
		if s, ok := in.Registry.Surface(surface); ok {
			for _, n := range s.Needs {
				add(capability.Name(n), who)
				if byNeeds[capability.Name(n)] == nil {
					byNeeds[capability.Name(n)] = map[string][]string{}
				}
				if !slices.Contains(byNeeds[capability.Name(n)][surface], lever) {
					byNeeds[capability.Name(n)][surface] = append(byNeeds[capability.Name(n)][surface], lever)
				}
			}
		}
	}
	for _, c := range p.Claims {
		for _, leg := range c.Legs {
			use(c.Surface, leg)
		}
	}
	for _, s := range p.Scenarios {
		use(s.Surface, s.Lever)
	}
	if len(order) == 0 {
		return []Requirement{}
	}
	add(capability.Cores, "the battery")
	add(capability.Disk, "the battery")
	out := []Requirement{}
	for _, n := range order {
		r := Requirement{Name: n, Requirement: requirementText[n], NeededBy: need[n]}
		switch n {
		case capability.Docker:
			r.Alternative = "postgres: the embedded layer (CONTESTED_LAYER=embedded) for every lever but the cluster rig's, which can run its replicas as local processes (cluster-tests -local)"
		case capability.Postgres:
			r.Alternative = "docker: the containers layer"
		}
		if r.Requirement == "" {
			r.Requirement = string(n)
		}
		if in.Probe != nil {
			c := in.Probe(n)
			r.Probed, r.Present, r.Version, r.Source, r.Provide = true, c.Present, c.Version, c.Source, c.Provide
			if !c.Present {
				for _, id := range slices.Sorted(maps.Keys(byNeeds[n])) {
					r.NotRun = append(r.NotRun, fmt.Sprintf("surface %s (%s)", id, strings.Join(byNeeds[n][id], ", ")))
				}
			}
		}
		out = append(out, r)
	}
	return out
}
