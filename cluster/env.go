package cluster

import (
	"os"

	"github.com/contested/contested/internal/envvar"
)

// Variables through which `go tool mage cluster-tests` hands its options
// to the rig test it runs (the registry's [cluster] test).
const (
	// EnvTarget is set to 1 by cluster-tests: the rig test runs as the
	// target's.
	EnvTarget = envvar.ClusterTarget
	// EnvReplicas is the target's -replicas (3 to 9).
	EnvReplicas = envvar.ClusterReplicas
	// EnvKeep is the target's -keep (true or false).
	EnvKeep = envvar.ClusterKeep
	// EnvLocal is the target's -local (true or false).
	EnvLocal = envvar.ClusterLocal
)

// UnderTarget reports whether this process runs under cluster-tests. A
// rig test that should run only there (its service is too slow for every
// battery, say) skips itself when it does not.
func UnderTarget() bool { return os.Getenv(EnvTarget) != "" }
