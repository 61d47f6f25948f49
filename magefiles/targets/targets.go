// Package targets defines contested's Mage targets. Import it from a
// magefile with //mage:import to reuse them in another repository; give
// them their hyphenated names with an Aliases map, as this repository's
// magefiles/magefile.go does.
//
// Exit codes: 0 green; 1 red or refused (also: stopped by a signal, or an
// internal error such as a crash); 2 usage or bad input; 3 cannot run (the
// fault layer is unhealthy).
//
// Each target runs its command in a worker process of its own (see
// command.Supervise): Ctrl-C or SIGTERM stops it, and it tears
// down what it started; a second signal ends it at once.
package targets

// Help text keeps its line breaks (go tool mage -h <target>).
//mage:multiline

import (
	"context"
	"strings"

	"github.com/contested/contested/internal/command"
)

// FaultPreflight (fault-preflight) checks the fault layer. Toxiproxy must
// answer /version, its control API be published on loopback only, its
// proxies listen where only this host reaches them, the test-plane Postgres
// answer, and the port-lease table work. It checks the layer CONTESTED_TOXIPROXY_URL and CONTESTED_PG_DSN
// name, or brings one up (CONTESTED_LAYER) to check and tears it down.
//
// Report-only by default: failures are printed and the exit code is 0,
// except for a proven exposure off this host (control API published off
// loopback, proxies listening off loopback on the host's network), which
// exits 3 in any mode. With -required any failed check exits 3.
//
//	go tool mage fault-preflight
//	go tool mage fault-preflight -required
func FaultPreflight(ctx context.Context, required *bool) error {
	return command.Supervise(ctx, "fault-preflight", command.PreflightOptions{Required: on(required)})
}

// Validate is the paired run that says whether the module's services kept
// their contracts under faults. It brings the fault layer up, runs
// fault-preflight -required, purges the old records and writes a fresh
// stamp, runs the battery (go test ./...), verifies the six gate phases,
// judges each registered surface by contested's rules, and walks the
// arbitration ladder for every failing test, which gets an owner and an
// action.
//
// With -shard=I/N (or CONTESTED_SHARD=I/N) it runs shard I of N: its share
// of the battery (split by package, then by test, balanced by
// test-results/shards/timings.json when present) with its own layer, stamp
// and run id under the run id all the shards share, and writes shard.json
// beside validate.json. program-gate -merge certifies the shards as one.
//
// Outside CI it reuses what a change did not reach: a package or surface
// whose inputs' digest matches a certificate of an earlier GREEN,
// certified run is not run again, and the output says from which run it
// was reused. A surface whose inputs changed runs over its hardening
// seeds. Under CI=true everything runs unless -reuse is given; -full runs
// everything anywhere.
//
// With -plan FILE it runs what a plan (plan.json, or the plan.md beside
// it, from go tool mage plan) names: the packages of its surfaces at the
// plan's level, then each of those surfaces over its hardening seeds. It
// refuses, exit 2, a plan whose scenario lacks an oracle or a budget: go
// back to plan rather than improvise them. Every validate writes
// findings.md and findings.json beside validate.json: each claim's
// verdict and the budget it met, the evidence chain of each serious claim,
// who is to blame for each failure (SUT, harness, checker, environment),
// the claims no leg reached, the missing claims, and a confidence
// statement a reviewer can sign.
//
//	go tool mage validate
//	go tool mage validate -full
//	go tool mage validate -shard=2/3
//	go tool mage validate -plan test-results/plan.json
func Validate(ctx context.Context, shard *string, reuse, full *bool, plan *string) error {
	return command.Supervise(ctx, "validate", command.ValidateOptions{Shard: value(shard), ShardSet: shard != nil,
		Reuse: on(reuse), Full: on(full), Plan: value(plan), PlanSet: plan != nil})
}

// ProgramGate (program-gate) runs fault-preflight -required, then the six
// verification phases over whatever fault records are on disk. It is for
// triage after a battery, never a substitute for validate.
//
// With -merge DIR... it certifies the shards of one split battery as one
// run instead (their results directories, as validate -shard=I/N wrote
// them): every shard of 1..N present once, one shared run id, every shard's
// records intact and postdating its own stamp, every test owned by exactly
// one shard; then the six phases and the surfaces' verdicts over the
// union, in this module's results directory. It needs no fault layer.
//
//	go tool mage program-gate
//	go tool mage program-gate -merge shards/1 shards/2 shards/3
func ProgramGate(ctx context.Context, merge *string) error {
	opts := command.ProgramGateOptions{MergeSet: merge != nil}
	if merge != nil {
		opts.Merge = splitMerge(*merge)
	}
	return command.Supervise(ctx, "program-gate", opts)
}

// mergeSep joins the directories after -merge into Mage's one -merge=
// value (see foldMerge): a newline, which no directory name a CI job gives
// holds.
const mergeSep = "\n"

// splitMerge is the directories of a folded -merge value.
func splitMerge(v string) []string {
	var dirs []string
	for _, d := range strings.Split(v, mergeSep) {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// Plan writes the test plan of a change: the claims it puts at risk, how
// each could fail, what tests them, and what nothing does.
//
// By default the change is the diff against the merge base of HEAD with
// the default branch (origin's HEAD, else main, else master), uncommitted
// and untracked files included; -since REV compares with REV instead;
// -all plans for every claim of the registry, whatever changed. It writes
// plan.md (reads on a code host) and plan.json under the results
// directory:
//
//   - the blast radius: files touched, the packages whose test binaries
//     are built from them (the link graph the reuse digest uses), the
//     surfaces whose tests those packages declare, and their claims; a
//     docs-only change, or one that reaches no surface, says so and stops;
//   - hypotheses: for each claim at risk, the pitfalls of the catalog that
//     could falsify it (each with the levers that can force it and the
//     models that can check it), and those judged not to apply, with why;
//   - the coverage matrix: claim × hypothesis × the legs and tests that
//     exercise it × their last verdict in the flake history × the gap (no
//     test, no fault variant, oracle too weak, smoke only);
//   - the level (2 for lease, fence or lock code, 3 across [plan] spread
//     surfaces, and why) and the capabilities its levers need;
//   - a scenario per gap, named after the claim it tries to falsify:
//     workload, faults, oracle, landing evidence, ambiguous outcomes, the
//     three budgets, a target test file and a Go skeleton.
//
// With -author it writes each skeleton at its target path, never over an
// existing file, and commits nothing. Exit 0 (a plan is advice, not a
// verdict); 2 when -since names no commit, the module is not in git
// (give -all) or the registry is bad.
//
//	go tool mage plan
//	go tool mage plan -since main
//	go tool mage plan -all
//	go tool mage plan -author
func Plan(ctx context.Context, since *string, all, author *bool) error {
	return command.Supervise(ctx, "plan", command.PlanOptions{Since: value(since), All: on(all), Author: on(author)})
}

// Contested runs a surface's fault legs in isolation over its seed budget
// and gives its contract verdict. The verdict is GREEN, RED, INCONCLUSIVE
// or CANNOT RUN (NOT AT THIS LEVEL when no leg runs at this level). The
// argument is a surface id from contested-surfaces.toml, or "all".
//
// Each leg gets one of ten verdicts (PASS-smoke, PASS-hardening,
// FAIL-reproducible, FAIL-nondeterministic, INCONCLUSIVE-env,
// INCONCLUSIVE-oracle-too-weak, INCONCLUSIVE-fault-not-proven,
// PARTIAL-surface, PARTIAL-model, NOT-RUN) with its evidence, or
// NOT-AT-LEVEL when the registry's levels key does not run it at this
// CONTESTED_LEVEL (left out of the surface's verdict); a RED leg comes with
// its seed and replay command. CONTESTED_SEEDS sets the seed
// count (default: the surface's hardening budget), CONTESTED_SEED replays
// one seed, CONTESTED_LEVEL sets the intensity (1 sunny, 2 stormy, 3
// radioactive). Exit 0 GREEN, 1 RED or INCONCLUSIVE, 3 CANNOT RUN.
//
//	go tool mage contested ledger.store
//	CONTESTED_SEEDS=5 go tool mage contested all
func Contested(ctx context.Context, surface string) error {
	return command.Supervise(ctx, "contested", command.ContestedOptions{Surface: surface})
}

// Arbitrate walks the arbitration ladder for a failing test and ends with
// an owner and an action. Step 1 maps the test to its surface (a test no
// surface lists walks the ladder too, with no contract to run); step 2
// runs fault-preflight -required (failure: CANNOT RUN, owner fault layer,
// exit 3); step 3 reruns the test alone, with its leg's recorded seed, to
// tell flaky from consistent, reruns a test that passes alone beside a
// noisy neighbour, and runs the surface's contract in isolation: RED →
// owner component, with leg, seed and replay command; GREEN → owner test
// author (fix the test without loosening it), or capacity when it fails
// only beside the neighbour or failed while the machine was saturated. The flake history is shown as context, never
// a vote. A test whose package fails before it runs (does not build,
// TestMain exits) is the test author's, exit 1. Saves ladder/<test>.json
// and ladder/<test>.md, a ready-to-paste fix: issue. A test that did not
// fail (passed every rerun, and did not fail in the last validate run) has
// nothing to arbitrate: exit 0, nothing saved; an unknown test exits 2. A
// test the last validate run on this code saw pass is answered from that
// run in seconds (NO FAILURE), with no layer and no rerun, unless -rerun
// is given.
//
//	go tool mage arbitrate TestConsumerContract/burst
//	go tool mage arbitrate TestConsumerContract/burst -rerun
func Arbitrate(ctx context.Context, test string, rerun *bool) error {
	return command.Supervise(ctx, "arbitrate", command.ArbitrateOptions{Test: test, Rerun: on(rerun)})
}

// ClusterTests (cluster-tests) runs the module's service as several
// replicas behind Toxiproxy with Postgres and contests it with kill legs.
// The legs: one replica killed mid-stream and restarted, every replica
// killed at once and restarted, one replica cut off from the database and
// healed. The
// service is the one the registry's [cluster] table names: its Go test,
// which configures the rig for the service (cluster.Service), runs with
// this target's options. The rig owns the lifecycle: sweep stale rigs,
// build the service (static on scratch, tagged for the rig), bring
// everything up on a private network and wait for every replica's health
// endpoint, run the legs one after another, write test-results/cluster/
// (ps.txt, logs.txt, legs.json, the legs' fault records) and tear down, on
// Ctrl-C and SIGTERM too. Without Docker the replicas run as local
// processes.
//
//	go tool mage cluster-tests
//	go tool mage cluster-tests -replicas=5 -keep    # keep the rig up; the next run reaps it
//	go tool mage cluster-tests -local               # replicas as local processes
func ClusterTests(ctx context.Context, replicas *int, keep *bool, local *bool) error {
	opts := command.ClusterOptions{Keep: on(keep), Local: on(local)}
	if replicas != nil {
		opts.Replicas = *replicas
	}
	return command.Supervise(ctx, "cluster-tests", opts)
}

// Images makes sure the fault layer's images are in the Docker engine,
// building them locally when they cannot be pulled. Toxiproxy is compiled
// from the Go module go.mod pins, on scratch; Postgres is built from this
// machine's Postgres binaries (/usr/lib/postgresql/<major>/bin: apt-get
// install postgresql), and only where there are none, with debootstrap
// from the host's apt mirror (needs root). Run it once on an air-gapped CI
// machine before the battery.
func Images(ctx context.Context) error {
	return command.Supervise(ctx, "images", nil)
}

// Sweep removes what killed runs left behind on this host: containers,
// networks and volumes labelled by contested whose owner process is gone,
// and embedded layers' data directories. Nothing unlabelled is touched.
func Sweep(ctx context.Context) error {
	return command.Supervise(ctx, "sweep", nil)
}

// Bench runs the project's benchmarks and writes a table and
// test-results/bench/bench.json. It measures bring-up per provider (cold
// image builds and warm), per-leg overhead (p50, p99), proxied against direct and
// against a bare Toxiproxy binary in front of the same Postgres, gate
// verification at 10k and 100k records, lease throughput with 16 clients,
// porcupine check time for a few thousand operations; then, when -filter
// selects AdopterValidate, it times `go tool mage validate` against `go
// test -count=1 ./...` in a copy of testdata/adopter (warm when a warm
// layer is up). Figures are ratios measured in the same run, each goal
// beside its figure, not absolute promises. Exit 0 when every benchmark
// ran (goals missed included), 1 when one failed.
//
//	go tool mage bench
//	go tool mage bench -benchtime=10x -filter=Verify
//	go tool mage bench -filter=AdopterValidate
func Bench(ctx context.Context, benchtime *string, filter *string) error {
	return command.Supervise(ctx, "bench", command.BenchOptions{Benchtime: value(benchtime), Filter: value(filter)})
}

// Mutants runs mutation testing over package patterns and reports each
// package's kill rate. It uses go-gremlins/gremlins, pinned as a tool in
// go.mod (go get -tool github.com/go-gremlins/gremlins/cmd/gremlins@v0.6.0);
// the patterns default to the registry's [mutants] packages, else the
// packages its surfaces name. It brings the fault layer up (fault-preflight
// -required first: exit 3 if it fails) and runs each package's tests with
// the battery's environment, once per mutant, in a copy of the module.
//
// Per package it reports killed, survived, timed out, not covered and not
// viable mutants, each survivor's file:line:column and mutation, and the
// kill rate of covered mutants: (killed + timed out) / (killed + survived +
// timed out).
// Survivors [[mutants.accepted]] lists (equivalent mutants, each with a
// reason) are listed apart and left out of the rate. Writes
// test-results/mutants/mutants.json. Exit 1 when the kill rate over all
// packages is below [mutants] threshold or a package cannot be measured
// (its tests fail unmutated); 2 on a bad pattern or registry; 3 when the
// fault layer or gremlins cannot run.
//
//	go tool mage mutants
//	go tool mage mutants ./internal/faultlayer/lease ./internal/...
//	go tool mage mutants -packages=./internal/faultlayer/lease,./faultrecord
func Mutants(ctx context.Context, packages *string) error {
	return command.Supervise(ctx, "mutants", command.MutantsOptions{Patterns: splitList(value(packages))})
}

// History prints the flake history of a test, or of every test that
// failed in its last runs. validate, contested and arbitrate append to it
// (test-results/history/outcomes.jsonl). For a test (TestX, TestX/leg or
// pkg.TestX) it prints how many of its last runs failed, the first failing run and
// its commit, each leg's count with the seeds that failed, and one mark per
// run (. passed, F failed); without a test, every test that failed in its
// last runs, and draws their trends in test-results/history/history.html
// (inline SVG: one column per run, the commit under each). -last sets how
// many runs (default 20). CONTESTED_HISTORY_DSN reads a team's database
// instead. arbitrate prints the same trend before it walks the ladder.
//
//	go tool mage history
//	go tool mage history TestStockContract
//	go tool mage history -test=TestStockContract -last=50
func History(ctx context.Context, test *string, last *int) error {
	opts := command.HistoryOptions{Test: value(test)}
	if last != nil {
		opts.Last = *last
	}
	return command.Supervise(ctx, "history", opts)
}

// Layer manages the warm layer of the pre-push loop. "up" starts a
// containers fault layer that outlives the command (a stale one, whose
// images changed or whose containers stopped, is recreated), "status"
// prints what runs, its coordinates, age and images, "down" removes it.
// While it is up, validate, contested, arbitrate and go test attach to it
// after the required preflight instead of bringing up a layer of their own
// (falling back to one when it fails), and clean what each run leased in
// it. Its coordinates are kept in the user's cache directory
// (warm-layer.json under contested/).
//
//	go tool mage layer up
//	go tool mage layer status
//	go tool mage layer down
func Layer(ctx context.Context, action string) error {
	return command.Supervise(ctx, "layer", command.LayerOptions{Action: action})
}

// Certkey makes the key pair CI signs its reuse certificates with, so that
// every developer's validate reuses what CI certified. In DIR (made, mode
// 0700, if missing; never inside the module, where the private key could
// be committed) it writes contested-signing.key, the private key (mode
// 0600), and contested-signing.pub, the public key, and prints the public
// line, ed25519:…, to list in the registry's [reuse] trust. CI names the
// private key in CONTESTED_SIGNING_KEY. It never replaces a key: exit 2
// when one is there.
//
//	go tool mage certkey ~/contested-ci-key
func Certkey(ctx context.Context, dir string) error {
	return command.Supervise(ctx, "certkey", command.CertkeyOptions{Dir: dir})
}

// splitList is a comma-separated option's non-empty items.
func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Degraded runs the degraded-UX stage: a web front walked by headless Chromium under standing faults.
//
// The registry's web front (its [degraded] table; by default the ledger's,
// go build ./examples/ledger/cmd/ledger, "ledger web") is recreated with
// its database behind a standing Toxiproxy pass-through
// (contested-degraded-<port>) of the fault layer, and a real headless
// Chromium (Debian's chromium: apt-get install chromium) walks a matrix of
// flows (load the page, submit a transfer, reload after submitting) under
// conditions (backend-down, latency above the page's timeout, reset
// mid-submit, pool-exhausted). Each cell asserts what the user sees (a
// banner or an outcome, never a 5xx page, an answer within the front's
// timeout + 1s) and what the database holds afterwards (a confirmed
// transfer applied exactly once, a pending one at most once, no money
// moved under another key), and writes one fault record of class ux
// (injector: the proxy or toxic read back; victim: what the browser saw).
//
// It holds the stage lock: layer down, layer up and validate wait for it.
// A crashed stage's overlay (marker test-results/degraded/overlay.json) is
// restored by the next stage or validate; a failed restore keeps the
// marker and prints how to escape by hand. Screenshots of failing cells
// (of every cell with -keep) go to test-results/degraded/, linked from
// test-results/fault/degraded-report.html. Exit 0 every cell passed; 1 a
// cell failed or its fault did not fire; 2 bad options or registry; 3 the
// fault layer, Chromium or a restore cannot run.
//
//	go tool mage degraded
//	go tool mage degraded -keep
//	go tool mage degraded -cells='submit/*,load/latency'
func Degraded(ctx context.Context, keep *bool, cells *string) error {
	return command.Supervise(ctx, "degraded", command.DegradedOptions{Keep: on(keep), Cells: splitList(value(cells))})
}

// on is a boolean option's value: false when it was not given.
func on(b *bool) bool { return b != nil && *b }

// value is a string option's value: "" when it was not given.
func value(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
