// Package envvar names the environment variables of a contested run
// (documented in docs/reference/environment.md): the one definition of each
// name. Reading them, checking them and handing them to a child process is
// internal/runenv's job (the fault layer's own coordinates are read by
// faultlayer.ConfigFromEnv); lower packages only name them in messages.
package envvar

// The run's variables.
const (
	// ResultsDir is the root of all artifacts; default "test-results"
	// under the module root.
	ResultsDir = "CONTESTED_RESULTS_DIR"
	// RunID names the run every record, lease and resource belongs to.
	RunID = "CONTESTED_RUN_ID"
	// Surfaces is the registry file; default contested-surfaces.toml.
	Surfaces = "CONTESTED_SURFACES"
	// Seed replays one seed (bursts and every other seeded choice).
	Seed = "CONTESTED_SEED"
	// Seeds is the seed count of mage contested.
	Seeds = "CONTESTED_SEEDS"
	// Level is the intensity: 1 sunny, 2 stormy, 3 radioactive.
	Level = "CONTESTED_LEVEL"
	// LadderBudget bounds validate's arbitration (a Go duration).
	LadderBudget = "CONTESTED_LADDER_BUDGET"
	// TestTimeout is the battery's go test -timeout (a Go duration, 0 for
	// none; default 30m).
	TestTimeout = "CONTESTED_TEST_TIMEOUT"
	// Shard makes validate run one shard of the battery: "I/N" (as
	// validate -shard=I/N).
	Shard = "CONTESTED_SHARD"
	// HistoryDSN is Postgres for a team's history of runs.
	HistoryDSN = "CONTESTED_HISTORY_DSN"
	// ClusterTarget is set to 1 by cluster-tests: the rig test runs as the
	// target's. ClusterReplicas, ClusterKeep and ClusterLocal hand it the
	// target's -replicas, -keep and -local.
	ClusterTarget   = "CONTESTED_CLUSTER"
	ClusterReplicas = "CONTESTED_CLUSTER_REPLICAS"
	ClusterKeep     = "CONTESTED_CLUSTER_KEEP"
	ClusterLocal    = "CONTESTED_CLUSTER_LOCAL"
	// SigningKey is the path of the private key (go tool mage certkey)
	// validate signs its reuse certificates with: CI's, whose public half
	// the registry's [reuse] trust lists.
	SigningKey = "CONTESTED_SIGNING_KEY"
	// Noise arms a noisy neighbour beside the battery: "cpu:2",
	// "cpu:2,io:1", "off" (the default).
	Noise = "CONTESTED_NOISE"
)

// The fault layer's variables: which provider, and the coordinates of a
// running layer that child processes attach to.
const (
	// Layer picks the provider: auto, containers, embedded or external.
	Layer = "CONTESTED_LAYER"
	// ToxiproxyURL is the control API of an external layer.
	ToxiproxyURL = "CONTESTED_TOXIPROXY_URL"
	// PostgresDSN is the test-plane Postgres of an external layer.
	PostgresDSN = "CONTESTED_PG_DSN"
	// PostgresImage and ToxiproxyImage are the containers provider's images.
	PostgresImage  = "CONTESTED_PG_IMAGE"
	ToxiproxyImage = "CONTESTED_TOXIPROXY_IMAGE"
	// ProxyPorts are the ports Toxiproxy may listen on: "20000-20031" or
	// "20000=127.0.0.1:49153,…".
	ProxyPorts = "CONTESTED_PROXY_PORTS"
	// ProxyListenHost is the host part of proxy listen addresses (external
	// default 127.0.0.1).
	ProxyListenHost = "CONTESTED_PROXY_LISTEN_HOST"
	// PostgresUpstream is Postgres as Toxiproxy reaches it, host:port.
	PostgresUpstream = "CONTESTED_PG_UPSTREAM"
	// PostgresDirect is the test-plane Postgres on a containers layer's
	// private network, ip:port, which the layer's own connections use
	// instead of the published port when this host reaches it there.
	PostgresDirect = "CONTESTED_PG_DIRECT"
	// PostgresBin is a directory holding initdb and postgres, for the
	// embedded layer and the Postgres image.
	PostgresBin = "CONTESTED_PG_BIN"
)

// The replicas the cluster rig runs: -replicas and the [cluster] table
// take a count between them.
const (
	MinReplicas = 3
	MaxReplicas = 9
)
