// Package shard splits a battery across machines and certifies the union
// as one run.
//
// A shard is one of N validate runs (validate -shard=I/N): [Split] gives
// it a stable share of the module's tests, by package and then by test,
// balanced by the durations of a previous run when a timing file is
// present. The shard runs its share with its own fault layer, gate stamp
// and run id under a run id all the shards share, verifies its own records
// against its own stamp, and writes a [Manifest] (shard.json) that says
// what it owned, which stamp it wrote, and a digest of every record it
// kept.
//
// [Merge] (program-gate -merge DIR...) certifies the union: every shard of
// 1..N present exactly once, one shared run id, each shard's records
// postdating its own stamp and matching its manifest's digests, every test
// of the inventory owned by exactly one shard, and then the six phases over
// the union's records under a stamp of the merge's own, which the merge
// consumes: the union certifies once, and so does each shard (a certified
// merge leaves a claim beside each shard's manifest).
package shard
