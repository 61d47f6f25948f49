// Package registry loads contested-surfaces.toml, the list of surfaces and
// their contested contracts, strictly: a registry that loads is one every
// other part of contested (the leg API, the gate, the arbitration ladder)
// can trust without checking it again.
//
// # File format
//
//	schema = 1                       # required; the only version this package reads
//
//	[gate]                           # optional
//	recording_classes = ["store"]    # each must have fired for a run to be certified
//	self_tests = ["TestDSNGuardRefusesCanonicalDB"]  # must stay in the test inventory
//
//	[guard]                          # optional: PgFaultArmer's canonical-database guard
//	canonical_databases = ["postgres", "ledger"]
//
//	[[surface]]                      # at least one
//	id = "ledger.store"              # unique; letters, digits, '.', '_', '-'; not "all"
//	class = "store"                  # recording class
//	owner = "ledger-team"
//	behavior = "an acknowledged transfer is applied exactly once"
//	oracle = "exactly-once"          # any non-empty name; see Oracles for the known ones
//	legs = ["reset", "confirm-timeout"]  # at least one, each from Levers
//	tests = ["TestStoreContract"]    # at least one; a test name or a subtest path
//	package = "./examples/ledger/store"  # optional: where the tests live
//	levels = { reset = [2, 3] }      # optional: legs that run only at some CONTESTED_LEVELs
//
//	[surface.budget]                 # optional
//	smoke = { seeds = 1 }
//	hardening = { seeds = 3, faults = 5, duration = "2m" }
//	release = { not_provided = "no soak rig yet", revisit_when = "the nightly stage exists" }
//
//	[[surface.claims]]               # optional: the promise as numbered claims (claims.go)
//	id = "C1"                        # C1, C2, ... in file order
//	text = "an acknowledged transfer is applied at most once"
//	category = "idempotency"         # one of Categories
//	legs = ["reset"]                 # optional: the legs that contest it
//	not_applicable = { "gap-between-commits" = "one transaction" }  # optional: pitfalls ruled out
//
//	[cluster]                        # optional: the module's service in the cluster rig
//	package = "./examples/ledger"    # the Go package of the rig's test, as go test takes it
//	test = "TestClusterRig"          # the top-level test that runs the rig
//
//	[mutants]                        # optional: mage mutants
//	threshold = 90                   # lowest kill rate of covered mutants, percent, 0-100
//	packages = ["./internal/faultlayer/lease"]  # optional; default the surfaces' packages
//
//	[[mutants.accepted]]             # optional: an equivalent surviving mutant
//	file = "internal/gate/contract/battery.go"  # from the module root
//	line = 42                        # line and/or mutation; column optional
//	mutation = "CONDITIONALS_NEGATION"
//	reason = "why no test can tell it from the original"
//
//	[battery]                        # optional: how validate runs go test
//	packages_per_core = 2            # packages at once, per core (go test -p); 1-8
//
//	[plan]                           # optional: how go tool mage plan picks a level (plan.go)
//	lease_paths = ["*lease*"]        # lease, fence or lock code: level 2
//	spread = 3                       # a change reaching this many surfaces: level 3
//
// The keys docs/reference/registry.md lists are a contract; the others (guard, package,
// budget, levels, cluster, mutants, degraded, battery, claims' legs and
// not_applicable, plan) are additions. Every other key, at any
// level, is an error.
//
// # Budgets
//
// A tier may carry seeds and faults (whole numbers from 1) and duration (a
// Go duration such as "90s"). Hardening must be strictly stronger than smoke
// on every dimension both tiers declare; seeds always count, because a
// missing seeds takes the tier's default. Release is either a tier that is
// at least as strong as hardening wherever both declare a dimension, or a
// disclosure: not_provided and revisit_when, both stated ("TBD" and other
// placeholders are refused, because reports quote them verbatim).
//
// Defaults: a surface without [surface.budget] gets smoke 1 seed, hardening
// 3 seeds, and release not provided with the reason "no release budget
// declared", to be revisited when "a release budget is declared in the
// registry". A budget that leaves a tier out gets that tier's default; a
// smoke or hardening tier that leaves seeds out gets 1 or 3 seeds.
//
// # Levels
//
// A leg runs at every level (1 sunny, 2 stormy, 3 radioactive) unless the
// surface's levels table lists it: then it runs only at the levels listed.
// Each key must be one of the surface's legs and each value a non-empty
// array of distinct levels from 1 to 3. A leg not run at the current level
// is reported as such by the verdict code, never as NOT-RUN.
//
// # Cluster
//
// The [cluster] table names the Go test that runs the module's service in
// the cluster rig (a test that calls cluster.Run, usually through
// clustertest.Run, with the service's implementation of cluster.Service).
// `go tool mage cluster-tests` runs exactly that test, `go test -run
// '^<test>$' <package>` in the module root, with the target's options in
// its environment. Both keys are required; package is one package (no
// "..."), test a top-level test name. CheckTests requires the test to be in
// the inventory. The test need not be a surface's: a module whose rig is
// too slow for every battery keeps it out of [[surface]] and lets the test
// skip outside the target (cluster.UnderTarget).
//
// # Mutants
//
// The [mutants] table configures `mage mutants` (internal/mutants). threshold
// is a number from 0 to 100: the lowest kill rate, in percent, of covered
// mutants ((killed + timed out) / (killed + survived + timed out)) over all
// the packages mutated; without it mutants only reports. packages are patterns from the
// module root ("." or "./dir", optionally "/..."); without them mutants
// takes the distinct package keys of the surfaces. Each [[mutants.accepted]]
// names surviving mutants that no test can tell from the original code: a
// file (a non-test .go file from the module root), a line, a mutation type
// (MutationTypes) or both, optionally a column, and a reason (required, no
// placeholder). An accepted survivor is listed with its reason and left out
// of the rate; an entry that matches no survivor of a mutated package is
// reported as stale.
//
// # Errors
//
// Every problem names the file, line and (when known) column, says what is
// wrong and what to do, in the form
//
//	contested-surfaces.toml:12:1: unknown key "legz" in [[surface]] (known keys: ...); did you mean "legs"?
//
// Parse and Load report all the problems they find in one pass, as an
// ErrorList sorted by position; it matches ErrInvalid with errors.Is. A TOML
// syntax error stops the pass, since nothing after it can be read reliably.
// The checks that need more than the file (CheckTests against the test
// inventory, CheckRecord against a fault record) use the same Error type
// with their own sentinels.
package registry
