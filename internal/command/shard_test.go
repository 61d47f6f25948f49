package command

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/gate/flakes"
	"github.com/contested/contested/internal/rundir"
)

// TestValidateShardOnBadInput: a shard named by anything but I/N, a flag
// and a variable that disagree, or -shard with a selection of the battery
// exit 2 saying what to write, before the layer is touched or anything is
// written under the results directory.
func TestValidateShardOnBadInput(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  string // CONTESTED_SHARD; "-" leaves it unset
		opts ValidateOptions
		says string
	}{
		{"flag without /", "-", ValidateOptions{Shard: "3", ShardSet: true}, "-shard=2/3"},
		{"flag past the count", "-", ValidateOptions{Shard: "4/3", ShardSet: true}, "past the count"},
		{"empty flag", "-", ValidateOptions{Shard: "", ShardSet: true}, "-shard is empty"},
		{"variable zero", "0/3", ValidateOptions{}, "CONTESTED_SHARD=2/3"},
		{"variable set but empty", "", ValidateOptions{}, "set but empty"},
		{"flag and variable disagree", "1/3", ValidateOptions{Shard: "2/3", ShardSet: true}, "disagree"},
		{"a selection", "-", ValidateOptions{Shard: "1/2", ShardSet: true, Args: []string{"-run", "TestX"}}, "its share of the whole battery"},
		{"a shared run id too long for a tag", "1/2", ValidateOptions{}, "at most 38"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := module(t)
			w := watchLayer(t)
			results := t.TempDir()
			t.Setenv(envvar.ToxiproxyURL, w.toxiproxy)
			t.Setenv(envvar.PostgresDSN, w.postgres)
			t.Setenv(envvar.Layer, "external")
			t.Setenv(envvar.ResultsDir, results)
			t.Setenv(envvar.Surfaces, "")
			t.Setenv(envvar.RunID, "")
			os.Unsetenv(envvar.RunID)
			if strings.Contains(tt.name, "too long") {
				t.Setenv(envvar.RunID, strings.Repeat("r", 40))
			}
			t.Setenv(envvar.Shard, tt.env)
			if tt.env == "-" {
				os.Unsetenv(envvar.Shard)
			}
			var out strings.Builder
			tt.opts.Dir, tt.opts.Out = dir, &out
			err := Validate(context.Background(), tt.opts)
			if got := ExitCode(err); got != ExitUsage || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("exit %d (%v), want %d saying %q; output:\n%s", got, err, ExitUsage, tt.says, out.String())
			}
			if n := w.contacts.Load(); n != 0 {
				t.Errorf("the layer was contacted %d times", n)
			}
			if entries, _ := os.ReadDir(results); len(entries) != 0 {
				t.Errorf("bad input wrote into the results directory: %d entries", len(entries))
			}
		})
	}
}

// TestProgramGateMergeOnBadInput: -merge with no directory, or with one
// that is not a shard's, exits 2 and writes nothing.
func TestProgramGateMergeOnBadInput(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts ProgramGateOptions
		says string
	}{
		{"no directory", ProgramGateOptions{MergeSet: true}, "needs the shards' directories"},
		{"no such directory", ProgramGateOptions{Merge: []string{"/no/such/shard"}}, "/no/such/shard"},
		{"not a shard's directory", ProgramGateOptions{Merge: []string{os.TempDir()}}, "holds no shard.json"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := module(t)
			results := t.TempDir()
			t.Setenv(envvar.ResultsDir, results)
			t.Setenv(envvar.Surfaces, "")
			var out strings.Builder
			tt.opts.Dir, tt.opts.Out = dir, &out
			err := ProgramGate(context.Background(), tt.opts)
			if got := ExitCode(err); got != ExitUsage || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("exit %d (%v), want %d saying %q; output:\n%s", got, err, ExitUsage, tt.says, out.String())
			}
			if entries, _ := os.ReadDir(results); len(entries) != 0 {
				t.Errorf("bad input wrote into the results directory: %d entries", len(entries))
			}
		})
	}
}

// TestHistoryPrintsTheTrend: history reads the outcomes validate appended
// and prints a test's flake rate, first failing commit and failing seeds:
// a leg's own, when it names one.
func TestHistoryPrintsTheTrend(t *testing.T) {
	dir := module(t)
	results := rundir.Dir(t.TempDir())
	t.Setenv(envvar.ResultsDir, results.String())
	t.Setenv(envvar.Surfaces, "")
	var out strings.Builder
	if err := History(context.Background(), HistoryOptions{Dir: dir, Out: &out}); err != nil || !strings.Contains(out.String(), "no runs recorded yet") {
		t.Fatalf("empty history: %v\n%s", err, out.String())
	}
	for i, verdict := range []string{"pass", "fail", "pass", "fail"} {
		res := &battery.Result{Tests: []battery.Test{{Package: "m", Name: "TestLeg", Action: verdict}, {Package: "m", Name: "TestLeg/reset", Action: verdict}}}
		recs := []faultrecord.Record{{Package: "m", Test: "TestLeg/reset", Leg: "reset", Seed: int64(40 + i)}}
		appendHistory(context.Background(), rundir.Dir(results), nil, "validate", fmt.Sprintf("run-%d", i), "", res, recs, flakes.Revision{Commit: []string{"commit0", "commit1", "commit1", "commit1"}[i]}, &out)
	}
	out.Reset()
	if err := History(context.Background(), HistoryOptions{Dir: dir, Test: "TestLeg/reset", Out: &out}); err != nil {
		t.Fatal(err)
	}
	// It failed and passed at commit1: flaky there (a failure at one
	// commit and a pass at another would not be).
	for _, want := range []string{"TestLeg/reset failed 2 of the last 4 runs (50%): flaky (failed and passed at commit commit1)", "commit commit1", "seeds that failed: 41, 43", ".F.F", "history.html"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("history does not say %q:\n%s", want, out.String())
		}
	}
	if page, err := os.ReadFile(results.Join("history", "history.html")); err != nil || !strings.Contains(string(page), "<svg") {
		t.Errorf("no trend drawn: %v", err)
	}
	out.Reset()
	if err := History(context.Background(), HistoryOptions{Dir: dir, Last: 1, Out: &out}); err != nil || !strings.Contains(out.String(), "failed 1 of the last 1 runs") {
		t.Errorf("every failing test over the last run: %v\n%s", err, out.String())
	}
}

// TestHistoryDSNOnBadInput: a history database the registry's guard lists,
// or a DSN that does not parse, exits 2 without the password.
func TestHistoryDSNOnBadInput(t *testing.T) {
	for _, tt := range []struct{ name, dsn, says string }{
		{"a canonical database", "postgres://u:hunter2@127.0.0.1:1/stock", "canonical_databases"},
		{"a DSN that does not parse", "postgres://u:hunter2@127.0.0.1:port/db", envvar.HistoryDSN},
		{"a canonical database named by its user alone", "postgres://stock:hunter2@127.0.0.1:1", "canonical_databases"},
		{"a canonical database in another case", "postgres://u:hunter2@127.0.0.1:1/STOCK", "canonical_databases"},
		{"a DSN with no password field any form recognizes", "hunter2-is-no-dsn", envvar.HistoryDSN},
		{"a URL without its colon", "postgres//u:hunter2@127.0.0.1/db", envvar.HistoryDSN},
		{"a keyword/value DSN that does not parse", "host=127.0.0.1 password='hunter2", envvar.HistoryDSN},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := module(t)
			os.WriteFile(dir+"/contested-surfaces.toml", append(mustRead(t, dir+"/contested-surfaces.toml"), []byte("\n[guard]\ncanonical_databases = [\"stock\"]\n")...), 0o644)
			t.Setenv(envvar.ResultsDir, t.TempDir())
			t.Setenv(envvar.Surfaces, "")
			t.Setenv(envvar.HistoryDSN, tt.dsn)
			var out strings.Builder
			err := History(context.Background(), HistoryOptions{Dir: dir, Out: &out})
			if got := ExitCode(err); got != ExitUsage || !strings.Contains(err.Error(), tt.says) || strings.Contains(err.Error()+out.String(), "hunter2") {
				t.Fatalf("exit %d (%v), want %d saying %q, no password", got, err, ExitUsage, tt.says)
			}
		})
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
