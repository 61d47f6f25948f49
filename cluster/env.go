package cluster

import (
	"os"

	"github.com/contested/contested/internal/envvar"
)

// UnderTarget reports whether this process runs under cluster-tests
// (which hands its options to the rig test through CONTESTED_CLUSTER and
// its siblings). A rig test that should run only there (its service is
// too slow for every battery, say) skips itself when it does not.
func UnderTarget() bool { return os.Getenv(envvar.ClusterTarget) != "" }
