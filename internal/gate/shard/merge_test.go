package shard

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/faultdir"
	"github.com/contested/contested/internal/gate"
	"github.com/contested/contested/internal/gotest"
)

// fixtureInventory is the module the fixture shards split: the contract
// test writes the records.
var fixtureInventory = []gotest.Package{
	{ImportPath: "example.com/m", Tests: []string{"TestContract", "TestGuard", "TestPlain"}},
}

// shardDir writes what validate -shard=i/total writes into base/name:
// a stamp, then a record per leg of each owned contract test, then
// validate.json and shard.json, and returns the directory.
func shardDir(t *testing.T, base, name, shared string, spec Spec) string {
	t.Helper()
	dir := filepath.Join(base, name)
	plan := Split(fixtureInventory, spec.Total, nil)
	runID := RunID(shared, spec)
	fault := faultdir.Of(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := gate.WriteStamp(fault, runID); err != nil {
		t.Fatal(err)
	}
	st, err := ReadStamp(fault)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // records postdate the stamp on a coarse file-system clock
	rec, err := faultrecord.NewRecorder("example.com/m", faultrecord.WithResultsDir(dir), faultrecord.WithRunID(runID))
	if err != nil {
		t.Fatal(err)
	}
	res := &battery.Result{Packages: []battery.Package{{Name: "example.com/m", Action: "pass"}}, Started: time.Now()}
	owned := plan.Of(spec)
	for _, o := range owned {
		for _, test := range o.Tests {
			res.Tests = append(res.Tests, battery.Test{Package: o.Package, Name: test, Action: "pass", Elapsed: time.Second})
			if test != "TestContract" {
				continue
			}
			for _, leg := range []string{"reset", "burst"} {
				now := time.Now()
				if _, err := rec.Write(faultrecord.Record{Test: test + "/" + leg, Surface: "m.store", Class: "store", Leg: leg, Seed: 1,
					Armed: true, ArmedAt: now, Fired: true, FiredAt: now, Evidence: faultrecord.Evidence{Injector: "i", Victim: "v"}}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	root, err := atomicfile.MakeRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := root.WriteJSON("validate.json", map[string]any{"battery": res}); err != nil {
		t.Fatal(err)
	}
	files, err := ReadRecordFiles(fault)
	if err != nil {
		t.Fatal(err)
	}
	digests, all := Digests(files)
	m := Manifest{Shard: spec, SharedRunID: shared, SharedRunIDFrom: "test", RunID: runID, Module: "example.com/m",
		Plan: PlanRef{Digest: plan.Digest}, Owned: owned, Stamp: st, Certified: true, BatteryOK: true,
		Battery: BatteryDigest(res), Records: len(files), Digest: all, Files: digests, WrittenAt: time.Now()}
	if err := WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	return dir
}

// threeShards writes shards 1/3, 2/3 and 3/3 of run "run-1".
func threeShards(t *testing.T) (base string, dirs []string) {
	base = t.TempDir()
	for i := 1; i <= 3; i++ {
		dirs = append(dirs, shardDir(t, base, "shard-"+string(rune('0'+i)), "run-1", Spec{Index: i, Total: 3}))
	}
	return base, dirs
}

func mergeOpts(t *testing.T, dirs []string) MergeOptions {
	return MergeOptions{Dirs: dirs, ResultsDir: filepath.Join(t.TempDir(), "merged"), Inventory: fixtureInventory,
		Gate: gate.Options{RecordingClasses: []string{"store"}}}
}

func TestMergeCertifiesTheUnion(t *testing.T) {
	_, dirs := threeShards(t)
	before := snapshot(t, dirs)
	opts := mergeOpts(t, dirs)
	res, err := Merge(context.Background(), opts)
	if err != nil || !res.Certified || res.Union == nil || !res.Union.Certified || !res.Union.StampConsumed {
		t.Fatalf("merge of three good shards: %v; refusals %v", err, res.Refusals)
	}
	if res.Union.Fired != 2 || res.Total != 3 || res.SharedRunID != "run-1" || len(res.Battery.Tests) != 3 {
		t.Errorf("union: fired %d, total %d, run %q, %d tests; want 2, 3, run-1, 3", res.Union.Fired, res.Total, res.SharedRunID, len(res.Battery.Tests))
	}
	// Nothing in a shard's directory changed; each got its claim.
	after := snapshot(t, dirs)
	for path, body := range before {
		if after[path] != body {
			t.Errorf("%s changed", path)
		}
		delete(after, path)
	}
	for path := range after {
		if filepath.Base(path) != ClaimName {
			t.Errorf("the merge wrote %s into a shard's directory", path)
		}
	}
	if len(after) != 3 {
		t.Errorf("claims written: %d, want 3", len(after))
	}

	// Single use: the same shards never certify twice.
	again, err := Merge(context.Background(), mergeOpts(t, dirs))
	if !errors.Is(err, ErrRefused) || again.Certified || countKind(again, Claimed) != 3 {
		t.Fatalf("second merge of the same shards: %v; refusals %v; want each refused as claimed", err, again.Refusals)
	}
}

// snapshot is every file under dirs and its content.
func snapshot(t *testing.T, dirs []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, d := range dirs {
		filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				b, _ := os.ReadFile(p)
				out[p] = string(b)
			}
			return nil
		})
	}
	return out
}

func countKind(res *Result, k Kind) int {
	n := 0
	for _, r := range res.Refusals {
		if r.Kind == k {
			n++
		}
	}
	return n
}

// contractShard is the index of the shard that owns TestContract (whose
// records the fixture writes) in a 3-way split.
func contractShard() int {
	p := Split(fixtureInventory, 3, nil)
	for i, share := range p.Shards {
		for _, o := range share {
			for _, t := range o.Tests {
				if t == "TestContract" {
					return i
				}
			}
		}
	}
	return -1
}

func firstRecord(t *testing.T, dir string) string {
	t.Helper()
	files, err := ReadRecordFiles(faultdir.Of(dir))
	if err != nil || len(files) == 0 {
		t.Fatalf("records of %s: %v, %d", dir, err, len(files))
	}
	return filepath.Join(faultdir.Of(dir), files[0].Name)
}

func editJSON(t *testing.T, path, from, to string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), from) {
		t.Fatalf("%s holds no %q", path, from)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), from, to, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestMergeRefusesAndNamesTheShard(t *testing.T) {
	c := contractShard()
	for _, tc := range []struct {
		name   string
		poison func(t *testing.T, base string, dirs []string) []string
		kind   Kind
		shard  string // the shard the refusal must name ("" for any)
		says   string // part of the refusal's detail
	}{
		{name: "a shard missing", kind: Missing, shard: "3/3",
			poison: func(t *testing.T, base string, dirs []string) []string { return dirs[:2] }},
		{name: "a shard run twice", kind: Duplicate, shard: "2/3",
			poison: func(t *testing.T, base string, dirs []string) []string {
				return append(dirs, shardDir(t, base, "shard-2-again", "run-1", Spec{Index: 2, Total: 3}))
			}},
		{name: "a shard of another run", kind: Foreign, shard: "2/3",
			poison: func(t *testing.T, base string, dirs []string) []string {
				return []string{dirs[0], shardDir(t, base, "other", "run-2", Spec{Index: 2, Total: 3}), dirs[2]}
			}},
		{name: "a shard split another way", kind: Foreign, shard: "1/3",
			poison: func(t *testing.T, base string, dirs []string) []string {
				editJSON(t, filepath.Join(dirs[0], ManifestName), `"digest": "sha256:`, `"digest": "sha256:0`)
				return dirs
			}},
		{name: "a shard of another count", kind: Foreign, shard: "1/4",
			poison: func(t *testing.T, base string, dirs []string) []string {
				return append(dirs[1:], shardDir(t, base, "four", "run-1", Spec{Index: 1, Total: 4}))
			}},
		{name: "a record edited after its manifest", kind: Tampered, shard: Spec{c + 1, 3}.String(), says: "changed after its manifest",
			poison: func(t *testing.T, base string, dirs []string) []string {
				editJSON(t, firstRecord(t, dirs[c]), `"fired": true`, `"fired": false`)
				return dirs
			}},
		{name: "a record added after its manifest", kind: Tampered, shard: "1/3", says: "extra.json",
			poison: func(t *testing.T, base string, dirs []string) []string {
				b, _ := os.ReadFile(firstRecord(t, dirs[c]))
				os.WriteFile(filepath.Join(faultdir.Of(dirs[0]), "extra.json"), b, 0o644)
				return dirs
			}},
		{name: "a record removed after its manifest", kind: Tampered, shard: Spec{c + 1, 3}.String(), says: "are gone",
			poison: func(t *testing.T, base string, dirs []string) []string {
				os.Rename(firstRecord(t, dirs[c]), filepath.Join(t.TempDir(), "gone.json"))
				return dirs
			}},
		{name: "test outcomes edited after the manifest", kind: Tampered, shard: "2/3",
			poison: func(t *testing.T, base string, dirs []string) []string {
				editJSON(t, filepath.Join(dirs[1], "validate.json"), `"action": "pass"`, `"action": "fail"`)
				return dirs
			}},
		{name: "a record older than its stamp", kind: Stale, shard: Spec{c + 1, 3}.String(),
			poison: func(t *testing.T, base string, dirs []string) []string {
				old := time.Now().Add(-time.Hour)
				os.Chtimes(firstRecord(t, dirs[c]), old, old)
				return dirs
			}},
		{name: "a shard its own verification refused", kind: Uncertified, shard: "3/3",
			poison: func(t *testing.T, base string, dirs []string) []string {
				editJSON(t, filepath.Join(dirs[2], ManifestName), `"certified": true`, `"certified": false`)
				return dirs
			}},
		{name: "a test owned twice", kind: Ownership, shard: "",
			poison: func(t *testing.T, base string, dirs []string) []string {
				m, _ := ReadManifest(dirs[1])
				other, _ := ReadManifest(dirs[0])
				m.Owned = append(m.Owned, other.Owned...)
				WriteManifest(dirs[1], *m)
				return dirs
			}},
		{name: "a test owned by no shard", kind: Ownership, shard: "",
			poison: func(t *testing.T, base string, dirs []string) []string {
				m, _ := ReadManifest(dirs[1])
				m.Owned = []Owned{}
				WriteManifest(dirs[1], *m)
				return dirs
			}},
		{name: "a manifest that does not parse", kind: Tampered, shard: "",
			poison: func(t *testing.T, base string, dirs []string) []string {
				os.WriteFile(filepath.Join(dirs[1], ManifestName), []byte("{"), 0o644)
				return dirs
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, dirs := threeShards(t)
			dirs = tc.poison(t, base, dirs)
			before := snapshot(t, dirs)
			res, err := Merge(context.Background(), mergeOpts(t, dirs))
			if !errors.Is(err, ErrRefused) || res == nil || res.Certified {
				t.Fatalf("merge: %v; want refused", err)
			}
			found := false
			for _, r := range res.Refusals {
				found = found || r.Kind == tc.kind && (tc.shard == "" || r.Shard == tc.shard) && strings.Contains(r.Detail, tc.says)
			}
			if !found {
				t.Fatalf("refusals %v; want one of kind %s naming shard %q and saying %q", res.Refusals, tc.kind, tc.shard, tc.says)
			}
			if !strings.Contains(err.Error(), string(tc.kind)) {
				t.Errorf("the error does not say %s: %v", tc.kind, err)
			}
			if res.Union != nil || len(res.Claimed) != 0 {
				t.Errorf("a refused merge verified the union or claimed shards: %v", res.Claimed)
			}
			if after := snapshot(t, dirs); len(after) != len(before) {
				t.Errorf("a refused merge changed the shards' directories: %d files, were %d", len(after), len(before))
			}
		})
	}
}

func TestMergeBadInput(t *testing.T) {
	_, dirs := threeShards(t)
	for _, tc := range []struct {
		name string
		opts func(MergeOptions) MergeOptions
	}{
		{"no directory", func(o MergeOptions) MergeOptions { o.Dirs = nil; return o }},
		{"no such directory", func(o MergeOptions) MergeOptions { o.Dirs = append(o.Dirs, "/nonexistent/shard"); return o }},
		{"not a shard's directory", func(o MergeOptions) MergeOptions { o.Dirs = append(o.Dirs, t.TempDir()); return o }},
		{"one directory twice", func(o MergeOptions) MergeOptions { o.Dirs = append(o.Dirs, o.Dirs[0]); return o }},
		{"the merge's own directory", func(o MergeOptions) MergeOptions { o.ResultsDir = o.Dirs[0]; return o }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := snapshot(t, dirs)
			_, err := Merge(context.Background(), tc.opts(mergeOpts(t, dirs)))
			if !errors.Is(err, ErrBadInput) {
				t.Fatalf("merge: %v; want ErrBadInput", err)
			}
			if after := snapshot(t, dirs); len(after) != len(before) {
				t.Errorf("bad input changed the shards' directories")
			}
		})
	}
}
