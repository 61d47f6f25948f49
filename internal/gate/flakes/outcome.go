package flakes

import (
	"context"
	"time"
)

// Schema is the "schema" of an outcome line.
const Schema = "contested/outcome@1"

// Outcome is one test's (or subtest's) result in one run. It holds no
// payload and no secret: names, a verdict, a seed, a duration, a commit.
type Outcome struct {
	Schema string    `json:"schema"`
	Time   time.Time `json:"time"`
	RunID  string    `json:"run_id"`
	// Shard is "I/N" when the run was one shard of a split battery.
	Shard string `json:"shard,omitempty"`
	// Commit is the module's commit (git rev-parse HEAD), when known.
	Commit string `json:"commit,omitempty"`
	// Dirty says the work tree had changes Commit does not hold (git
	// status was not clean), and Diff is a digest of them (git diff HEAD),
	// so that a failure is never pinned on a commit that does not hold the
	// code that failed.
	Dirty bool   `json:"dirty,omitempty"`
	Diff  string `json:"diff,omitempty"`
	// Command is the target that ran the test: validate, contested or
	// arbitrate.
	Command string `json:"command"`
	Package string `json:"package"`
	// Test is the test's name as go test prints it: TestX or TestX/leg.
	Test string `json:"test"`
	// Surface, Leg and Seed are the fault leg the test armed, from its
	// records, when it armed one.
	Surface string `json:"surface,omitempty"`
	Leg     string `json:"leg,omitempty"`
	Seed    int64  `json:"seed,omitempty"`
	// Verdict is go test's: pass, fail or skip.
	Verdict  string        `json:"verdict"`
	Duration time.Duration `json:"duration_ns"`
}

// Failed reports whether the outcome is a failure.
func (o Outcome) Failed() bool { return o.Verdict == "fail" }

// Store keeps outcomes: appended, never rewritten.
type Store interface {
	// Append adds outcomes, all or none.
	Append(ctx context.Context, outs []Outcome) error
	// Read returns every outcome, oldest first.
	Read(ctx context.Context) ([]Outcome, error)
}
