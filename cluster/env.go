package cluster

import "os"

// Variables through which `go tool mage cluster-tests` hands its options
// to the rig test it runs (the registry's [cluster] test).
const (
	// EnvTarget is set to 1 by cluster-tests: the rig test runs as the
	// target's.
	EnvTarget = "CONTESTED_CLUSTER"
	// EnvReplicas is the target's -replicas (3 to 9).
	EnvReplicas = "CONTESTED_CLUSTER_REPLICAS"
	// EnvKeep is the target's -keep (true or false).
	EnvKeep = "CONTESTED_CLUSTER_KEEP"
	// EnvLocal is the target's -local (true or false).
	EnvLocal = "CONTESTED_CLUSTER_LOCAL"
)

// UnderTarget reports whether this process runs under cluster-tests. A
// rig test that should run only there (its service is too slow for every
// battery, say) skips itself when it does not.
func UnderTarget() bool { return os.Getenv(EnvTarget) != "" }
