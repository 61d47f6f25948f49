package command

import (
	"bytes"
	"strings"
	"testing"

	"github.com/fatih/color"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gate/verdict"
	"github.com/contested/contested/internal/registry"
)

// TestTheSummarySaysWhenSeedsRanOneSchedule: a leg whose three seeds all
// ran one schedule (their records carry one digest: a test that times a
// lever without parameters by itself) is printed INCONCLUSIVE, never
// PASS-hardening, with the reason that the schedule is not seeded and what
// to do, and its coverage line counts one distinct schedule; the same
// evidence over three schedules is PASS-hardening.
func TestTheSummarySaysWhenSeedsRanOneSchedule(t *testing.T) {
	noColor := color.NoColor
	color.NoColor = true
	t.Cleanup(func() { color.NoColor = noColor })
	s := registry.Surface{ID: "m.pool", Class: "store", Owner: "pool-team", Behavior: "b", Oracle: "no-lost-ack",
		Package: "./pool", Legs: []string{"disconnect"}, Tests: []string{"TestPool"},
		Budget: registry.Budget{Hardening: registry.Tier{Seeds: 3}}}
	tests := []struct {
		name    string
		digests []string
		says    []string
		never   string
	}{
		{"one schedule", []string{"d1", "d1", "d1"}, []string{
			"INCONCLUSIVE-oracle-too-weak",
			"3 seeds ran one schedule (d1): the schedule is not seeded",
			"drive the workload through leg.Step",
			"contract: INCONCLUSIVE",
			"6 occurrences over 3 seeds, 1 distinct schedules",
		}, "PASS-hardening"},
		{"three schedules", []string{"d1", "d2", "d3"}, []string{
			"PASS-hardening", "3 distinct schedules", "contract: GREEN",
		}, "not seeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var runs []contract.SeedRun
			for i, d := range tt.digests {
				seed := int64(i + 1)
				run := contract.SeedRun{Seed: seed, Passed: true, Ran: []string{"TestPool/disconnect"}, Failures: map[string]string{}}
				for w := range 2 {
					run.Records = append(run.Records, faultrecord.Record{Test: "TestPool/disconnect", Package: "example.com/m/pool",
						Surface: s.ID, Class: s.Class, Leg: "disconnect", Seed: seed, Armed: true, Fired: true,
						Oracles:  []faultrecord.OracleRun{{Name: "no-lost-ack", OpsProduced: 10, OpsChecked: 10, Result: "held"}},
						Schedule: &faultrecord.Schedule{Digest: d, Summary: "disconnect level 1: #1 armed by the test", Window: w + 1, Timing: "test"}})
				}
				runs = append(runs, run)
			}
			legs, c := contract.Judge(s, contract.Evidence{Level: 1, Runs: runs})
			var out bytes.Buffer
			WriteContractSummary(&out, &contract.Result{Surface: s.ID, Behavior: s.Behavior, Oracle: s.Oracle, Level: 1,
				Contract: c, Legs: legs, Seeds: runs})
			for _, want := range tt.says {
				if !strings.Contains(out.String(), want) {
					t.Errorf("the summary does not say %q:\n%s", want, out.String())
				}
			}
			if strings.Contains(out.String(), tt.never) {
				t.Errorf("the summary says %q:\n%s", tt.never, out.String())
			}
		})
	}
}

// TestTheSummarySaysWhichLandingEvidenceIsMissing: a leg that armed a
// fault prints each side's landing evidence, or that it is missing, and
// never an empty "victim:" line; a leg that armed nothing prints neither.
func TestTheSummarySaysWhichLandingEvidenceIsMissing(t *testing.T) {
	tests := []struct {
		name        string
		leg         verdict.Leg
		says, never []string
	}{
		{"an injector without a victim", verdict.Leg{Lever: "reset", Verdict: verdict.FailReproducible, Armed: 1, Injector: "toxic read back"},
			[]string{"injector: toxic read back\n", "victim: missing: "}, []string{"victim:   \n", "victim: \n"}},
		{"a victim without an injector", verdict.Leg{Lever: "reset", Verdict: verdict.FailReproducible, Armed: 1, Victim: "ECONNRESET"},
			[]string{"injector: missing: ", "victim: ECONNRESET\n"}, nil},
		{"a leg that armed nothing", verdict.Leg{Lever: "reset", Verdict: verdict.NotRun},
			nil, []string{"injector", "victim"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			WriteContractSummary(&out, &contract.Result{Surface: "m.pool", Legs: []verdict.Leg{tt.leg}})
			for _, w := range tt.says {
				if !strings.Contains(out.String(), w) {
					t.Errorf("the summary does not say %q:\n%s", w, out.String())
				}
			}
			for _, n := range tt.never {
				if strings.Contains(out.String(), n) {
					t.Errorf("the summary says %q:\n%s", n, out.String())
				}
			}
		})
	}
}
