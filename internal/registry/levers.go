package registry

import (
	"slices"

	"github.com/contested/contested/internal/faultlayer/levers"
)

// Lever is one kind of fault a surface can declare as a leg: a view of a
// value of the fault set (levers.All), which is the source of truth for
// which legs a registry may declare. Adding a lever there is the only step
// needed for the registry to accept it.
type Lever struct {
	Name    string
	Meaning string // one line: the adverse condition the lever forces
	// Cluster is true for levers that need the multi-replica rig rather
	// than a single process behind the fault layer.
	Cluster bool
}

func view(l levers.Lever) Lever {
	return Lever{Name: l.Name(), Meaning: l.Meaning(), Cluster: l.Cluster()}
}

// Levers returns every lever the registry accepts, the contract levers
// first and then the cluster levers. The slice is a copy.
func Levers() []Lever {
	var out []Lever
	for _, l := range levers.All() {
		out = append(out, view(l))
	}
	return out
}

// LeverNames returns the accepted lever names in the order of Levers.
func LeverNames() []string { return levers.Names() }

// LookupLever returns the lever with that name.
func LookupLever(name string) (Lever, bool) {
	l, ok := levers.Lookup(name)
	if !ok {
		return Lever{}, false
	}
	return view(l), true
}

// Oracle names known to the toolkit. The registry accepts any non-empty
// oracle (a team may bring its own check); these exist so that reports and
// documentation use one spelling for the common ones.
const (
	OracleExactlyOnce     = "exactly-once"
	OracleConservation    = "conservation"
	OracleNoLostAck       = "no-lost-ack"
	OracleLinearizable    = "linearizable"
	OracleMutualExclusion = "mutual-exclusion"
)

// Oracle is a named machine check that decides whether a surface kept its
// promise under a fault.
type Oracle struct {
	Name    string
	Meaning string
}

var oracles = []Oracle{
	{Name: OracleExactlyOnce, Meaning: "every acknowledged item is applied once: none lost, none twice, none invented"},
	{Name: OracleConservation, Meaning: "a quantity that must not change (the sum of balances) does not change"},
	{Name: OracleNoLostAck, Meaning: "everything that was acknowledged is eventually applied"},
	{Name: OracleLinearizable, Meaning: "the recorded history has a legal sequential order consistent with real time"},
	{Name: OracleMutualExclusion, Meaning: "at most one holder at a time, fences only move forward, stale holders are refused"},
}

// Oracles returns the known oracles. The slice is a copy.
func Oracles() []Oracle { return slices.Clone(oracles) }

// IsKnownOracle reports whether name is one of Oracles. Loading never
// rejects an unknown oracle; tools may use this to flag a likely typo.
func IsKnownOracle(name string) bool {
	return slices.ContainsFunc(oracles, func(o Oracle) bool { return o.Name == name })
}
