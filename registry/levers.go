package registry

import "slices"

// Lever names, as written in a surface's legs. The leg API and the armers
// use these constants so that a lever cannot be spelled differently in code
// and in the registry.
const (
	LeverDisconnect     = "disconnect"
	LeverReset          = "reset"
	LeverConfirmTimeout = "confirm-timeout"
	LeverBurst          = "burst"
	LeverPoolExhaustion = "pool-exhaustion"
	LeverCrashAndResume = "crash-and-resume"
	LeverMassRestart    = "mass-restart"
	LeverPartition      = "partition"
)

// Lever is one kind of fault a surface can declare as a leg.
type Lever struct {
	Name    string
	Meaning string // one line: the adverse condition the lever forces
	// Cluster is true for levers that need the multi-replica rig rather
	// than a single process behind the fault layer.
	Cluster bool
}

// levers is the source of truth for which legs a registry may declare.
// Adding a lever here is the only step needed for the registry to accept it.
var levers = []Lever{
	{Name: LeverDisconnect, Meaning: "the proxy is disabled: new connections are refused and live ones dropped"},
	{Name: LeverReset, Meaning: "connections that carry traffic are torn down with a TCP reset"},
	{Name: LeverConfirmTimeout, Meaning: "a write commits but its confirmation arrives too late: an ambiguous outcome"},
	{Name: LeverBurst, Meaning: "a seeded flood of duplicate, shuffled and out-of-order deliveries reaches a consumer"},
	{Name: LeverPoolExhaustion, Meaning: "database connections are held until the victim's pool runs dry"},
	{Name: LeverCrashAndResume, Meaning: "a worker is killed with SIGKILL mid-work and restarted to finish the rest"},
	{Name: LeverMassRestart, Meaning: "every replica is killed and restarted at once", Cluster: true},
	{Name: LeverPartition, Meaning: "replicas are cut off from each other or from the database, then healed", Cluster: true},
}

// Levers returns every lever the registry accepts, the six contract levers
// first and then the cluster levers. The slice is a copy.
func Levers() []Lever { return slices.Clone(levers) }

// LeverNames returns the accepted lever names in the order of Levers.
func LeverNames() []string {
	names := make([]string, len(levers))
	for i, l := range levers {
		names[i] = l.Name
	}
	return names
}

// LookupLever returns the lever with that name.
func LookupLever(name string) (Lever, bool) {
	for _, l := range levers {
		if l.Name == name {
			return l, true
		}
	}
	return Lever{}, false
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
