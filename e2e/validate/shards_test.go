package validate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contested/contested/e2e/internal/e2etest"
	"github.com/contested/contested/internal/faultdir"
	"github.com/contested/contested/internal/gate/flakes"
	"github.com/contested/contested/internal/gate/shard"
)

// TestAdopterShardsMergeAsOneRun runs the adopter's battery as three
// local shards and merges them GREEN with program-gate -merge, after the
// poisoned variants are refused with the shard named: a shard missing, a
// shard run twice, a record edited after its shard's manifest. A second
// merge of the same shards is refused too: a shard certifies once.
func TestAdopterShardsMergeAsOneRun(t *testing.T) {
	t.Parallel()
	dir := e2etest.Adopter(t, nil)
	shards := filepath.Join(t.TempDir(), "shards")
	run := func(name, spec string) string {
		t.Helper()
		results := filepath.Join(shards, name)
		env := []string{"CONTESTED_RUN_ID=e2e-shards", "CONTESTED_RESULTS_DIR=" + results}
		out, code := e2etest.Mage(t, dir, env, "validate", "-shard", spec)
		if code != 0 || !strings.Contains(out, "validate: GREEN") || !strings.Contains(out, "shard "+spec+" of run e2e-shards") {
			t.Fatalf("validate -shard %s: exit %d, want 0 and GREEN:\n%s", spec, code, out)
		}
		m, err := shard.ReadManifest(results)
		if err != nil {
			t.Fatal(err)
		}
		if m.Shard.String() != spec || m.SharedRunID != "e2e-shards" || !m.Certified || m.Records != len(m.Files) {
			t.Fatalf("shard.json of %s: %+v", spec, m)
		}
		return results
	}
	s1, s2, s3 := run("1", "1/3"), run("2", "2/3"), run("3", "3/3")
	twice := run("2-again", "2/3")

	// The shard that owns the contract test holds its records; the others
	// hold none and still certified alone (phases 4 and 5 are the union's).
	var withRecords string
	total := 0
	for _, d := range []string{s1, s2, s3} {
		m, _ := shard.ReadManifest(d)
		total += m.Records
		if m.Records > 0 {
			withRecords = d
		}
	}
	if withRecords == "" {
		t.Fatal("no shard holds a record: the contract test ran nowhere")
	}

	refused := func(what string, dirs []string, says ...string) {
		t.Helper()
		out, code := e2etest.Mage(t, dir, nil, append([]string{"program-gate", "-merge"}, dirs...)...)
		if code != 1 {
			t.Fatalf("%s: program-gate -merge exit %d, want 1:\n%s", what, code, out)
		}
		for _, s := range says {
			if !strings.Contains(out, s) {
				t.Errorf("%s: the refusal does not say %q:\n%s", what, s, out)
			}
		}
	}
	refused("a shard missing", []string{s1, s2}, "shard 3/3: missing")
	refused("a shard run twice", []string{s1, s2, twice, s3}, "shard 2/3 ("+s2+"): duplicate", "shard 2/3 ("+twice+"): duplicate")

	// A record edited after its manifest, in a copy of the shards.
	copies := filepath.Join(t.TempDir(), "copies")
	var copied []string
	var edited string
	for i, d := range []string{s1, s2, s3} {
		c := filepath.Join(copies, string(rune('1'+i)))
		e2etest.CopyTree(t, d, c)
		copied = append(copied, c)
		if d == withRecords {
			edited = c
		}
	}
	m, _ := shard.ReadManifest(edited)
	rec := filepath.Join(faultdir.Of(edited), m.Files[0].Name)
	b, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rec, []byte(strings.Replace(string(b), `"fired": true`, `"fired": false`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	refused("a record edited after its manifest", copied, "shard "+m.Shard.String()+" ("+edited+"): tampered", m.Files[0].Name)

	// The good shards merge GREEN, as a user types it.
	out, code := e2etest.GoToolMage(t, dir, nil, "program-gate", "-merge", s1, s2, s3)
	if code != 0 || !strings.Contains(out, "CERTIFIED") || !strings.Contains(out, "program-gate -merge: GREEN") {
		t.Fatalf("program-gate -merge of three good shards: exit %d, want 0 and GREEN:\n%s", code, out)
	}
	r := e2etest.ReadReport(t, dir)
	if !r.Certified || !r.StampConsumed || r.RecordsRead != total || r.Fired == 0 {
		t.Errorf("union report: certified %v, stamp consumed %v, %d records (shards kept %d), fired %d", r.Certified, r.StampConsumed, r.RecordsRead, total, r.Fired)
	}
	if len(r.Surfaces) != 1 || r.Surfaces[0].Verdict != "GREEN" {
		t.Errorf("union surfaces %+v; want adopter.stock GREEN", r.Surfaces)
	}
	if _, err := os.Stat(filepath.Join(dir, "test-results", shard.TimingsFile)); err != nil {
		t.Errorf("the merge wrote no timing file for the next split: %v", err)
	}
	// Each shard appended its tests' outcomes to its flake history.
	hist, err := flakes.NewFile(s1).Read(context.Background())
	if err != nil || len(hist) == 0 || hist[0].Shard != "1/3" || hist[0].RunID == "" {
		t.Errorf("shard 1's flake history: %d outcomes, %v; want its tests, marked 1/3", len(hist), err)
	}
	// Single use: the same shards do not certify again.
	refused("the same shards merged again", []string{s1, s2, s3}, "claimed")
}
