package shard

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/faultdir"
	"github.com/contested/contested/internal/gotest"
)

// checkAgreement finds the shard count, shared run id, module and split
// most shards agree on, and refuses the shards that disagree as foreign
// (all of them when no value has a majority).
func checkAgreement(shards []*loaded, res *Result) (int, string) {
	for _, s := range shards {
		if s.foreign {
			res.Refusals = append(res.Refusals, Refusal{Kind: Tampered, Dir: s.dir, Detail: unreadManifest(s.unread)})
		}
	}
	type field struct {
		what string
		of   func(*Manifest) string
	}
	fields := []field{
		{"shard count", func(m *Manifest) string { return fmt.Sprint(m.Shard.Total) }},
		{"shared run id", func(m *Manifest) string { return m.SharedRunID }},
		{"module", func(m *Manifest) string { return m.Module }},
		{"split", func(m *Manifest) string { return m.Plan.Digest }},
	}
	var total int
	var shared string
	for _, f := range fields {
		counts := map[string]int{}
		for _, s := range shards {
			if !s.foreign {
				counts[f.of(s.m)]++
			}
		}
		best := majority(counts)
		for _, s := range shards {
			if s.foreign || f.of(s.m) == best {
				continue
			}
			s.foreign = true
			detail := fmt.Sprintf("its %s is %q", f.what, f.of(s.m))
			if best != "" {
				detail += fmt.Sprintf(", the other shards' %q", best)
			} else {
				detail += ": the shards disagree and no value is shared by most"
			}
			if f.what == "split" {
				detail += " (another commit's tests, or another timing file: every shard must split the same inventory with the same timings)"
			} else {
				detail += ": a shard of another run"
			}
			res.Refusals = append(res.Refusals, Refusal{Kind: Foreign, Shard: s.m.Shard.String(), Dir: s.dir, Detail: detail})
		}
		switch f.what {
		case "shard count":
			fmt.Sscan(best, &total)
		case "shared run id":
			shared = best
		}
	}
	return total, shared
}

// checkCoverage refuses every shard index of 1..total that no directory
// holds (missing) and every one two directories hold (duplicate).
func checkCoverage(shards []*loaded, total int, res *Result) {
	if total < 1 {
		return
	}
	by := map[int][]*loaded{}
	for _, s := range shards {
		if !s.foreign {
			by[s.m.Shard.Index] = append(by[s.m.Shard.Index], s)
		}
	}
	for i := 1; i <= total; i++ {
		spec := Spec{Index: i, Total: total}.String()
		switch got := by[i]; {
		case len(got) == 0:
			res.Refusals = append(res.Refusals, Refusal{Kind: Missing, Shard: spec, Detail: fmt.Sprintf("no directory holds shard %s: download every shard's results (or rerun the missing one)", spec)})
		case len(got) > 1:
			var dirs []string
			for _, s := range got {
				dirs = append(dirs, s.dir)
			}
			for _, s := range got {
				res.Refusals = append(res.Refusals, Refusal{Kind: Duplicate, Shard: spec, Dir: s.dir,
					Detail: fmt.Sprintf("shard %s is given %d times (%s): a shard run twice; merge one run of it", spec, len(got), strings.Join(dirs, ", "))})
				s.foreign = true
			}
		}
	}
}

// checkShard checks one shard's own evidence: it certified alone, was not
// merged before, and its records are the ones its manifest digested, each
// postdating its stamp, of its run, and of a test it owned.
func checkShard(s *loaded, res *Result) {
	m, spec := s.m, s.m.Shard.String()
	refuse := func(k Kind, format string, args ...any) {
		res.Refusals = append(res.Refusals, Refusal{Kind: k, Shard: spec, Dir: s.dir, Detail: fmt.Sprintf(format, args...)})
	}
	if !m.Certified {
		refuse(Uncertified, "its own verification refused it (see its fault/fault-report.json): rerun the shard")
	}
	if b, err := readClaim(s.dir); err == nil {
		var c claimFile
		_ = json.Unmarshal(b, &c)
		refuse(Claimed, "already certified by a merge at %s: a shard certifies once; rerun the shards for a new union", c.MergedAt.Format(time.RFC3339))
	} else if !errors.Is(err, fs.ErrNotExist) {
		refuse(Claimed, "%s is there and is not a merge's claim (%v): a shard certifies once; rerun the shards for a new union", ClaimName, err)
	}
	files, err := ReadRecordFiles(faultdir.Of(s.dir))
	if err != nil {
		refuse(Tampered, "%v", err)
		return
	}
	want := map[string]string{}
	for _, f := range m.Files {
		want[f.Name] = f.SHA256
	}
	digests, all := Digests(files)
	var changed, added, removed []string
	have := map[string]bool{}
	for _, f := range digests {
		have[f.Name] = true
		switch w, ok := want[f.Name]; {
		case !ok:
			added = append(added, f.Name)
		case w != f.SHA256:
			changed = append(changed, f.Name)
		}
	}
	for name := range want {
		if !have[name] {
			removed = append(removed, name)
		}
	}
	slices.Sort(removed)
	if len(changed) > 0 {
		refuse(Tampered, "%d record(s) changed after its manifest was written: %s", len(changed), some(changed))
	}
	if len(added) > 0 {
		refuse(Tampered, "%d record(s) not in its manifest (added after it was written): %s", len(added), some(added))
	}
	if len(removed) > 0 {
		refuse(Tampered, "%d record(s) of its manifest are gone: %s", len(removed), some(removed))
	}
	if len(changed)+len(added)+len(removed) == 0 && (all != m.Digest || len(files) != m.Records) {
		refuse(Tampered, "its records' digest %s (%d files) is not its manifest's %s (%d)", all, len(files), m.Digest, m.Records)
	}
	if b, err := readBattery(s.dir); err != nil {
		refuse(Tampered, "its test outcomes: %v", err)
	} else if d := BatteryDigest(b); d != m.Battery {
		refuse(Tampered, "its test outcomes in %s (%s) are not those its manifest digested (%s): edited after the shard ran", validateName, d, m.Battery)
	} else {
		s.battery = b
	}
	owned := map[string]bool{}
	for _, o := range m.Owned {
		for _, t := range o.Tests {
			owned[key(o.Package, t)] = true
		}
	}
	var stale, foreignRun, foreignTest []string
	for _, f := range files {
		var r faultrecord.Record
		if err := faultrecord.ParseRecordInto(f.Data, &r); err != nil {
			continue // phase 2 of the union names it
		}
		if !f.ModTime.After(m.Stamp.ModTime) || r.ArmedAt.Before(m.Stamp.WrittenAt) {
			stale = append(stale, f.Name)
		}
		if r.RunID != m.RunID && !strings.HasPrefix(r.RunID, m.RunID+"-") {
			foreignRun = append(foreignRun, fmt.Sprintf("%s (run %s)", f.Name, r.RunID))
		}
		top, _, _ := strings.Cut(r.Test, "/")
		if r.Package != "" && !owned[key(r.Package, top)] {
			foreignTest = append(foreignTest, fmt.Sprintf("%s (%s %s)", f.Name, r.Package, top))
		}
	}
	if len(stale) > 0 {
		refuse(Stale, "%d record(s) do not postdate its own stamp of %s: %s", len(stale), m.Stamp.WrittenAt.Format(time.RFC3339Nano), some(stale))
	}
	if len(foreignRun) > 0 {
		refuse(Foreign, "%d record(s) of another run than its own %s: %s", len(foreignRun), m.RunID, some(foreignRun))
	}
	if len(foreignTest) > 0 {
		refuse(Foreign, "%d record(s) of tests it did not own: %s", len(foreignTest), some(foreignTest))
	}
}

// checkOwnership refuses the merge unless every test of the inventory is
// owned by exactly one shard, and every owned test is in the inventory.
func checkOwnership(shards []*loaded, inv []gotest.Package, res *Result) {
	owners := map[string][]string{}
	for _, s := range shards {
		if s.foreign {
			continue
		}
		for _, o := range s.m.Owned {
			for _, t := range o.Tests {
				k := key(o.Package, t)
				owners[k] = append(owners[k], s.m.Shard.String())
			}
		}
	}
	var none []string
	known := map[string]bool{}
	for _, p := range inv {
		for _, t := range p.Tests {
			k := key(p.ImportPath, t)
			known[k] = true
			switch o := owners[k]; {
			case len(o) == 0:
				none = append(none, k)
			case len(o) > 1:
				res.Refusals = append(res.Refusals, Refusal{Kind: Ownership, Shard: strings.Join(o, ", "), Detail: fmt.Sprintf("%s is owned by %d shards", k, len(o))})
			}
		}
	}
	if len(none) > 0 && len(owners) > 0 {
		res.Refusals = append(res.Refusals, Refusal{Kind: Ownership, Detail: fmt.Sprintf("%d test(s) of the inventory are owned by no shard (a shard is missing or refused, or the shards ran another commit): %s", len(none), some(none))})
	}
	byShard := map[string][]string{}
	for k, o := range owners {
		if !known[k] {
			for _, s := range o {
				byShard[s] = append(byShard[s], k)
			}
		}
	}
	for _, s := range slices.Sorted(maps.Keys(byShard)) {
		slices.Sort(byShard[s])
		res.Refusals = append(res.Refusals, Refusal{Kind: Foreign, Shard: s, Detail: fmt.Sprintf("owns %d test(s) this checkout's inventory does not have (another commit?): %s", len(byShard[s]), some(byShard[s]))})
	}
}

// majority is the value most shards hold, "" when two values tie.
func majority(counts map[string]int) string {
	best, n, tie := "", 0, false
	for _, v := range slices.Sorted(maps.Keys(counts)) {
		switch c := counts[v]; {
		case c > n:
			best, n, tie = v, c, false
		case c == n:
			tie = true
		}
	}
	if tie {
		return ""
	}
	return best
}
